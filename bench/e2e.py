"""End to end as a user runs it: ``graphlabel ingest``, ``build-graph`` and ``label`` with
their defaults (harmonic with its noise flags, a 10-NN graph), each in a fresh process on
the embedded store, next to a plain script on the same file in the same run
(bench/_plain_script.py: faiss HNSW 10-NN, Gaussian weights, scikit-learn's LabelSpreading
α = 0.99). For each: wall time, peak resident memory, accuracy on the hidden labels; for
graphlabel also the seconds of every stage each command prints, and its noise flags
against the labels flipped on purpose.

    python -m bench e2e                          # 100k entities
    python -m bench e2e --full                   # 1M entities (issue 19's table)
    python -m bench e2e --sizes 10000000 --no-script   # 10M, graphlabel alone

Data (``labelled_entities``): scikit-learn's make_classification, 32 features of which 8
informative (one Gaussian cluster per class, mixed linearly into 32 as embeddings are), 10
classes, class_sep 1.5; 1% of the rows carry a given label, 10% of those flipped to another
class (seed 1). Written as one Parquet file; each command reads what the previous wrote.
The commands run as a newcomer runs them: no Prefect server configured (a fresh
PREFECT_HOME), progress lines on stderr (not a terminal). Peak memory is each process's
own maximum resident set (``os.wait4``). Single runs: the machine is shared, so the ratio
to the script, measured in the same run, is the figure to read.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import Report

DIMENSIONS = 32
CLASSES = 10
LABELED = 0.01
FLIPPED = 0.10
DATASET = "e2e"
#: A stage row of the time table each command prints.
STAGE_ROW = re.compile(r"│ ([a-z_]+)\s+│ ([0-9.]+)\s+│")


def features(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The entities' 32 features (float64) and their classes: 8 informative directions (one
    Gaussian cluster per class) mixed linearly into 32, what embeddings of real entities look
    like (scikit-learn's make_classification), not 32 independent ones; isotropic 32-d
    blobs are the hard case of approximate search, measured beside these in bench/knn_build.py."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n, n_features=DIMENSIONS, n_informative=8,
                               n_redundant=DIMENSIONS - 8, n_classes=CLASSES, n_clusters_per_class=1,
                               class_sep=1.5, flip_y=0.0, random_state=seed)
    return X.astype(np.float64), y


def entities(n: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """n entities with ``features(n, seed)`` and keys, 1% of them with their label given."""
    X, y = features(n, seed)
    rng = np.random.default_rng(seed)
    given = rng.random(n) < LABELED
    frame = pd.DataFrame(X, columns=[f"x{j:02d}" for j in range(DIMENSIONS)])
    frame.insert(0, "key", pd.array(np.char.add("e", np.arange(n).astype(str)), dtype="string"))
    frame.insert(1, "label", pd.array(np.where(given, np.char.add("c", y.astype(str)), None), dtype="string"))
    return frame, y


def labelled_entities(n: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """``entities(n)`` with ``FLIPPED`` of the given labels changed to another class:
    the frame, the true classes, and which rows were flipped."""
    frame, y = entities(n)
    rng = np.random.default_rng(1)
    given = frame["label"].notna().to_numpy()
    flipped = given & (rng.random(n) < FLIPPED)
    wrong = (y[flipped] + rng.integers(1, CLASSES, flipped.sum())) % CLASSES
    labels = frame["label"].to_numpy(dtype=object)
    labels[flipped] = np.char.add("c", wrong.astype(str))
    frame["label"] = pd.array(labels, dtype="string")
    return frame, y, flipped


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> dict:
    """Run one command; its wall seconds, peak resident MiB, exit code and output."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    return {"seconds": seconds, "peak MiB": usage.ru_maxrss / 1024, "exit": process.returncode,
            "stdout": stdout, "stderr": stderr}


def graphlabel_commands(data: Path, store: Path, dask: bool = False) -> list[tuple[str, list[str]]]:
    """The pipeline's three commands; with ``dask``, then a full relabel in one process and
    one with the solve on a local Dask cluster (one worker per core), to pair the two."""
    s = ["--store", str(store)]
    commands = [("ingest", ["ingest", str(data), "--dataset", DATASET, "--key", "key", "--features", "x*",
                            "--label", "label", *s]),
                ("build-graph", ["build-graph", "--dataset", DATASET, *s]),
                ("label", ["label", "--dataset", DATASET, *s])]
    if dask:
        commands += [("label --full", ["label", "--dataset", DATASET, "--full", *s]),
                     ("label --full --dask", ["label", "--dataset", DATASET, "--full", "--dask", *s])]
    return commands


#: The commands of the pipeline proper (the others are comparisons run after it).
PIPELINE = ("ingest", "build-graph", "label")


