"""End to end on the embedded store: a Parquet file of n entities (32 features, 10 classes,
1% labelled) through ingest → build edges → export → solve → write back, the time of each
stage as the flows record it, at two sizes so each stage's growth exponent can be read.

    python -m bench e2e                 # 10k and 100k entities
    python -m bench e2e --full          # 100k and 1M entities (the issue's goal: 1M < 15 min)
    python -m bench e2e --sizes 30000   # any sizes
    python -m bench e2e --sizes 100000 --noise-flags   # the solver's defaults next to no flags

Every run uses ``SOLVER_PARAMS`` (harmonic: ``detect_noise=False``, no noise flags: the
exact leave-one-out flags cost one more solve per given label, 1,000 at 100k and 10,000
at 1M), which the report's title states. ``--noise-flags`` runs each size twice, with
those settings and with the solver's defaults (what ``graphlabel label`` runs), and
reports both solves side by side.

Each size runs in a fresh store in a temporary folder, in its own child process (so the
peak memory is the run's own), through the same Prefect flows the CLI runs. The growth
exponent of a stage between sizes n₁ < n₂ is log(t₂/t₁) / log(n₂/n₁); n log n between
100k and 1M is an exponent of 1.2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import RESULTS, Report

DIMENSIONS = 32
CLASSES = 10
LABELED = 0.01
SOLVER_PARAMS = {"harmonic": {"detect_noise": False}}


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


def run_one(n: int, solver: str, workdir: Path, solver_params: dict | None = None) -> dict:
    """One end-to-end run in this process; returns stage timings and the run's numbers.
    ``solver_params``: default ``SOLVER_PARAMS[solver]``; ``{}`` runs the solver's defaults."""
    solver_params = SOLVER_PARAMS.get(solver, {}) if solver_params is None else solver_params
    from flows.labelling import build_graph_flow, ingest_flow, labelling_flow
    from graphstore import open_store

    frame, y = entities(n)
    source = workdir / "entities.parquet"
    frame.to_parquet(source, index=False)
    store = str(workdir / "store")
    timings: dict[str, float] = {}
    _warm_up_prefect()

    start = time.perf_counter()
    ingest_flow(str(source), "scale", "key", "x*", "label", store_uri=store)
    timings["ingest"] = time.perf_counter() - start
    graph = build_graph_flow("scale", store_uri=store, k=10)
    timings.update({f"graph.{k}": v for k, v in graph["timings"].items()})
    summary = labelling_flow("scale", store_uri=store, solver=solver,
                             solver_params=solver_params, build_graph=False, full=True)
    timings.update(summary["timings"])
    with open_store(store) as graph_store:
        written = graph_store.query(
            "MATCH (e:Entity) WHERE e.dataset = 'scale' AND e.given_label IS NULL "
            "RETURN e.key AS key, e.predicted_label AS predicted")
    truth = pd.Series(np.char.add("c", y.astype(str)), index=frame["key"].to_numpy())
    accuracy = float((written["predicted"].to_numpy() == truth.loc[written["key"]].to_numpy()).mean())
    return {"n": n, "solver": solver, "solver_params": solver_params, "timings": timings, "edges": graph["edges"],
            "accuracy": accuracy, "max_rss_mib": _max_rss_mib(), "n_flagged": summary["n_flagged"],
            "n_labeled": summary["n_labeled"]}


def _warm_up_prefect() -> None:
    """Start the ephemeral Prefect API before the clock runs: the first flow of a process
    pays its start-up (seconds), which is not the pipeline's cost."""
    from prefect import flow

    flow(name="warm-up")(lambda: None)()


def _max_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def profiled_run(n: int, solver: str, workdir: Path, out: Path) -> dict:
    """``run_one`` under pyinstrument; the call tree goes to ``out`` (text)."""
    from pyinstrument import Profiler

    _warm_up_prefect()
    profiler = Profiler(interval=0.005)
    profiler.start()
    try:
        return run_one(n, solver, workdir)
    finally:
        profiler.stop()
        out.write_text(profiler.output_text(unicode=True, color=False))


