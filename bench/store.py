"""The embedded store's bulk paths at scale: ingest, replace edges, export the subgraph, write
predictions, next to writing and reading the same Arrow tables as Parquet files (the floor
any store has to beat or approach), in the same run.

    python -m bench store            # 100k nodes, 1M relationships
    python -m bench store --full     # 1M nodes, 10M relationships
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from graphstore import open_store
from graphstore.schemas import NODE_SCHEMA, PREDICTION_SCHEMA

from ._common import Report, median_time


def tables(n: int, d: int, degree: int, rng: np.random.Generator):
    keys = pa.array([f"k{i}" for i in range(n)], pa.string())
    feats = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * d), pa.array(rng.random(n * d)))
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


def main(argv: list[str]) -> None:
    full = "--full" in argv
    n, degree = (1_000_000, 10) if full else (100_000, 10)
    report = Report("store", "embedded store (Kùzu 0.11.3) bulk paths")
    nodes, edges, preds = tables(n, 32, degree, np.random.default_rng(0))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with open_store(str(Path(tmp) / "kuzu"), create=True) as store:
            first, _ = median_time(lambda: store.write_nodes("bench", nodes), 1)
            again, _ = median_time(lambda: store.write_nodes("bench", nodes), 1)
            edge_s, _ = median_time(lambda: store.replace_edges("bench", edges), 1)
            edge_again, _ = median_time(lambda: store.replace_edges("bench", edges), 1)
            export_s, graph = median_time(lambda: store.read_subgraph("bench"), 3)
            write_s, _ = median_time(lambda: store.write_predictions("bench", preds), 3)
        parquet = Path(tmp) / "p"
        parquet.mkdir()
        pq_nodes, _ = median_time(lambda: pq.write_table(nodes, parquet / "n.parquet"), 3)
        pq_edges, _ = median_time(lambda: pq.write_table(edges, parquet / "e.parquet"), 3)
        pq_read, _ = median_time(lambda: (pq.read_table(parquet / "n.parquet"), pq.read_table(parquet / "e.parquet")), 3)
        pq_preds, _ = median_time(lambda: pq.write_table(preds, parquet / "p.parquet"), 3)
    assert graph.n_nodes == n and len(graph.weight) == edges.num_rows
    rows = [
        {"stage": "ingest nodes (new)", "kuzu_s": first, "parquet_s": pq_nodes},
        {"stage": "ingest nodes (upsert existing)", "kuzu_s": again, "parquet_s": pq_nodes},
        {"stage": "replace edges (empty)", "kuzu_s": edge_s, "parquet_s": pq_edges},
        {"stage": "replace edges (delete old + load)", "kuzu_s": edge_again, "parquet_s": pq_edges},
        {"stage": "export subgraph", "kuzu_s": export_s, "parquet_s": pq_read},
        {"stage": "write predictions", "kuzu_s": write_s, "parquet_s": pq_preds},
    ]
    frame = pd.DataFrame(rows)
    frame["ratio"] = frame["kuzu_s"] / frame["parquet_s"]
    report.table(f"{n:,} nodes (32 features), {edges.num_rows:,} relationships; export and write are"
                 " medians of 3, ingest and edges single runs (they change state)", frame)
    print(f"written to {report.save()}")
