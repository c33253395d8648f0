"""The embedded store's bulk paths at scale, on both engines (kuzu and its maintained fork
ladybug) in the same run, next to writing and reading the same Arrow tables as Parquet
files (the floor any store has to beat or approach).

    python -m bench store            # 100k nodes, 1M relationships, 2 rounds per engine
    python -m bench store --full     # 1M nodes, 10M relationships
    python -m bench store --rounds 3
    python -m bench store --wide     # wide rows: 250k nodes of 384 features, 100k of 1,000 classes

The two engines cannot share a process (graphstore/kuzu_store.py says why), so each round
of each engine runs in a fresh process (``--engine NAME --out FILE``, which this module
starts itself), the rounds alternating kuzu, ladybug, kuzu, ... so that a slow spell of
the shared machine hits both. The tables are generated in each process from the same seed;
generating them is not timed.

Stages, in the order they run on one fresh store (a single run each, since each changes
the store, except export and write-back: medians of 3):

- ingest nodes (new): ``write_nodes`` into an empty store (MERGE over the Arrow table);
- ingest nodes (upsert existing): the same table again (the change hash finds no change);
- relationships: COPY: ``replace_edges`` on a dataset without relationships;
- relationships: delete old + COPY: ``replace_edges`` again;
- export subgraph: ``read_subgraph`` with features;
- write predictions: ``write_predictions`` (bulk SET of 7 properties);
- relationships: delete: ``replace_edges`` with no rows.

``--wide`` measures the rows users met failing (README, "Wide rows: embeddings and many
classes"), each story on a fresh store in a process of its own, so that its peak memory
(the process's maximum resident set) is its own: ``ingest --text``'s embedding, 250,000
nodes of 384 features written (``write_nodes``, one call) and read back
(``read_subgraph`` without relationships, median of 3); and 100,000 products of 1,000
classes, whose predictions with their per-class scores are written (``write_predictions``,
one call) and exported (``read_export``, median of 3). The pool these rows need is most of
the peak (graphstore/kuzu_store.py, ``WIDE_ROW_POOL_FACTOR``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from graphstore.schemas import NODE_SCHEMA, PREDICTION_SCHEMA, SCORE_FIELDS

from ._common import Report, median_time

ENGINES = ("kuzu", "ladybug")
STAGES = ("ingest nodes (new)", "ingest nodes (upsert existing)", "relationships: COPY",
          "relationships: delete old + COPY", "export subgraph", "write predictions", "relationships: delete")


WIDE_STAGES = ("ingest nodes (384 features)", "read features", "write predictions (1,000 classes' scores)",
               "export (1,000 classes' scores)")
#: the two stories of ``--wide``: (nodes, features, classes) and the stages each one times
WIDE_STORIES = {"embedding": ((250_000, 384, 0), WIDE_STAGES[:2]), "classes": ((100_000, 32, 1_000), WIDE_STAGES[2:])}


def tables(n: int, d: int, degree: int, rng: np.random.Generator):
    keys = pa.array([f"k{i}" for i in range(n)], pa.string())
    feats = _list_column(rng.random((n, d)))  # the same draws, row by row, as rng.random(n * d)
    labels = pa.array(np.where(rng.random(n) < 0.01, "c" + (np.arange(n) % 10).astype(str), None).tolist(), pa.string())
    nodes = pa.table({"key": keys, "features": feats, "label": labels}).cast(NODE_SCHEMA)
    src = np.repeat(np.arange(n), degree)
    dst = (src + rng.integers(1, n, size=len(src))) % n
    edges = pa.table({"source": keys.take(pa.array(src)), "target": keys.take(pa.array(dst)),
                      "weight": pa.array(rng.random(len(src)))})
    preds = pa.table({
        "key": keys, "predicted_label": pa.array(("c" + (np.arange(n) % 10).astype(str)).tolist()),
        "label_confidence": pa.array(rng.random(n)), "label_noise": pa.array(np.zeros(n, dtype=bool)),
        "label_run_id": pa.array(["run"] * n), "label_solver": pa.array(["harmonic"] * n),
        "labelled_at": pa.array([pd.Timestamp("2026-01-01").to_pydatetime()] * n, pa.timestamp("us")),
    }).cast(PREDICTION_SCHEMA)
    return nodes, edges, preds


def _list_column(values: np.ndarray) -> pa.ListArray:
    """A matrix as an Arrow list column, one list per row, without a Python object per row."""
    n, d = values.shape
    return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * d), pa.array(values.ravel()))


def wide_tables(n: int, d: int, classes: int, rng: np.random.Generator) -> tuple[pa.Table, pa.Table | None]:
    """n nodes of d features and, with ``classes``, their predictions with one score per class."""
    keys = pa.array([f"k{i}" for i in range(n)], pa.string())
    nodes = pa.table({"key": keys, "features": _list_column(rng.normal(size=(n, d))),
                      "label": pa.nulls(n, pa.string())}).cast(NODE_SCHEMA)
    if not classes:
        return nodes, None
    scores = rng.dirichlet(np.ones(classes), size=n)
    best = scores.argmax(axis=1)
    preds = pa.table({
        "key": keys, "predicted_label": pa.array(best.astype(str)), "label_confidence": pa.array(scores.max(axis=1)),
        "label_noise": pa.array(np.zeros(n, dtype=bool)), "label_run_id": pa.array(["run"] * n),
        "label_solver": pa.array(["harmonic"] * n),
        "labelled_at": pa.array([pd.Timestamp("2026-01-01").to_pydatetime()] * n, pa.timestamp("us")),
        "label_scores": _list_column(scores), "label_runner_up": pa.array(((best + 1) % classes).astype(str)),
        "label_margin": pa.array(np.zeros(n)),
    }).cast(pa.schema([*PREDICTION_SCHEMA, *SCORE_FIELDS]))
    return nodes, preds


def sizes(full: bool) -> tuple[int, int]:
    return (1_000_000, 10) if full else (100_000, 10)


def measure_engine(engine: str, full: bool) -> dict[str, float]:
    """Every stage on a fresh store of ``engine``, in this process (one engine per process)."""
    from graphstore import open_store

    n, degree = sizes(full)
    nodes, edges, preds = tables(n, 32, degree, np.random.default_rng(0))
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, open_store(f"{engine}://{Path(tmp) / 'store'}", create=True) as store:
        assert store.dialect == engine
        seconds[STAGES[0]], _ = median_time(lambda: store.write_nodes("bench", nodes), 1)
        seconds[STAGES[1]], _ = median_time(lambda: store.write_nodes("bench", nodes), 1)
        seconds[STAGES[2]], _ = median_time(lambda: store.replace_edges("bench", edges), 1)
        seconds[STAGES[3]], _ = median_time(lambda: store.replace_edges("bench", edges), 1)
        seconds[STAGES[4]], graph = median_time(lambda: store.read_subgraph("bench"), 3)
        seconds[STAGES[5]], written = median_time(lambda: store.write_predictions("bench", preds), 3)
        seconds[STAGES[6]], _ = median_time(lambda: store.replace_edges("bench", edges.slice(0, 0)), 1)
        assert graph.n_nodes == n
        assert written == n
        assert len(graph.weight) <= edges.num_rows  # a pair drawn twice is read once
        assert store.read_subgraph("bench", with_features=False).weight.size == 0
    return seconds


def measure_wide(engine: str, story: str) -> dict[str, float]:
    """One ``--wide`` story's stages on a fresh store of ``engine``, in this process."""
    from graphstore import open_store

    (n, d, classes), _ = WIDE_STORIES[story]
    nodes, preds = wide_tables(n, d, classes, np.random.default_rng(0))
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, open_store(f"{engine}://{Path(tmp) / 'store'}", create=True) as store:
        if preds is None:
            seconds[WIDE_STAGES[0]], written = median_time(lambda: store.write_nodes("wide", nodes), 1)
            seconds[WIDE_STAGES[1]], graph = median_time(
                lambda: store.read_subgraph("wide", with_edges=False), 3)
            assert written == n
            assert graph.features.shape == (n, d)
        else:
            store.write_nodes("wide", nodes)  # not timed: the nodes the predictions are of
            seconds[WIDE_STAGES[2]], written = median_time(lambda: store.write_predictions("wide", preds), 1)
            seconds[WIDE_STAGES[3]], export = median_time(lambda: store.read_export("wide"), 3)
            assert written == n
            assert len(export.column("label_scores")[0]) == classes
    return seconds


