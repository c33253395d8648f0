"""The embedded store: Kùzu, in-process, Cypher, Arrow in and out.

The Kùzu package is imported in this module only (``import kuzu``), so moving to a
fork with the same Python API (real-ladybug, ryugraph) is a one-line change here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

import kuzu

from .base import (
    EDGE_SCHEMA,
    NODE_SCHEMA,
    PREDICTION_SCHEMA,
    GraphStore,
    LabelRunRecord,
    SubGraph,
    check_dataset_name,
    conform_table,
    subgraph_from_tables,
)
from .queries import load_query, split_statements

DATABASE_FILE = "graph.kuzu"


def _features_to_blob(features: pa.ChunkedArray) -> pa.Array:
    """list<double> → one BLOB of little-endian float64 per node, without per-row objects.

    Why a BLOB and not DOUBLE[]: in kuzu 0.11.3, re-setting a DOUBLE[] (or DOUBLE[d]) column
    on nodes that have relationships made the next checkpoint take 22 s for 20k nodes,
    against 0.1 s for a BLOB (bench/store.py measures the bulk paths)."""
    flat = features.combine_chunks()
    offsets = np.asarray(flat.offsets, dtype=np.int64)
    values = np.ascontiguousarray(flat.values.to_numpy(zero_copy_only=False), dtype="<f8")
    values = values[offsets[0]:offsets[-1]]
    return pa.Array.from_buffers(pa.large_binary(), len(flat),
                                 [None, pa.py_buffer((offsets - offsets[0]) * 8), pa.py_buffer(values.tobytes())])


def _blob_to_features(blobs: pa.ChunkedArray) -> pa.Array:
    """The inverse of ``_features_to_blob``: BLOB column → list<double>."""
    flat = blobs.combine_chunks().cast(pa.large_binary())
    validity, offsets_buffer, data = flat.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[flat.offset: flat.offset + len(flat) + 1]
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]] if data is not None else np.zeros(0, np.uint8)
    return pa.ListArray.from_arrays(pa.array((offsets - offsets[0]) // 8, pa.int64()).cast(pa.int32()),
                                    pa.array(raw.view("<f8").astype(np.float64)))


def _uids(dataset: str, keys: pa.Array) -> pa.Array:
    return pa.compute.binary_join_element_wise(dataset, keys, ":")



class KuzuStore(GraphStore):
    """A Kùzu database in the folder ``path`` (created if missing).

    Parameters
    ----------
    path : str or Path
        Folder of the store; the database file is ``path/graph.kuzu``.
    """

    dialect = "kuzu"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._db = kuzu.Database(str(self.path / DATABASE_FILE))
        self._conn = kuzu.Connection(self._db)
        self.ensure_schema()

    def _run(self, name: str, parameters: dict[str, Any] | None = None):
        return self._conn.execute(load_query(name, self.dialect), parameters or {})

    def _bulk(self, name: str, parameters: dict[str, Any]) -> None:
        """A bulk write, then a checkpoint (see cypher/checkpoint.kuzu.cypher for why)."""
        self._run(name, parameters)
        self._run("checkpoint")

    def ensure_schema(self) -> None:
        for statement in split_statements(load_query("schema", self.dialect)):
            self._conn.execute(statement)

    def write_nodes(self, dataset: str, nodes: pa.Table) -> int:
        check_dataset_name(dataset)
        nodes = conform_table(nodes, NODE_SCHEMA, "node")
        rows = nodes.set_column(1, "features", _features_to_blob(nodes.column("features")))
        rows = rows.append_column("uid", _uids(dataset, nodes.column("key"))).append_column(
            "dataset", pa.array([dataset] * nodes.num_rows, pa.string())
        )
        if rows.num_rows:
            self._bulk("upsert_nodes", {"rows": rows})
        return rows.num_rows

    def replace_edges(self, dataset: str, edges: pa.Table) -> int:
        check_dataset_name(dataset)
        edges = conform_table(edges, EDGE_SCHEMA, "edge")
        self._bulk("delete_edges", {"dataset": dataset})
        rows = pa.table(
            {
                "from": _uids(dataset, edges.column("source")),
                "to": _uids(dataset, edges.column("target")),
                "weight": edges.column("weight"),
                "dataset": pa.array([dataset] * edges.num_rows, pa.string()),
            }
        )
        if rows.num_rows:
            self._bulk("insert_edges", {"edges": rows})
        return rows.num_rows

    def read_subgraph(self, dataset: str, with_features: bool = True) -> SubGraph:
        check_dataset_name(dataset)
        nodes = self._run("read_nodes", {"dataset": dataset}).get_as_arrow()
        if with_features:
            index = nodes.column_names.index("features")
            nodes = nodes.set_column(index, "features", _blob_to_features(nodes.column("features")))
        else:
            nodes = nodes.drop_columns(["features"])
        edges = self._run("read_edges", {"dataset": dataset}).get_as_arrow()
        return subgraph_from_tables(nodes, edges)

    def count_nodes(self, dataset: str) -> int:
        check_dataset_name(dataset)
        return int(self._run("count_nodes", {"dataset": dataset}).get_next()[0])

    def write_predictions(self, dataset: str, predictions: pa.Table) -> int:
        check_dataset_name(dataset)
        predictions = conform_table(predictions, PREDICTION_SCHEMA, "prediction")
        rows = predictions.append_column("uid", _uids(dataset, predictions.column("key")))
        if rows.num_rows:
            self._bulk("write_predictions", {"rows": rows})
        return rows.num_rows

    def write_run(self, run: LabelRunRecord) -> None:
        self._run(
            "write_run",
            {
                "run_id": run.run_id,
                "dataset": run.dataset,
                "solver": run.solver,
                "parameters": json.dumps(run.parameters, sort_keys=True, default=str),
                "metrics": json.dumps(run.metrics, sort_keys=True, default=str),
                "timings": json.dumps(run.timings, sort_keys=True),
                "started_at": run.started_at.to_pydatetime().replace(tzinfo=None),
                "finished_at": run.finished_at.to_pydatetime().replace(tzinfo=None),
                "n_nodes": run.n_nodes,
                "n_labeled": run.n_labeled,
                "n_flagged": run.n_flagged,
            },
        )

    def query(self, cypher: str, parameters: dict[str, Any] | None = None) -> pd.DataFrame:
        return self._conn.execute(cypher, parameters or {}).get_as_arrow().to_pandas()

    def close(self) -> None:
        self._conn.close()
        self._db.close()
