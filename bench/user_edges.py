"""The user's own edges on the embedded store (kuzu), each path next to its peer in the same run:

    python -m bench user_edges            # 100k nodes, 1M edges (random pairs, a weight each)
    python -m bench user_edges --full     # 1M nodes, 10M edges

- checking an edge file (``labelling.edgefiles.parse_edges`` on a CSV: keys, endpoints,
  self loops, weights, duplicate pairs) next to ``pandas.read_csv`` of the same file (the
  floor: reading it without any check);
- storing them (``write_user_edges``: endpoints checked, the type's old edges read and
  compared, deleted, COPY) next to ``replace_edges`` of the same table into graphlabel's
  own SIMILAR; and again with one edge in 1,000 reweighted (the ends of those marked
  changed);
- reading them (``read_user_edges``) next to ``read_subgraph`` of as many SIMILAR
  relationships, and the graph a ``knn+edges`` run labels over (``read_graph``: both, summed
  pair by pair).

One round each (each write changes the store); generating the tables is not timed.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from graphstore import open_store
from graphstore.schemas import EDGE_SCHEMA, NODE_SCHEMA
from labelling.edgefiles import parse_edges
from similarity.spec import GraphSpec

from ._common import Report


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main(argv: list[str]) -> None:
    full = "--full" in argv
    n, m = (1_000_000, 10_000_000) if full else (100_000, 1_000_000)
    report = Report("user_edges" + ("_full" if full else ""),
                    f"The user's own edges on the embedded store: {n:,} nodes, {m:,} edges")
    rng = np.random.default_rng(0)
    keys = np.array([f"k{i}" for i in range(n)], dtype=object)
    source, target = rng.integers(0, n, m), rng.integers(0, n, m)
    edges = pa.table({"source": pa.array(keys[source], pa.string()), "target": pa.array(keys[target], pa.string()),
                      "weight": rng.random(m)}).cast(EDGE_SCHEMA)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        csv = Path(folder) / "edges.csv"
        edges.to_pandas().to_csv(csv, index=False)
        floor, _ = _timed(lambda: pd.read_csv(csv))
        checked, parsed = _timed(lambda: parse_edges(csv, source_column="source", target_column="target",
                                                     weight_column="weight", node_keys=keys))
        rows.append({"stage": "check an edge file (CSV)", "graphlabel s": checked,
                     "peer": "pandas.read_csv, no checks", "peer s": floor})
        with open_store(str(Path(folder) / "store"), create=True) as store:
            store.write_nodes("b", pa.table({"key": keys, "features": np.zeros((n, 1)).tolist(),
                                             "label": [None] * n}).cast(NODE_SCHEMA))
            valid, engine = parsed.edges, store.engine
            own, _ = _timed(lambda: store.replace_edges("b", valid))
            user, _ = _timed(lambda: store.write_user_edges("b", "CO", valid))
            rows.append({"stage": "store them", "graphlabel s": user,
                         "peer": "replace_edges into SIMILAR", "peer s": own})
            read_own, _ = _timed(lambda: store.read_subgraph("b", with_features=False))
            read_user, _ = _timed(lambda: store.read_user_edges("b", "CO", "weight"))
            rows.append({"stage": "read them", "graphlabel s": read_user,
                         "peer": "read_subgraph (SIMILAR)", "peer s": read_own})
            store.write_graph_build("b", GraphSpec.from_options("knn+edges:CO:weight").as_record())
            both, graph = _timed(lambda: store.read_graph("b", with_features=False))
            rows.append({"stage": "read knn+edges (both, summed)", "graphlabel s": both,
                         "peer": "read_subgraph (SIMILAR)", "peer s": read_own})
            # the file loaded again with one edge in 1,000 reweighted: the old edges are read
            # and compared, and the ends of those that changed marked changed
            weight = valid.column("weight").to_numpy().copy()
            weight[::1000] += 1.0
            reloaded = valid.set_column(2, "weight", pa.array(weight))
            again, written = _timed(lambda: store.write_user_edges("b", "CO", reloaded))
            own_again, _ = _timed(lambda: store.replace_edges("b", reloaded))
            rows.append({"stage": f"store them again, every 1,000th reweighted ({written.changed_nodes:,} nodes"
                                  " marked changed)", "graphlabel s": again,
                         "peer": "replace_edges into SIMILAR", "peer s": own_again})
    frame = pd.DataFrame(rows)
    frame["ratio"] = frame["graphlabel s"] / frame["peer s"]
    report.table(f"seconds, one round each ({len(parsed.edges):,} valid edges of {m:,} rows;"
                 f" {len(parsed.rejects):,} rejected: {parsed.reject_counts})", frame)
    report.note(f"The summed graph has {len(graph.source):,} undirected pairs. Engine {engine}, default settings.")
    report.save()
