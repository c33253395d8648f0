"""What the per-class scores (issue 17) cost the embedded store's write-back, and why they
are a BLOB there.

    python -m bench scores_write            # 100k nodes, 1M relationships, 10 classes
    python -m bench scores_write --full     # 1M nodes, 10M relationships

On one Kùzu store holding bench/store.py's tables (32 features, 10 relationships per node),
in one process, each a median of 3 calls:

- ``write_predictions`` without the score columns (the write-back before issue 17);
- ``write_predictions`` with ``label_scores`` (10 classes), ``label_runner_up`` and
  ``label_margin``: what a run writes now, the scores as a BLOB;
- the same scores SET into a ``DOUBLE[]`` column instead (the alternative), with the same
  statement shape (LOAD FROM the Arrow table, MATCH by uid, SET, then CHECKPOINT, as
  ``KuzuStore._bulk`` does).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from ._common import Report, median_time
from .store import sizes, tables

N_CLASSES = 10


def _with_scores(preds: pa.Table, rng: np.random.Generator) -> pa.Table:
    n = preds.num_rows
    raw = rng.random((n, N_CLASSES))
    scores = raw / raw.sum(axis=1, keepdims=True)
    lists = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * N_CLASSES), pa.array(scores.ravel()))
    return (preds.append_column("label_scores", lists)
            .append_column("label_runner_up", pa.array(["c1"] * n))
            .append_column("label_margin", pa.array(rng.random(n))))


def measure(full: bool) -> pd.DataFrame:
    from graphstore import open_store
    from graphstore.kuzu_store import _uids

    n, degree = sizes(full)
    rng = np.random.default_rng(0)
    nodes, edges, preds = tables(n, 32, degree, rng)
    scored = _with_scores(preds, rng)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, open_store(f"kuzu://{Path(tmp) / 'store'}", create=True) as store:
        store.write_nodes("bench", nodes)
        store.replace_edges("bench", edges)
        before, written = median_time(lambda: store.write_predictions("bench", preds), 3)
        assert written == n
        now, written = median_time(lambda: store.write_predictions("bench", scored), 3)
        assert written == n
        store._conn.execute("ALTER TABLE Entity ADD IF NOT EXISTS label_scores_list DOUBLE[]")
        table = pa.table({"uid": _uids("bench", scored.column("key")), "scores": scored.column("label_scores")})

        def as_list():
            store._conn.execute("LOAD FROM $rows MATCH (e:Entity {uid: uid}) SET e.label_scores_list = scores",
                                {"rows": table})
            store._conn.execute("CHECKPOINT")

        as_list_s, _ = median_time(as_list, 3)
        # the same statement for the BLOB column alone: the like-for-like pair of the row above
        from graphstore.kuzu_store import _floats_to_blob

        blobs = pa.table({"uid": table.column("uid"), "scores": _floats_to_blob(scored.column("label_scores"))})

        def as_blob():
            store._conn.execute("LOAD FROM $rows MATCH (e:Entity {uid: uid}) SET e.label_scores = scores",
                                {"rows": blobs})
            store._conn.execute("CHECKPOINT")

        as_blob_s, _ = median_time(as_blob, 3)
    rows.append(("write_predictions, 7 properties (before)", before))
    rows.append(("write_predictions, + label_scores (BLOB), runner-up, margin (now)", now))
    rows.append(("label_scores alone as BLOB: LOAD FROM + SET + CHECKPOINT", as_blob_s))
    rows.append(("label_scores alone as DOUBLE[]: LOAD FROM + SET + CHECKPOINT", as_list_s))
    frame = pd.DataFrame(rows, columns=["step", "seconds"])
    frame["× before"] = frame["seconds"] / before
    return frame


def main(argv: list[str]) -> None:
    full = "--full" in argv
    n, degree = sizes(full)
    frame = measure(full)
    import kuzu

    report = Report("scores_write_full" if full else "scores_write",
                    f"per-class scores on write-back, kuzu {kuzu.__version__}")
    report.table(f"{n:,} nodes (32 features), {n * degree:,} relationships, {N_CLASSES} classes; one store, one"
                 " process, medians of 3 calls each", frame)
    report.note("The DOUBLE[] row is the alternative not taken: the scores column as a list type.")
    print(f"written to {report.save()}")