def measure_parquet_wide() -> dict[str, float]:
    """The ``--wide`` tables written to and read from Parquet files: the floor."""
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for story, ((n, d, classes), (write, read)) in WIDE_STORIES.items():
            nodes, preds = wide_tables(n, d, classes, np.random.default_rng(0))
            table, path = (nodes if preds is None else preds), Path(tmp) / f"{story}.parquet"
            seconds[write], _ = median_time(lambda: pq.write_table(table, path), 1)
            seconds[read], _ = median_time(lambda: pq.read_table(path), 3)
    return seconds


def measure_parquet(full: bool) -> dict[str, float]:
    n, degree = sizes(full)
    nodes, edges, preds = tables(n, 32, degree, np.random.default_rng(0))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_nodes, _ = median_time(lambda: pq.write_table(nodes, folder / "n.parquet"), 3)
        write_edges, _ = median_time(lambda: pq.write_table(edges, folder / "e.parquet"), 3)
        read, _ = median_time(lambda: (pq.read_table(folder / "n.parquet"), pq.read_table(folder / "e.parquet")), 3)
        write_preds, _ = median_time(lambda: pq.write_table(preds, folder / "p.parquet"), 3)
    return {STAGES[0]: write_nodes, STAGES[1]: write_nodes, STAGES[2]: write_edges, STAGES[3]: write_edges,
            STAGES[4]: read, STAGES[5]: write_preds, STAGES[6]: np.nan}


def _engine_version(engine: str) -> str:
    from importlib import metadata

    return metadata.version(engine)


