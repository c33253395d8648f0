"""Graph stores behind one port (`GraphStore`): Kùzu embedded (default) and Neo4j + GDS.
May import ``similarity`` (the local edge builder), nothing else of the project.

``open_store(uri)`` picks the adapter from the URI: ``neo4j://``, ``neo4j+s://``,
``bolt://`` or ``bolt+s://`` open Neo4j; anything else opens the embedded store: a folder
(the engine whose database file it holds; a new one gets the default engine, Kùzu),
``kuzu://FOLDER`` or ``ladybug://FOLDER`` (that engine; ``graphstore.kuzu_store`` says why
the engine is part of the store's address rather than a process setting). Without a URI
the store is ``$GRAPHLABEL_STORE`` or ``.graphlabel/``. A Neo4j URI must not carry
credentials (``graphstore.secrets`` says why and where the password comes from instead);
errors quote URIs through ``redact_uri``.
"""

from __future__ import annotations

import os
import re

from .errors import StoreLocked, StoreNotFound, StoreSetupError, StoreUnavailable
from .port import BuiltGraph, GraphStore
from .runs import LabelRunRecord
from .schemas import SubGraph, check_dataset_name
from .secrets import StoreConnectionError, check_store_uri, redact, redact_uri

DEFAULT_STORE = ".graphlabel"
NEO4J_SCHEMES = ("neo4j://", "neo4j+s://", "neo4j+ssc://", "bolt://", "bolt+s://", "bolt+ssc://")
#: The embedded engines' schemes (graphstore/kuzu_store.py ENGINES).
EMBEDDED_SCHEMES = ("kuzu://", "ladybug://")
#: A store named HOST:PORT with no scheme: a server's address that lost its bolt://.
HOST_AND_PORT = re.compile(r"(localhost|\d{1,3}(\.\d{1,3}){3}|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+):\d{1,5}")


def default_store_uri() -> str:
    return os.environ.get("GRAPHLABEL_STORE") or DEFAULT_STORE


def open_store(uri: str | None = None, *, create: bool = False, **options) -> GraphStore:
    """Open the store named by ``uri`` (see the module docstring).

    ``create``: make an embedded store where there is none (``ingest`` and ``demo`` do);
    otherwise a missing one raises ``StoreNotFound``. A Neo4j database is never created."""
    uri = uri or default_store_uri()
    if uri.startswith(NEO4J_SCHEMES):
        check_store_uri(uri)  # before the driver is even imported
        from .neo4j_store import Neo4jStore  # the driver is loaded only for Neo4j runs

        return Neo4jStore.from_uri(uri, **options)
    from .kuzu_store import KuzuStore

    engine, folder = embedded_folder(uri)
    return KuzuStore(folder, engine=engine, create=create, **options)


def embedded_folder(uri: str) -> tuple[str | None, str]:
    """``(engine, folder)`` of an embedded store's URI: ``("ladybug", "x")`` for
    ``ladybug://x``, ``(None, "x")`` for the folder ``x`` (the engine its file says).
    Any other scheme is refused: "NEO4J://..." or "http://..." must not become the name of
    a folder."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        if HOST_AND_PORT.fullmatch(uri) and not os.path.exists(uri):
            # a newcomer's --store 127.0.0.1:7687 became a new folder of that name
            from .kuzu_store import default_engine

            raise ValueError(f"store {uri!r} looks like a server's address: a Neo4j store is bolt://{uri}"
                             f" (or neo4j://{uri}); an embedded store's folder of that name is"
                             f" {default_engine()}://{uri}")
        return None, uri
    if f"{scheme}://" not in EMBEDDED_SCHEMES:
        raise ValueError(f"unsupported store URI {redact_uri(uri)}: use a folder, "
                         f"{', '.join(s + 'FOLDER' for s in EMBEDDED_SCHEMES)} or one of {', '.join(NEO4J_SCHEMES)}")
    return scheme, rest


__all__ = ["GraphStore", "SubGraph", "LabelRunRecord", "BuiltGraph", "StoreSetupError", "StoreUnavailable",
           "open_store", "default_store_uri", "embedded_folder", "EMBEDDED_SCHEMES", "NEO4J_SCHEMES",
           "check_dataset_name", "StoreConnectionError", "StoreLocked", "StoreNotFound", "check_store_uri", "redact",
           "redact_uri"]