def _child(n: int, solver: str, profile: Path | None = None, solver_params: dict | None = None) -> dict:
    """Run one size in a fresh interpreter (fresh store, fresh peak-memory counter)."""
    with tempfile.TemporaryDirectory(prefix="graphlabel-e2e-") as tmp:
        out = Path(tmp) / "result.json"
        call = (f"profiled_run({n}, {solver!r}, Path({tmp!r}), Path({str(profile)!r}))" if profile
                else f"run_one({n}, {solver!r}, Path({tmp!r}), {solver_params!r})")
        code = ("import json, sys; from pathlib import Path; from bench.e2e import run_one, profiled_run; "
                f"r = {call}; Path({str(out)!r}).write_text(json.dumps(r))")
        subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent.parent,
                       env={**os.environ, "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_TASKS_REFRESH_CACHE": "true",
                            "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
        return json.loads(out.read_text())


def growth(small: dict, large: dict) -> dict[str, float]:
    """Exponent a of t ∝ n^a for each stage between two runs."""
    ratio = np.log(large["n"] / small["n"])
    return {stage: float(np.log(max(large["timings"][stage], 1e-3) / max(small["timings"][stage], 1e-3)) / ratio)
            for stage in large["timings"] if stage in small["timings"]}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench e2e")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")])
    parser.add_argument("--solver", default="harmonic")
    parser.add_argument("--profile", action="store_true",
                        help="run each size under pyinstrument; call trees in bench/results/e2e_profile_N.txt")
    parser.add_argument("--noise-flags", action="store_true",
                        help="also run each size with the solver's defaults (noise flags on); bench/results/"
                             "e2e_noise_flags.md")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([100_000, 1_000_000] if args.full else [10_000, 100_000])
    if args.noise_flags:
        return noise_flags(sizes, args.solver)
    name = "e2e_full" if args.full else "e2e"
    report = Report(name, f"End to end on the embedded store ({args.solver} with {SOLVER_PARAMS.get(args.solver, {})},"
                          " 32-d, k = 10, 1% labelled)")
    runs = []
    for n in sizes:
        print(f"running {n} entities...", flush=True)
        profile = RESULTS / f"e2e_profile_{n}.txt" if args.profile else None
        runs.append(_child(n, args.solver, profile))
    stages = list(runs[-1]["timings"])
    frame = pd.DataFrame({"stage": stages})
    for run in runs:
        frame[f"{run['n']:,} s"] = [run["timings"].get(s, np.nan) for s in stages]
    if len(runs) >= 2:
        exponents = growth(runs[-2], runs[-1])
        frame["growth exponent"] = [exponents.get(s, np.nan) for s in stages]
    totals = {"stage": "total"}
    for run in runs:
        totals[f"{run['n']:,} s"] = sum(run["timings"].values())
    frame = pd.concat([frame, pd.DataFrame([totals])], ignore_index=True)
    report.table("Seconds per stage (single run per size)", frame, floatfmt=".2f")
    report.table("Run", pd.DataFrame([{"n": r["n"], "edges": r["edges"], "accuracy": r["accuracy"],
                                        "max RSS MiB": r["max_rss_mib"]} for r in runs]))
    _plot(report, runs)
    report.save()


def noise_flags(sizes: list[int], solver: str) -> None:
    """Each size with ``SOLVER_PARAMS`` and with the solver's defaults, in the same run."""
    report = Report("e2e_noise_flags", f"End to end, {solver}: {SOLVER_PARAMS.get(solver, {})} against the"
                                       " solver's defaults (32-d, k = 10, 1% labelled)")
    rows = []
    for n in sizes:
        for params in (SOLVER_PARAMS.get(solver, {}), {}):
            print(f"running {n} entities with {params or 'the defaults'}...", flush=True)
            run = _child(n, solver, solver_params=params)
            rows.append({"n": n, "solver params": str(params or "defaults"), "given labels": run["n_labeled"],
                         "solve s": run["timings"]["solve"], "total s": sum(run["timings"].values()),
                         "flagged": run["n_flagged"], "accuracy": run["accuracy"]})
    frame = pd.DataFrame(rows)
    frame["solve × no flags"] = frame["solve s"] / frame.groupby("n")["solve s"].transform("first")
    report.table("Solve and total seconds (single run per setting)", frame, floatfmt=".3f")
    report.save()


def _plot(report: Report, runs: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    stages = list(runs[-1]["timings"])
    bottom = np.zeros(len(runs))
    labels = [f"{r['n']:,}" for r in runs]
    for stage in stages:
        values = np.array([r["timings"].get(stage, 0.0) for r in runs])
        ax.bar(labels, values, bottom=bottom, label=stage)
        bottom += values
    ax.set_ylabel("seconds")
    ax.set_xlabel("entities")
    ax.legend(fontsize=7)
    report.figure(fig, "seconds per stage, end to end on the embedded store")
