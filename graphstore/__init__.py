"""Graph stores behind one port (`GraphStore`): Kùzu embedded (default) and Neo4j + GDS.

``open_store(uri)`` picks the adapter from the URI: ``neo4j://``, ``neo4j+s://``,
``bolt://`` or ``bolt+s://`` open Neo4j; anything else (a folder, or ``kuzu://folder``)
opens the embedded Kùzu store. Without a URI the store is ``$GRAPHLABEL_STORE`` or
``.graphlabel/``.
"""

from __future__ import annotations

import os

from .base import GraphStore, LabelRunRecord, SubGraph, check_dataset_name

DEFAULT_STORE = ".graphlabel"
NEO4J_SCHEMES = ("neo4j://", "neo4j+s://", "neo4j+ssc://", "bolt://", "bolt+s://", "bolt+ssc://")


def default_store_uri() -> str:
    return os.environ.get("GRAPHLABEL_STORE") or DEFAULT_STORE


def open_store(uri: str | None = None, **options) -> GraphStore:
    """Open the store named by ``uri`` (see the module docstring)."""
    uri = uri or default_store_uri()
    if uri.startswith(NEO4J_SCHEMES):
        from .neo4j_store import Neo4jStore  # the driver is loaded only for Neo4j runs

        return Neo4jStore.from_uri(uri, **options)
    from .kuzu_store import KuzuStore

    return KuzuStore(uri.removeprefix("kuzu://"), **options)


__all__ = ["GraphStore", "SubGraph", "LabelRunRecord", "open_store", "default_store_uri", "check_dataset_name"]