def _child(argv: list[str]) -> None:
    engine = argv[argv.index("--engine") + 1]
    out = Path(argv[argv.index("--out") + 1])
    if "--story" in argv:
        seconds = measure_wide(engine, argv[argv.index("--story") + 1])
    else:
        seconds = measure_engine(engine, "--full" in argv)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    out.write_text(json.dumps({"engine": engine, "version": _engine_version(engine), "seconds": seconds,
                               "peak_mib": peak_mib}))


def main_wide(rounds: int) -> None:
    """``--wide``: every story on each engine, ``rounds`` times, alternating engines."""
    versions = {engine: _engine_version(engine) for engine in ENGINES}
    report = Report("store_wide", "embedded store, wide rows: " + " vs ".join(f"{e} {v}" for e, v in versions.items()))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(rounds):
            for story in WIDE_STORIES:
                for engine in ENGINES:
                    out = Path(tmp) / f"{engine}-{story}-{round_}.json"
                    command = [sys.executable, "-m", "bench", "store", "--engine", engine, "--story", story,
                               "--out", str(out)]
                    subprocess.run(command, check=True, cwd=Path(__file__).resolve().parent.parent)
                    result = json.loads(out.read_text())
                    rows += [{"engine": engine, "story": story, "stage": stage, "seconds": value,
                              "peak_mib": result["peak_mib"]} for stage, value in result["seconds"].items()]
                    print(f"round {round_ + 1}/{rounds}: {engine} {story} done", flush=True)
    runs = pd.DataFrame(rows)
    parquet = measure_parquet_wide()
    frame = pd.DataFrame({"stage": list(WIDE_STAGES)})
    for engine in ENGINES:
        per_stage = runs[runs.engine == engine].groupby("stage")
        frame[f"{engine}_s"] = frame.stage.map(per_stage.seconds.median())
        frame[f"{engine} range"] = frame.stage.map(
            per_stage.seconds.agg(lambda s: f"{s.min():.2f}-{s.max():.2f}"))
        frame[f"{engine} peak MiB"] = frame.stage.map(per_stage.peak_mib.max()).round().astype(int)
    frame["ladybug / kuzu"] = frame["ladybug_s"] / frame["kuzu_s"]
    frame["parquet_s"] = frame.stage.map(parquet)
    settings = "; ".join(f"{story}: {n:,} nodes of {d} features" + (f", predictions of {c:,} classes" if c else "")
                         for story, ((n, d, c), _) in WIDE_STORIES.items())
    report.table(f"{settings}; median (and range) of {rounds} rounds per engine, each story of each round a fresh "
                 "process and store; writes are single calls, reads medians of 3; peak MiB = the largest maximum "
                 "resident set of the story's processes (tables, store and pool together)", frame)
    report.note("The Parquet column writes (or reads) the same Arrow tables as files: the floor. Before the store "
                "sized its pool by the rows' width, both writes failed with 'the buffer pool is full'.")
    print(f"written to {report.save()}")


def main(argv: list[str]) -> None:
    if "--engine" in argv:
        _child(argv)
        return
    full = "--full" in argv
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 2
    if "--wide" in argv:
        main_wide(rounds)
        return
    n, degree = sizes(full)
    versions = {engine: _engine_version(engine) for engine in ENGINES}
    report = Report("store_full" if full else "store",
                    "embedded store bulk paths: " + " vs ".join(f"{e} {v}" for e, v in versions.items()))
    runs: dict[str, list[dict[str, float]]] = {engine: [] for engine in ENGINES}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(rounds):
            for engine in ENGINES:
                out = Path(tmp) / f"{engine}-{round_}.json"
                command = [sys.executable, "-m", "bench", "store", "--engine", engine, "--out", str(out)]
                subprocess.run(command + (["--full"] if full else []), check=True,
                               cwd=Path(__file__).resolve().parent.parent)
                runs[engine].append(json.loads(out.read_text())["seconds"])
                print(f"round {round_ + 1}/{rounds}: {engine} done", flush=True)
    parquet = measure_parquet(full)
    frame = pd.DataFrame({"stage": list(STAGES)})
    for engine in ENGINES:
        per_round = pd.DataFrame(runs[engine])[list(STAGES)]
        frame[f"{engine}_s"] = per_round.median().to_numpy()
        frame[f"{engine} range"] = [f"{lo:.2f}-{hi:.2f}" for lo, hi in zip(per_round.min(), per_round.max())]
    frame["ladybug / kuzu"] = frame["ladybug_s"] / frame["kuzu_s"]
    frame["parquet_s"] = [parquet[stage] for stage in STAGES]
    report.table(f"{n:,} nodes (32 features), {n * degree:,} relationships; median (and range) of {rounds} rounds"
                 " per engine, each round a fresh process and store; export and write-back are themselves"
                 " medians of 3 calls, the other stages single calls (they change the store)", frame)
    report.note("The Parquet column writes (or reads) the same Arrow tables as files: the floor. "
                "`relationships: delete` is `replace_edges` with no rows (Parquet has no such step).")
    print(f"written to {report.save()}")
