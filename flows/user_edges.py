"""``ingest-edges``: the user's own edges from a file into the embedded store
(``labelling.edgefiles`` checks the rows, ``GraphStore.write_user_edges`` stores them).
graphlabel reads them when a graph names them (``--graph edges:TYPE``) and never writes or
deletes them otherwise (graphstore/user_edges.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from graphstore import check_dataset_name, open_store
from graphstore.identifiers import check_identifier
from graphstore.schemas import EDGE_SCHEMA
from labelling.edgefiles import parse_edges

from .direct import flow, run_logger
from .labelling import run_name_from_parameters

DEFAULT_EDGE_TYPE = "EDGE"


class NoValidEdges(ValueError):
    """Not a single edge of the file could be stored; ``.rejects`` holds every row."""

    def __init__(self, message: str, rejects: pd.DataFrame) -> None:
        super().__init__(message)
        self.rejects = rejects


@flow("ingest-edges", flow_run_name=run_name_from_parameters("ingest-edges"), data_errors=(NoValidEdges,))
def ingest_edges_flow(source: str, dataset: str, source_column: str, target_column: str,
                      weight_column: str | None = None, edge_type: str = DEFAULT_EDGE_TYPE,
                      store_uri: str | None = None, rejects_path: str | None = None,
                      encoding: str = "utf-8") -> dict:
    """Replace the dataset's user edges of type ``edge_type`` with the valid rows of the file
    ``source``; the rejected rows (reasons in ``labelling.edgefiles``) go to
    ``rejects_path`` (default ``DATASET.edge-rejects.csv``). The file is the type's whole
    edge list: loading it again gives the same edges, not twice as many.

    The nodes at either end of an edge added, removed or reweighted are marked changed
    (``GraphStore.write_user_edges``), so the next incremental run relabels around them.

    Returns ``dataset``, ``edge_type``, ``stored``, ``changed_nodes`` (0 before the
    dataset's first run, which labels every node), ``rejected``, ``reject_reasons`` and
    ``rejects_file``."""
    check_dataset_name(dataset)
    check_identifier(edge_type, "edge type (--type)")
    rejects = Path(rejects_path) if rejects_path else Path(f"{dataset}.edge-rejects.csv")
    with open_store(store_uri) as store:
        if not store.loads_user_edges:  # before the file is read
            store.write_user_edges(dataset, edge_type, EDGE_SCHEMA.empty_table())  # raises, saying why
        keys = store.read_subgraph(dataset, with_features=False).keys
        if not len(keys):
            raise ValueError(f"dataset {dataset!r} has no nodes: ingest the nodes first (graphlabel ingest)")
        parsed = parse_edges(source, source_column=source_column, target_column=target_column, node_keys=keys,
                             weight_column=weight_column, encoding=encoding)
        if len(parsed.rejects):
            rejects.parent.mkdir(parents=True, exist_ok=True)
            parsed.rejects.to_csv(rejects, index=False)
        if not parsed.edges.num_rows:
            raise NoValidEdges(f"no valid edge in {source}: all {len(parsed.rejects)} rows rejected"
                               + (f", reasons in {rejects}" if len(parsed.rejects) else ""), parsed.rejects)
        written = store.write_user_edges(dataset, edge_type, parsed.edges)
        # said only when a run will extend the labels: a dataset's first run labels every node
        labelled = not store.read_runs(dataset=dataset, limit=1).empty
    stored = written.stored
    summary = {"dataset": dataset, "edge_type": edge_type, "stored": stored,
               "changed_nodes": written.changed_nodes if labelled else 0, "rejected": len(parsed.rejects),
               "reject_reasons": parsed.reject_counts, "rejects_file": str(rejects) if len(parsed.rejects) else None}
    run_logger().info("stored %s %s edges in dataset %r, rejected %s rows", f"{stored:,}", edge_type, dataset,
                      f"{len(parsed.rejects):,}")
    if summary["changed_nodes"]:
        run_logger().info("%s nodes at the ends of added, removed or reweighted edges marked changed: the next"
                          " label run relabels around them", f"{written.changed_nodes:,}")
    if len(parsed.rejects):
        reasons = [r if len(r) <= 120 else r[:117] + "..." for r in pd.unique(parsed.rejects["reason"].astype(str))[:5]]
        run_logger().warning("%s of %s edge rows rejected (%s), reasons in %s; first: %s",
                             f"{len(parsed.rejects):,}", f"{stored + len(parsed.rejects):,}",
                             ", ".join(f"{kind}: {n:,}" for kind, n in parsed.reject_counts.items()), rejects,
                             "; ".join(reasons))
    return summary