def run_size(n: int, folder: Path, script: bool, dask: bool = False) -> dict:
    frame, y, flipped = labelled_entities(n)
    data = folder / "entities.parquet"
    frame.to_parquet(data, index=False)
    truth = pd.Series(np.char.add("c", y.astype(str)), index=frame["key"].to_numpy())
    hidden = frame["label"].isna().to_numpy()
    env = {**os.environ, "PREFECT_HOME": str(folder / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    graphlabel = str(Path(sys.executable).with_name("graphlabel"))
    commands, stages = [], []
    for name, args in graphlabel_commands(data, folder / "store", dask):
        print(f"  {n:,}: graphlabel {name}...", flush=True)
        done = timed([graphlabel, *args], env, folder)
        if done["exit"] != 0:
            raise SystemExit(f"graphlabel {name} failed ({done['exit']}): {(done['stderr'] or done['stdout'])[-800:]}")
        commands.append({"command": f"graphlabel {name}", "seconds": done["seconds"], "peak MiB": done["peak MiB"],
                         "pipeline": name in PIPELINE})
        stages += [{"command": name, "stage": stage, "seconds": float(s)}
                   for stage, s in STAGE_ROW.findall(done["stdout"])]
    from graphstore import open_store

    with open_store(str(folder / "store")) as store:  # not timed: the answers, to score them
        written = store.read_export(DATASET).to_pandas()
    written = written.set_index("key")
    keys = frame["key"].to_numpy()
    predicted = written["predicted_label"].reindex(keys).to_numpy()
    noisy = written["label_noise"].reindex(keys).fillna(False).to_numpy(dtype=bool)
    result = {"n": n, "commands": commands, "stages": stages,
              "accuracy": float(np.mean(predicted[hidden] == truth.to_numpy()[hidden])),
              "flagged": int(noisy.sum()), "flags caught": int((noisy & flipped).sum()),
              "flipped": int(flipped.sum())}
    if script:
        print(f"  {n:,}: plain script...", flush=True)
        done = timed([sys.executable, str(Path(__file__).with_name("_plain_script.py")), str(data),
                      str(folder / "script.parquet")], env, folder)
        if done["exit"] != 0:
            raise SystemExit(f"the plain script failed: {done['stderr'][-800:]}")
        answers = pd.read_parquet(folder / "script.parquet").set_index("key")["predicted_label"].reindex(keys)
        result["script"] = {"seconds": done["seconds"], "peak MiB": done["peak MiB"], "steps": done["stderr"].strip(),
                            "accuracy": float(np.mean(answers.to_numpy()[hidden] == truth.to_numpy()[hidden]))}
    return result


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench e2e")
    parser.add_argument("--full", action="store_true", help="1M entities")
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")])
    parser.add_argument("--no-script", action="store_true", help="graphlabel alone (no plain script)")
    parser.add_argument("--name", help="results file name (default e2e, e2e_full with --full)")
    parser.add_argument("--dask", action="store_true", help="also relabel with the solve on a local Dask cluster"
                                                            " next to one in a single process")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([1_000_000] if args.full else [100_000])
    name = args.name or ("e2e_full" if args.full else "e2e")
    report = Report(name, "End to end with the defaults: graphlabel's CLI (ingest, build-graph, label; harmonic"
                          " with noise flags, 10-NN graph, embedded store) against a plain script (faiss HNSW"
                          " M=16 10-NN, Gaussian weights, LabelSpreading α=0.99) on the same Parquet file;"
                          " 32 features, 10 classes, 1% given labels of which 10% flipped")
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="graphlabel-e2e-") as tmp:
            run = run_size(n, Path(tmp), not args.no_script, args.dask)
        commands = pd.DataFrame(run["commands"])
        commands["MiB per million"] = commands["peak MiB"] / (n / 1e6)
        pipeline = commands[commands.pop("pipeline")]
        total = {"command": "graphlabel, all three", "seconds": pipeline["seconds"].sum(),
                 "peak MiB": pipeline["peak MiB"].max(), "MiB per million": pipeline["peak MiB"].max() / (n / 1e6)}
        rows = [*pipeline.to_dict("records"), total]
        if "script" in run:
            script = run["script"]
            rows.append({"command": "plain script", "seconds": script["seconds"], "peak MiB": script["peak MiB"],
                         "MiB per million": script["peak MiB"] / (n / 1e6)})
            rows.append({"command": "graphlabel ÷ script", "seconds": total["seconds"] / script["seconds"],
                         "peak MiB": total["peak MiB"] / script["peak MiB"]})
        report.table(f"{n:,} entities: each command (single run)", pd.DataFrame(rows), floatfmt=".2f")
        if args.dask:
            report.table(f"{n:,} entities: the solve in one process and on a local Dask cluster",
                         commands[~commands["command"].isin([f"graphlabel {c}" for c in PIPELINE])], floatfmt=".2f")
        report.table(f"{n:,} entities: the stages each command printed", pd.DataFrame(run["stages"]), floatfmt=".2f")
        quality = [{"who": "graphlabel", "accuracy (hidden labels)": run["accuracy"], "flagged": run["flagged"],
                    "flips caught": f"{run['flags caught']} of {run['flipped']}"}]
        if "script" in run:
            quality.append({"who": "plain script", "accuracy (hidden labels)": run["script"]["accuracy"],
                            "flagged": "", "flips caught": "(no flags)"})
            report.note(f"plain script's steps at {n:,}: {run['script']['steps']}")
        report.table(f"{n:,} entities: answers", pd.DataFrame(quality), floatfmt=".4f")
    report.save()
