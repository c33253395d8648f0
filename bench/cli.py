"""Each `graphlabel` command on a 2,000-row dataset, end to end as a user runs it (a fresh
process, no Prefect server configured: PREFECT_API_URL unset and a fresh PREFECT_HOME), next
to a plain scikit-learn script that does the labelling job alone (bench/_sklearn_script.py:
read the CSV, LabelSpreading on a 10-NN graph, write the predictions), in the same run.

    python -m bench cli                 # 3 repeats
    python -m bench cli --repeats 5
    python -m bench cli --with-server   # also every command with a Prefect server configured

Data: ``make_classification`` (2,000 rows, 16 features of which 8 informative, 3 classes,
seed 0), 5% of the rows labelled (100 labels), as a CSV. Each repeat starts from an empty
store and an empty Prefect home, then runs, in order: ingest, build-graph (k = 10), label
--full, label (incremental, nothing changed), query, report --dataset, report --run,
explain, then label --solver maxmargin, explain after it (the support vectors' share) and
predict (the CSV's rows, from the model the run kept). Wall time of the whole process; the
median of the repeats, with min and max.
Targets (issue 13): every command under 3 s, query/report/explain under 1 s.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import Report

ROWS = 2000
TARGET = {"query": 1.0, "report --dataset": 1.0, "report --run": 1.0, "explain": 1.0, "explain (maxmargin run)": 1.0}


def write_dataset(path: Path) -> None:
    from sklearn.datasets import make_classification

    X, y = make_classification(ROWS, n_features=16, n_informative=8, n_classes=3, random_state=0)
    frame = pd.DataFrame(X, columns=[f"x_{i:02d}" for i in range(X.shape[1])])
    frame.insert(0, "key", [f"row-{i:04d}" for i in range(ROWS)])
    kept = np.random.default_rng(0).random(ROWS) < 0.05
    frame.insert(1, "label", np.where(kept, np.array(["a", "b", "c"])[y], None))
    frame.to_csv(path, index=False)


def commands(data: Path, store: Path) -> list[tuple[str, list[str]]]:
    s = ["--store", str(store)]
    return [
        ("ingest", ["ingest", str(data), "--dataset", "bench", "--key", "key", "--features", "x_*",
                    "--label", "label", *s]),
        ("build-graph", ["build-graph", "--dataset", "bench", "--k", "10", *s]),
        ("label --full", ["label", "--dataset", "bench", "--full", *s]),
        ("label (incremental)", ["label", "--dataset", "bench", *s]),
        ("query", ["query", "MATCH (e:Entity) WHERE e.label_confidence < 0.6 RETURN e.key, e.predicted_label,"
                   " e.label_confidence ORDER BY e.label_confidence LIMIT 10", *s]),
        ("report --dataset", ["report", "--dataset", "bench", *s]),
        ("report --run", ["report", "--run", "{run}", *s]),
        ("explain", ["explain", "row-0001", "--dataset", "bench", *s]),
        # the max-margin model a run keeps (issue 17): explain reads it and the node's
        # features; predict labels the file's rows from it
        ("label --solver maxmargin", ["label", "--dataset", "bench", "--solver", "maxmargin", *s]),
        ("explain (maxmargin run)", ["explain", "row-0001", "--dataset", "bench", *s]),
        ("predict (maxmargin run)", ["predict", str(data), "--run", "{latest}", "--key", "key", "--features", "x_*",
                                     "--output", "predicted.csv", *s]),
    ]


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    return time.perf_counter() - start, done


PUBLISHED = re.compile(r"published the run's report, numbers and plot in ([0-9.]+) s")
STAGE_ROW = re.compile(r"│ ([a-z_]+)\s+│ ([0-9.]+)\s+│")


def one_repeat(folder: Path, data: Path, env: dict[str, str], times: dict[str, list[float]],
               failures: list[str], publishing: dict[str, list[tuple[float, float]]]) -> None:
    graphlabel = str(Path(sys.executable).with_name("graphlabel"))
    store = folder / "store"
    run_id = None
    for name, args in commands(data, store):
        if run_id is None and "{run}" in args:
            from graphstore import open_store

            with open_store(str(store)) as graph_store:  # not timed: which run to report on
                runs = graph_store.read_runs(dataset="bench")
            run_id = runs["run_id"].iloc[-1] if len(runs) else "missing"
        if "{latest}" in args:
            from graphstore import open_store

            with open_store(str(store)) as graph_store:  # not timed: the newest run
                latest = graph_store.read_runs(dataset="bench", limit=1)["run_id"].iloc[0]
            args = [a.replace("{latest}", str(latest)) for a in args]
        args = [a.replace("{run}", str(run_id)) for a in args]
        seconds, done = run([graphlabel, *args], env, folder)
        times.setdefault(name, []).append(seconds)
        published = PUBLISHED.search(done.stdout + done.stderr)
        if published:  # with a server: what publishing cost beside the labelling's own stages
            stages = sum(float(t) for stage, t in STAGE_ROW.findall(done.stdout) if stage != "record_run")
            publishing.setdefault(name, []).append((stages, float(published.group(1))))
        if done.returncode != 0:
            failures.append(f"{name}: exit {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}")
    seconds, done = run([sys.executable, str(Path(__file__).with_name("_sklearn_script.py")), str(data),
                         str(folder / "predictions.csv")], env, folder)
    times.setdefault("plain scikit-learn script", []).append(seconds)
    if done.returncode != 0:
        failures.append(f"scikit-learn script: {done.stderr.strip()[-300:]}")


def measure(repeats: int, api_url: str | None, report: Report, heading: str) -> None:
    times: dict[str, list[float]] = {}
    failures: list[str] = []
    publishing: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        root = Path(tmp)
        data = root / "data.csv"
        write_dataset(data)
        for i in range(repeats):
            folder = root / f"repeat-{i}"
            folder.mkdir()
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPHLABEL_"))}
            env.update(PREFECT_HOME=str(folder / "prefect-home"), COLUMNS="80")
            if api_url:
                env["PREFECT_API_URL"] = api_url
            one_repeat(folder, data, env, times, failures, publishing)
            shutil.rmtree(folder / "store", ignore_errors=True)
    peer = statistics.median(times["plain scikit-learn script"])
    rows = []
    for name, values in times.items():
        median = statistics.median(values)
        target = TARGET.get(name, 3.0) if name != "plain scikit-learn script" else None
        rows.append({"command": name, "median s": median, "min s": min(values), "max s": max(values),
                     "× script": median / peer, "target s": target,
                     "meets": "" if target is None else ("yes" if median < target else "NO")})
    report.table(heading, pd.DataFrame(rows), floatfmt=".2f")
    if publishing:
        rows = [{"command": name, "labelling stages s": statistics.median(s for s, _ in pairs),
                 "publishing artifacts s": statistics.median(p for _, p in pairs),
                 "publishing / labelling": statistics.median(p / s for s, p in pairs)}
                for name, pairs in publishing.items()]
        report.table(f"{heading}: publishing the run's artifacts against the labelling stages (medians)",
                     pd.DataFrame(rows), floatfmt=".3f")
    for failure in failures:
        report.note(f"- failed: {failure}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench cli")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--with-server", action="store_true",
                        help="also time every command with a Prefect server configured")
    args = parser.parse_args(argv)
    report = Report("cli", "graphlabel commands on 2,000 rows, end to end, against a plain scikit-learn script")
    report.note(f"{ROWS} rows × 16 features, 100 given labels; {args.repeats} repeats, each from an empty"
                " store and PREFECT_HOME; wall time of the whole process (median, min, max).")
    measure(args.repeats, None, report, "no Prefect server configured (PREFECT_API_URL unset)")
    if args.with_server:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from prefect_server import PrefectServer

        with tempfile.TemporaryDirectory(prefix="bench-cli-server-") as tmp, PrefectServer(Path(tmp)) as server:
            measure(args.repeats, server.api_url, report,
                    "a Prefect server configured (PREFECT_API_URL set; every run recorded in its UI)")
    report.save()
