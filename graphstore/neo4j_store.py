"""The production store: Neo4j 5 with the Graph Data Science (GDS) plugin.

Talks to the server only through the official ``neo4j`` driver (``Driver.execute_query``,
a managed transaction the driver retries on transient errors; GDS calls in auto-commit
transactions, graphstore/neo4j_gds.py). All Cypher is in ``cypher/*.neo4j.cypher``; labels,
relationship types and property names come from ``Neo4jGraphConfig``, are validated and
backtick-quoted by ``graphstore.identifiers`` and written into the templates' ``${...}``
places; every value travels as a ``$parameter``.

Open decisions and the choices made here
----------------------------------------
- Nodes of a dataset: those with the configured node label whose ``dataset`` property
  equals the dataset name. ``Neo4jGraphConfig(dataset=None)`` means "every node with the
  label" (a user's own graph without a dataset property); the key is then unique per
  label and the dataset name only tags runs.
- Key constraint: a property uniqueness constraint on (dataset, key), or on key when there
  is no dataset property, created ``IF NOT EXISTS`` (Community Edition has these; node
  key constraints would need Enterprise). ``LabelRun.run_id`` gets one too. Keys must be
  strings (they are matched by equality on write-back); other key types are refused when
  read.
- Writes: UNWIND batches of ``batch_size`` rows (default 10,000), one managed transaction
  each (so each batch is retried whole on transient errors). MERGE for nodes and
  relationships and SET for predictions make every batch idempotent: a run that dies half
  way and is re-run ends in the state of one clean run. Deleting a dataset's edges goes
  by batches of node keys (``CALL {} IN TRANSACTIONS`` would need an auto-commit
  transaction, which the driver does not retry; a ``LIMIT`` loop rescans the emptied
  nodes on every batch).
- Ownership: graphlabel writes and deletes only relationships it created, which carry the
  edge marker property (``edge_marker``, default ``graphlabel_similarity``). A build into a
  type that holds a user's relationships between the dataset's nodes is refused; reading
  (labelling over the user's own relationships) needs no marker.
- Bounded waits: ``from_uri`` gives the driver a 5 s connection timeout and 5 s of
  managed-transaction retries (the driver's defaults are 30 s each). Prefect's task
  retries (1, 2, 4 s) come on top, so with the defaults a server killed mid-run failed the
  command after 128 s (four task attempts of 30 s); now it is about 40 s
  (tests/test_neo4j_live_faults.py measures it).
- Export: Cypher returning parallel columns (one record holding a list per column:
  ``collect(...)``), turned into Arrow/numpy arrays whole; no Record object per node or
  edge. GDS ``relationshipProperty.stream`` was not used because it needs a projection
  and returns GDS internal node ids that still need mapping to keys, and because it does
  not see relationships written outside GDS. A relationship without a weight reads as 1.0.
  The server builds each column list in memory: fine for millions of edges with a
  default heap; beyond that, paging by key range would be the next step (not done).
- Directions: the relationships are directed in Neo4j. ``gds.knn.write`` writes a pair
  once per direction in which it was found; reading keeps one row per unordered pair with
  the larger weight (the local builder's ``symmetrise="max"``). ``replace_edges`` writes
  one relationship per row, as given.
- Edge builder, chosen explicitly with ``Neo4jGraphConfig.edge_builder``: with ``"gds"``
  (default) ``build_edges`` builds kNN graphs with GDS kNN in the database
  (``build_knn_edges``); with ``"local"``, and for every other kind of graph (δ-graphs,
  the papers' graphs), the port's default builds them with ``similarity`` and writes
  them with ``replace_edges``. An incremental run's new nodes are searched locally with
  either builder (below).
- GDS kNN (weights, δ-graphs, determinism, version and presence checks, the projection's
  life): see graphstore/neo4j_gds.py. Its weights are the local builder's (Gaussian by
  default, as in the flows), computed exactly from kNN's score, the σ
  the median distance to the farthest kept neighbour, as locally; ``"similarity"`` keeps
  GDS's score.
- History: the port writes only the latest prediction. To answer "what changed between
  two runs", the Neo4j write-back first moves the node's prediction and run id to
  ``previous_predicted_label`` / ``previous_label_run_id`` when the node was labelled by
  another run (not when the same run id is written again, so a crashed run re-run under
  its id shifts once). A re-run under a new run id after a crash records the crashed run
  as the previous one for the nodes it had reached.
- Timestamps: ``labelled_at``, ``started_at`` and ``finished_at`` are written as Neo4j
  LocalDateTime (UTC, no zone), as in the Kùzu store.
- Incremental runs (graphstore/changes.py, flows/incremental.py): ``write_nodes`` sends
  each row's content hash and sets ``updated_at`` only where the stored hash differs (two
  SET clauses: the first reads the old hash). New nodes get relationships to their exact
  nearest, found on the features the run read (the port's ``add_knn_edges``; GDS
  filtered kNN was slower and missed neighbours, neo4j_gds.py) and written with
  ``add_edges`` (MERGE batches); nothing is deleted. The build parameters live on a
  ``GraphBuild`` node (fixed label, keyed by dataset name).
- Runs of one dataset: a server serves every host's runs, so a build or labelling run
  holds the dataset's lease (a ``GraphlabelLease`` node, graphstore/neo4j_lease.py) and a
  second one waits; two builds at once left both graphs in the store.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from similarity.encoding import FeatureEncoding
from similarity.spec import GraphSpec

from . import neo4j_gds, neo4j_lease
from .changes import (
    content_hashes,
    graph_build_from_json,
    graph_build_json,
    label_state_table,
)
from .errors import NotFound, QueryFailed, StoreSetupError, StoreUnavailable, WriteRefused
from .explain import explanation, run_classes
from .identifiers import check_identifier, render
from .neo4j_config import Neo4jGraphConfig
from .port import BuiltGraph, GraphStore, OnProgress, UserEdgesWritten, no_progress
from .queries import load_query, split_statements, user_statement
from .runs import LabelRunRecord, check_status, naive_utc, runs_frame, runs_to_prune
from .schemas import (
    EDGE_SCHEMA,
    EXPORT_SCHEMA,
    NODE_OPTIONAL_COLUMNS,
    READ_PREDICTION_SCHEMA,
    STORED_NODE_SCHEMA,
    WRITTEN_PREDICTION_SCHEMA,
    SubGraph,
    check_dataset_name,
    check_decision,
    check_endpoints,
    check_limit,
    conform_table,
    subgraph_from_tables,
)
from .secrets import (
    StoreConnectionError,
    auth_hint,
    check_store_uri,
    neo4j_credentials,
    redact,
    redact_uri,
)
from .user_edges import checked_weights
from .waiting import lock_timeout_from_env

#: Bounded waits on a dead or unreachable server (the driver's defaults are 30 s each;
#: Prefect's task retries come on top, flows/tasks.py), and no server notifications: the
#: driver logs each one as a 1,000-character WARNING ("the label does not exist" on a
#: fresh database, "parameter missing" on EXPLAIN); the live suite checks graphlabel's
#: queries for deprecations with notifications on instead.
DRIVER_OPTIONS = {"connection_timeout": 5.0, "max_transaction_retry_time": 5.0,
                  "notifications_min_severity": "OFF"}
READ, WRITE = "r", "w"  # neo4j.RoutingControl.READ / WRITE (str enum)
NEO4J_USER_EDGES = ("on Neo4j the user's relationships are the user's own: create them with Cypher (graphlabel"
                    " query --write) and label over them with --graph edges:TYPE; ingest-edges loads edges into"
                    " the embedded store")


# How the driver (6.x) prints a server's error: its code, its message, then GQL fields whose
# description, "general processing exception - unexpected error ... See debug log", is
# the same for a wrong password, a syntax error and a division by zero.
_SERVER_ERROR = re.compile(r"\{neo4j_code: (?P<code>[^}]*)\} \{message: (?P<message>.*?)\} \{gql_status", re.S)


def _server_error_text(error: BaseException) -> str:
    """A driver error as "message (code)" when the server sent it, else as the driver's text,
    on one line (the driver's "Couldn't connect to ...:\nFailed to establish connection ..."
    made the CLI's one error line two)."""
    found = _SERVER_ERROR.search(str(error))
    return " ".join((f"{found['message']} ({found['code']})" if found else str(error)).split())


@contextmanager
def _unavailable_as_store_error() -> Iterator[None]:
    """The driver's transient errors (server gone, session expired, "try again") raised as
    the port's one ``StoreUnavailable``, which the flows retry; the rest as they are."""
    from neo4j.exceptions import ServiceUnavailable, SessionExpired, TransientError

    try:
        yield
    except (ServiceUnavailable, SessionExpired, TransientError) as error:
        raise StoreUnavailable(f"the Neo4j server did not answer: {type(error).__name__}:"
                               f" {_server_error_text(error)}") from error


def _plain(value: Any) -> Any:
    """A user query's value as plain data: a node as its properties, a relationship as its
    type and properties (``Record.data()`` gives a (start, type, end) tuple whose nodes are
    empty when the query returned only the relationship: its weight was lost), a path as
    its nodes and relationships in turn; lists and maps item by item."""
    from neo4j.graph import Node, Path, Relationship

    if isinstance(value, Node):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, Relationship):
        return {"type": value.type, **{key: _plain(item) for key, item in value.items()}}
    if isinstance(value, Path):
        steps: list[Any] = [_plain(value.start_node)]
        for relationship in value.relationships:
            steps += [_plain(relationship), _plain(relationship.end_node)]
        return steps
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _read_only_result(result):
    """``execute_query``'s result transformer for read-only user queries: the eager result,
    or ``WriteRefused`` (raised inside the transaction, which is then rolled back) when
    the statement changed anything."""
    eager = result.to_eager_result()
    counters = eager.summary.counters
    if counters.contains_updates or counters.contains_system_updates:
        raise WriteRefused()
    return eager


def _batches(table: pa.Table, size: int):
    for start in range(0, table.num_rows, size):
        yield table.slice(start, size).to_pylist()


@contextmanager
def _routing_errors_unlogged() -> Iterator[None]:
    """Drop the driver pool's ERROR records while the store opens: on a ``neo4j://`` address
    nothing answers, the driver logs "Unable to retrieve routing information" and then raises
    it, and with no handler of the application's Python printed the record on a line of its
    own above the command's one-line error, which says the same and what to check."""
    pool = logging.getLogger("neo4j.pool")
    quiet = _DropErrors()
    pool.addFilter(quiet)
    try:
        yield
    finally:
        pool.removeFilter(quiet)


class _DropErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


class Neo4jStore(GraphStore):
    """A Neo4j database (5.x, GDS plugin for ``build_knn_edges``) behind the store port.

    Parameters
    ----------
    driver : neo4j.Driver
        An open driver (tests pass a recording fake with the same ``execute_query``).
    config : Neo4jGraphConfig, optional
        Labels, property names, batch size and edge builder; today's names by default.
    database : str, optional
        Database name; None for the server's default database.
    ensure_schema : bool
        Create the key constraints (``IF NOT EXISTS``) on opening.
    """

    dialect = "neo4j"
    loads_user_edges = False  # the user's relationships are the user's (write_user_edges)

    def __init__(self, driver, config: Neo4jGraphConfig | None = None, *, database: str | None = None,
                 ensure_schema: bool = True) -> None:
        self.config = config if config is not None else Neo4jGraphConfig()
        if not isinstance(self.config, Neo4jGraphConfig):
            raise TypeError(f"config must be a Neo4jGraphConfig, got {type(self.config).__name__}")
        self.database = database or None
        self._driver = driver
        #: The server's GDS version, once ``neo4j_gds.gds_version`` has asked.
        self.gds_version: tuple[int, ...] | None = None
        self._queries: dict[str, str] = {}
        if ensure_schema:
            self.ensure_schema()

    @classmethod
    def from_uri(cls, uri: str, *, user: str | None = None, password: str | None = None,
                 database: str | None = None, ensure_schema: bool = True,
                 driver_options: dict[str, Any] | None = None, config: Neo4jGraphConfig | None = None,
                 **config_options: Any) -> Neo4jStore:
        """Connect to ``uri`` (neo4j://, bolt://, ...).

        The user defaults to ``$NEO4J_USER`` (else ``neo4j``), the password to
        ``$NEO4J_PASSWORD`` or the Prefect Secret block named by
        ``$GRAPHLABEL_NEO4J_PASSWORD_BLOCK`` (no authentication when neither is set; see
        ``graphstore.secrets``), the database to ``$NEO4J_DATABASE`` (else the server's
        default). Other keyword options are ``Neo4jGraphConfig`` fields; fields not given
        come from ``GRAPHLABEL_NEO4J_<FIELD>`` variables, then the defaults (so the CLI,
        which passes only the URI, is configured through the environment).

        Everything is validated before the driver is created: a URI with credentials, a
        hostile name or a bad option never reaches the server. A failure to connect (or to
        create the schema) raises ``StoreConnectionError`` with a redacted message and no
        chained driver exception, whose text could quote the URI or the password.
        """
        import neo4j  # loaded only for Neo4j runs

        check_store_uri(uri)
        if config is not None and config_options:
            raise ValueError("pass either config= or individual configuration options, not both")
        config = config if config is not None else Neo4jGraphConfig.from_env(**config_options)
        user, password = neo4j_credentials(user, password)
        database = database or os.environ.get("NEO4J_DATABASE") or None
        auth = (user, password) if password is not None else None
        driver, failure = None, None
        try:
            driver = neo4j.GraphDatabase.driver(uri, auth=auth, **{**DRIVER_OPTIONS, **(driver_options or {})})
            with _routing_errors_unlogged():
                driver.verify_connectivity()
            return cls(driver, config, database=database, ensure_schema=ensure_schema)
        except Exception as exc:  # noqa: BLE001 - every failure is re-raised below, redacted
            said = f"{type(exc).__name__}: {redact(_server_error_text(exc), password)}"
            # the hint first where there is one: the driver's own words ("Unsupported
            # authentication token, missing key `scheme`") tell a newcomer nothing to do
            failure = StoreConnectionError(
                f"could not open the Neo4j store at {redact_uri(uri)}: "
                + (f"{auth_hint(user, password)} (the server said {said})"
                   if isinstance(exc, neo4j.exceptions.AuthError) else said)
                + ("; is a Neo4j server running and listening there? (`make neo4j-up` starts the local one)"
                   if isinstance(exc, neo4j.exceptions.ServiceUnavailable) else ""))
            if driver is not None:
                with contextlib.suppress(Exception):  # the failure to report is the one above
                    driver.close()
        # Raised outside the except block so that the driver's exception is neither the
        # cause nor the context of this one: tracebacks and Prefect's logs print both.
        raise failure

    # -- plumbing -------------------------------------------------------------------------

    def cypher(self, name: str) -> str:
        """Query ``name`` of ``cypher/`` with this configuration's identifiers filled in."""
        if name not in self._queries:
            self._queries[name] = render(load_query(name, self.dialect), self.config.fragments())
        return self._queries[name]

    def _execute(self, query: str, parameters: dict[str, Any], routing: str = WRITE):
        # execute_query runs the query as a transaction function, which the driver retries
        # on transient errors (Driver.execute_query docstring in neo4j/_sync/driver.py;
        # https://neo4j.com/docs/python-manual/current/transactions/).
        with _unavailable_as_store_error():
            return self._driver.execute_query(query, parameters_=parameters, routing_=routing,
                                              database_=self.database)

    def _single(self, name: str, parameters: dict[str, Any], routing: str = WRITE):
        records = self._execute(self.cypher(name), parameters, routing).records
        return records[0] if records else None

    def _autocommit(self, name: str, parameters: dict[str, Any]) -> dict[str, Any] | None:
        """Query ``name`` in an auto-commit transaction, which the driver does not retry:
        for GDS calls, which change GDS's catalog or write in transactions of their own
        (neo4j_gds.py says why). Returns the first row."""
        with _unavailable_as_store_error(), self._driver.session(database=self.database) as session:
            rows = session.run(self.cypher(name), parameters).data()
        return rows[0] if rows else None

    def sum_batches(self, name: str, keys: list[str], per_node: int, parameters: dict[str, Any],
                    column: str, on_batch: Callable[[int], None] | None = None) -> int:
        """Run query ``name`` over ``keys`` in batches of nodes (``$keys``), sized so that a
        batch touches about ``batch_size`` relationships at ``per_node`` per node; one
        managed transaction each. ``on_batch`` hears how many of the keys are done: 0
        before the first batch (a stage shown from its start), then after each. Returns
        the sum of ``column`` over the batches."""
        size = max(1, self.config.batch_size // max(int(per_node), 1))
        total = 0
        if on_batch is not None:
            on_batch(0)
        for start in range(0, len(keys), size):
            record = self._single(name, {**parameters, "keys": keys[start:start + size]})
            total += int(record[column]) if record is not None else 0
            if on_batch is not None:
                on_batch(min(start + size, len(keys)))
        return total

    def node_keys(self, dataset: str) -> list[str]:
        """The keys of the dataset's nodes."""
        record = self._single("node_keys", {"dataset": dataset}, READ)
        return list(record["keys"]) if record is not None else []

    def check_edges_owned(self, dataset: str) -> None:
        """Refuse to build into a relationship type that holds relationships between the
        dataset's nodes which graphlabel did not create (no edge marker): a user's own."""
        record = self._single("unowned_edges", {"dataset": dataset}, READ)
        unowned = int(record["unowned"]) if record is not None else 0
        if unowned:
            marker, rel = self.config.edge_marker, self.config.relationship
            raise StoreSetupError(
                f"relationship type {rel!r} holds {unowned} relationships between nodes of dataset"
                f" {dataset!r} that graphlabel did not create (no {marker!r} property); graphlabel never"
                f" writes into or deletes a user's relationships: build into a relationship type of its"
                f" own (GRAPHLABEL_NEO4J_RELATIONSHIP, default SIMILAR) and label over the user's"
                f" relationships with --graph edges:TYPE[:WEIGHT_PROPERTY]")

    def delete_own_edges(self, dataset: str, keys: list[str] | None = None, per_node: int = 10,
                         on_batch: Callable[[int], None] | None = None) -> int:
        """Delete the similarity relationships graphlabel created from the dataset's nodes
        (the edge marker set), in batches of nodes (``on_batch`` as ``sum_batches``'s); a
        user's relationships stay."""
        keys = self.node_keys(dataset) if keys is None else keys
        return self.sum_batches("delete_edges", keys, per_node, {"dataset": dataset}, "deleted", on_batch)

    def _write_batches(self, name: str, table: pa.Table, parameters: dict[str, Any]) -> int:
        written = 0
        for rows in _batches(table, self.config.batch_size):
            record = self._single(name, {**parameters, "rows": rows})
            written += int(record["written"]) if record is not None else 0
        return written

    # -- the port -------------------------------------------------------------------------

    def ensure_schema(self) -> None:
        for statement in split_statements(self.cypher("schema")):
            self._execute(statement, {})

    def write_nodes(self, dataset: str, nodes: pa.Table) -> int:
        check_dataset_name(dataset)
        nodes = conform_table(nodes, STORED_NODE_SCHEMA, "node", NODE_OPTIONAL_COLUMNS)
        n_props = len(self.config.feature_properties)
        if n_props > 1 and nodes.num_rows:
            lengths = pa.compute.list_value_length(nodes.column("features")).to_numpy(zero_copy_only=False)
            if not np.all(lengths == n_props):
                raise ValueError(f"features must have {n_props} values, one per configured feature"
                                 f" property {self.config.feature_properties}")
        # change tracking: updated_at moves only where the hash differs (upsert_nodes.neo4j.cypher)
        rows = nodes.append_column("content_hash", pa.array(content_hashes(nodes), pa.int64()))
        now = pd.Timestamp.now(tz="UTC").tz_localize(None).to_pydatetime()
        self._write_batches("upsert_nodes", rows, {"dataset": dataset, "now": now})
        return nodes.num_rows

    def replace_edges(self, dataset: str, edges: pa.Table) -> int:
        check_dataset_name(dataset)
        edges = conform_table(edges, EDGE_SCHEMA, "edge")
        keys = self.node_keys(dataset)
        check_endpoints(dataset, edges, keys)  # before anything is deleted
        self.check_edges_owned(dataset)
        self.delete_own_edges(dataset, keys)
        self._write_batches("insert_edges", edges, {"dataset": dataset})
        return edges.num_rows

    def add_edges(self, dataset: str, edges: pa.Table) -> int:
        check_dataset_name(dataset)
        edges = conform_table(edges, EDGE_SCHEMA, "edge")
        if not edges.num_rows:
            return 0
        check_endpoints(dataset, edges, self.node_keys(dataset))  # MATCH would drop such a row unsaid
        self.check_edges_owned(dataset)  # an incremental run adds only to a type of graphlabel's own
        self._write_batches("add_edges", edges, {"dataset": dataset})
        return edges.num_rows

    def read_user_edges(self, dataset: str, edge_type: str, weight_property: str | None = None) -> pa.Table:
        check_dataset_name(dataset)
        check_identifier(edge_type, "relationship type")
        if weight_property is not None:
            check_identifier(weight_property, "weight property")
        if edge_type == self.config.relationship:
            raise ValueError(f"{edge_type!r} is graphlabel's own relationship type (GRAPHLABEL_NEO4J_RELATIONSHIP):"
                             " the user's edges must be of another type")
        record = self._single("read_user_edges", {"dataset": dataset, "edge_type": edge_type,
                                                  "weight_property": weight_property}, READ)
        source = list(record["source"]) if record is not None else []
        target = list(record["target"]) if record is not None else []
        raw = [cell[0] for cell in record["weight"]] if record is not None else []
        return checked_weights(source, target, None if weight_property is None else raw, edge_type,
                               weight_property, dataset)

    def write_user_edges(self, dataset: str, edge_type: str, edges: pa.Table) -> UserEdgesWritten:
        raise StoreSetupError(NEO4J_USER_EDGES)


    def read_label_state(self, dataset: str) -> pa.Table:
        check_dataset_name(dataset)
        columns = self._single("read_label_state", {"dataset": dataset}, READ)
        if columns is None:
            return label_state_table([], [], [], [])
        has_predicted = np.asarray(columns["has_predicted"], dtype=bool)
        predicted = [value if present else None for value, present in zip(columns["predicted"], has_predicted,
                                                                           strict=True)]
        return label_state_table(columns["keys"], columns["changed"], columns["labelled"], predicted)

    def read_predictions(self, dataset: str) -> pa.Table:
        check_dataset_name(dataset)
        record = self._single("read_predictions", {"dataset": dataset}, READ)
        rows = record["rows"] if record is not None else []
        return pa.Table.from_pylist([dict(zip(READ_PREDICTION_SCHEMA.names, row)) for row in rows],
                                    schema=READ_PREDICTION_SCHEMA)

    def write_graph_build(self, dataset: str, spec: dict[str, Any]) -> None:
        check_dataset_name(dataset)
        self._single("write_graph_build", {
            "dataset": dataset, "spec": graph_build_json(spec),
            "built_at": pd.Timestamp.now(tz="UTC").tz_localize(None).to_pydatetime()})

    def read_graph_build(self, dataset: str) -> dict[str, Any] | None:
        check_dataset_name(dataset)
        record = self._single("read_graph_build", {"dataset": dataset}, READ)
        if record is None:
            return None
        spec = graph_build_from_json(record["spec"])
        built_at = naive_utc(record["built_at"])
        spec["built_at"] = None if built_at is None else pd.Timestamp(built_at)
        return spec

    def write_feature_columns(self, dataset: str, columns: dict[str, Any]) -> None:
        check_dataset_name(dataset)
        self._single("write_feature_columns", {
            "dataset": dataset, "columns": json.dumps(columns),
            "recorded_at": pd.Timestamp.now(tz="UTC").tz_localize(None).to_pydatetime()})

    def read_feature_columns(self, dataset: str) -> dict[str, Any] | None:
        check_dataset_name(dataset)
        record = self._single("read_feature_columns", {"dataset": dataset}, READ)
        return None if record is None else json.loads(record["columns"])

    def read_subgraph(self, dataset: str, with_features: bool = True, with_edges: bool = True) -> SubGraph:
        check_dataset_name(dataset)
        nodes = self._node_table(dataset, with_features)
        edge_columns = (self._single("read_edges", {"dataset": dataset}, READ) if with_edges
                        else {"source": [], "target": [], "weight": []})
        if edge_columns is not None and edge_columns.get("unweighted"):
            raise StoreSetupError(
                f"the similarity graph of dataset {dataset!r} is half built ({edge_columns['unweighted']}"
                f" relationships without a {self.config.weight!r}: a graph build stopped before it"
                f" finished); build it again (graphlabel build-graph, or label --rebuild-graph)")
        edges = pa.table({
            "source": pa.array(edge_columns["source"], pa.string()),
            "target": pa.array(edge_columns["target"], pa.string()),
            "weight": pa.array(edge_columns["weight"], pa.float64()),
        })
        return subgraph_from_tables(nodes, edges)

    def _node_table(self, dataset: str, with_features: bool) -> pa.Table:
        """The dataset's nodes as ``subgraph_from_tables`` takes them: key, label, the
        optional columns, and the features (null where a node has none) when asked."""
        name = "read_nodes" if with_features else "read_nodes_without_features"
        node_columns = self._single(name, {"dataset": dataset}, READ)
        if node_columns["keyless"]:
            raise ValueError(f"{node_columns['keyless']} nodes of dataset {dataset!r} have no key"
                             f" property {self.config.key!r}")
        try:
            keys = pa.array(node_columns["keys"], pa.string())
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ValueError(f"key property {self.config.key!r} must hold strings on every node") from exc
        labels = pa.array(node_columns["labels"], pa.string())
        has_label = pa.array(node_columns["has_label"], pa.bool_())
        columns = {"key": keys, "label": pa.compute.if_else(has_label, labels, pa.scalar(None, pa.string()))}
        if node_columns.get("has_categories") is not None:  # read_nodes*.neo4j.cypher return both
            columns["categories"] = pa.compute.if_else(pa.array(node_columns["has_categories"], pa.bool_()),
                                                       pa.array(node_columns["categories"], pa.list_(pa.string())),
                                                       pa.scalar(None, pa.list_(pa.string())))
        if node_columns.get("has_confidence") is not None:
            columns["label_confidence"] = pa.array(node_columns["label_confidence"], pa.float64(),
                                                   mask=~np.asarray(node_columns["has_confidence"], dtype=bool))
        if with_features:
            features = pa.array(node_columns["features"], pa.list_(pa.float64()))
            has_features = pa.array(node_columns["has_features"], pa.bool_())
            columns["features"] = pa.compute.if_else(has_features, features,
                                                     pa.scalar(None, pa.list_(pa.float64())))
        return pa.table(columns)

    def count_nodes(self, dataset: str) -> int:
        check_dataset_name(dataset)
        return int(self._single("count_nodes", {"dataset": dataset}, READ)["nodes"])

    def dataset_names(self) -> list[str]:
        return [record["dataset"] for record in self._execute(self.cypher("dataset_names"), {}, READ).records]

    def has_edges(self, dataset: str) -> bool:
        check_dataset_name(dataset)
        return self._single("has_edges", {"dataset": dataset}, READ) is not None

    def feature_lengths(self, dataset: str) -> dict[int, int]:
        check_dataset_name(dataset)
        records = self._execute(self.cypher("feature_lengths"), {"dataset": dataset}, READ).records
        return {int(record["length"]): int(record["nodes"]) for record in records if record["length"] is not None}

    def write_predictions(self, dataset: str, predictions: pa.Table) -> int:
        """Set the prediction properties; returns how many nodes were matched by key."""
        check_dataset_name(dataset)
        predictions = conform_table(predictions, WRITTEN_PREDICTION_SCHEMA, "prediction")
        return self._write_batches("write_predictions", predictions, {"dataset": dataset})

    def write_run(self, run: LabelRunRecord) -> None:
        # Neo4j properties cannot hold maps: the dictionaries go as JSON text; a null
        # (finished_at of a running run, error of a successful one) removes the property.
        self._single("write_run", run.properties())

    def read_runs(self, dataset: str | None = None, run_id: str | None = None,
                  limit: int = 20, status: str | None = None) -> pd.DataFrame:
        if dataset is not None:
            check_dataset_name(dataset)
        limit = check_limit(limit, "limit")
        records = self._execute(self.cypher("read_runs"), {"dataset": dataset, "run_id": run_id, "max_rows": limit,
                                                           "status": check_status(status)}, READ).records
        return runs_frame(record.data() for record in records)

    def interrupt_run(self, run_id: str, seen: Any, error: str) -> bool:
        record = self._single("interrupt_run", {"run_id": run_id, "seen": naive_utc(seen), "error": error})
        return bool(record["marked"]) if record is not None else False

    def prune_runs(self, dataset: str, keep_last: int) -> int:
        check_dataset_name(dataset)
        records = self._execute(self.cypher("run_history"), {"dataset": dataset}, READ).records
        history = pd.DataFrame([record.data() for record in records], columns=["run_id", "status", "started_at"])
        history["started_at"] = pd.to_datetime([naive_utc(value) for value in history["started_at"]])
        doomed = runs_to_prune(history, keep_last)
        deleted = 0
        # one managed transaction per batch, each re-checking the runs it must never delete
        for start in range(0, len(doomed), self.config.batch_size):
            record = self._single("delete_runs", {"dataset": dataset,
                                                  "run_ids": doomed[start:start + self.config.batch_size]})
            deleted += int(record["deleted"]) if record is not None else 0
        return deleted

    def node_features(self, dataset: str, key: str) -> np.ndarray | None:
        check_dataset_name(dataset)
        record = self._single("node_features", {"dataset": dataset, "key": key}, READ)
        if record is None:
            raise NotFound(f"no node with key {key!r} in dataset {dataset!r}")
        features = record["features"]
        if features is None or any(value is None for value in features):
            return None
        return np.asarray(features, dtype=np.float64)

    def write_model(self, run_id: str, model: bytes) -> None:
        # a byte-array property of the run node (write_model.neo4j.cypher says why)
        record = self._single("write_model", {"run_id": str(run_id), "model": bytes(model)})
        if record is None or not int(record["written"]):
            raise ValueError(f"no run {run_id!r} in the store to keep a model with")

    def read_model(self, run_id: str) -> bytes | None:
        record = self._single("read_model", {"run_id": str(run_id)}, READ)
        return None if record is None or record["model"] is None else bytes(record["model"])

    def explain(self, dataset: str, key: str, limit: int = 10) -> tuple[dict[str, Any], pd.DataFrame]:
        check_dataset_name(dataset)
        if not isinstance(key, str):
            raise TypeError(f"key must be a string, got {type(key).__name__}")
        limit = check_limit(limit, "limit")
        node = self._single("explain_node", {"dataset": dataset, "key": key}, READ)
        if node is None:
            return explanation(None, [], dataset, key)  # raises NotFound naming key and dataset
        records = self._execute(self.cypher("explain_neighbours"),
                                {"dataset": dataset, "key": key, "max_rows": limit}, READ).records
        row = node.data()
        return explanation(row, [record.data() for record in records], dataset, key, run_classes(row, self.read_runs))

    def read_export(self, dataset: str) -> pa.Table:
        check_dataset_name(dataset)
        record = self._single("read_export", {"dataset": dataset}, READ)
        rows = [dict(zip(EXPORT_SCHEMA.names, row)) for row in (record["rows"] if record is not None else [])]
        for row in rows:  # the driver's LocalDateTime as a naive datetime
            row["labelled_at"] = naive_utc(row["labelled_at"])
        return pa.Table.from_pylist(rows, schema=EXPORT_SCHEMA)

    def given_label_counts(self, dataset: str) -> dict[str, int]:
        check_dataset_name(dataset)
        records = self._execute(self.cypher("given_label_counts"), {"dataset": dataset}, READ).records
        return {record["label"]: int(record["nodes"]) for record in records}

    def reviewed_labels(self, dataset: str) -> dict[str, str]:
        check_dataset_name(dataset)
        records = self._execute(self.cypher("reviewed_labels"), {"dataset": dataset}, READ).records
        return {record["key"]: record["label"] for record in records}

    def record_decision(self, dataset: str, key: str, decision: str, label: str | None, reviewer: str,
                        decided_at: pd.Timestamp, decision_id: str) -> dict[str, Any]:
        check_dataset_name(dataset)
        check_decision(decision, label)
        record = self._single("record_decision", {
            "key": key, "dataset": dataset, "decision": decision, "label": label, "reviewer": str(reviewer),
            "decided_at": naive_utc(decided_at), "decision_id": decision_id})
        if record is None:
            raise NotFound(f"no node with key {key!r} in dataset {dataset!r}")
        return record.data()

    def drop_dataset(self, dataset: str) -> dict[str, int]:
        """The port's drop; a store configured without a dataset property is refused (every
        node with the label would go). Not one transaction: the nodes go in batches, and a
        drop that stops half way is finished by running it again."""
        check_dataset_name(dataset)
        if self.config.dataset is None:
            raise StoreSetupError("this Neo4j store has no dataset property (GRAPHLABEL_NEO4J_DATASET is empty):"
                                  " dropping a dataset would delete every node labelled"
                                  f" {self.config.node_label!r}; delete them yourself if that is meant")
        keys = self.node_keys(dataset)
        counts = {"nodes": len(keys), "runs": len(self.read_runs(dataset=dataset, limit=1_000_000)),
                  "decisions": int(self._single("count_decisions", {"dataset": dataset}, READ)["decisions"])}
        for statement in split_statements(self.cypher("drop_dataset")):
            self._execute(statement, {"dataset": dataset})
        self.delete_own_edges(dataset, keys)
        self.sum_batches("drop_nodes", keys, 10, {"dataset": dataset}, "deleted")
        return counts

    def query(self, cypher: str, parameters: dict[str, Any] | None = None, *, write: bool = False) -> pd.DataFrame:
        from neo4j.exceptions import ClientError

        statement = user_statement(cypher, parameters)
        try:
            if write:
                result = self._execute(statement, parameters or {}, WRITE)
            else:
                # Routed to a reader, and checked inside the transaction: a statement whose
                # summary counts any update raises there, so the driver rolls it back (on a
                # single server the access mode alone may not stop a write).
                with _unavailable_as_store_error():
                    result = self._driver.execute_query(statement, parameters_=parameters or {}, routing_=READ,
                                                        database_=self.database,
                                                        result_transformer_=_read_only_result)
        except ClientError as error:
            # what a live 5.26 server answers to a write in a READ session (found by the
            # live suite: the raw driver error reached the user)
            if error.code == "Neo.ClientError.Statement.AccessMode":
                raise WriteRefused() from None
            raise QueryFailed(_server_error_text(error)) from None
        return pd.DataFrame([[_plain(value) for value in record.values()] for record in result.records],
                            columns=list(result.keys))

    # -- GDS kNN (graphstore/neo4j_gds.py) ---------------------------------------------

    def _gds_builds(self, spec: GraphSpec) -> bool:
        """GDS builds kNN graphs when configured to (``edge_builder="gds"``); every other
        graph is built locally (the port's default)."""
        return self.config.edge_builder == "gds" and spec.kind == "knn"

    def check_edge_builder(self, spec: GraphSpec, dataset: str | None = None) -> None:
        if self._gds_builds(spec):
            neo4j_gds.gds_version(self)
        if dataset is not None and spec.similarity_kind is not None:
            self.check_edges_owned(dataset)

    def build_edges(self, dataset: str, spec: GraphSpec, on_progress: OnProgress | None = None) -> BuiltGraph:
        if not self._gds_builds(spec):
            return super().build_edges(dataset, spec, on_progress)
        k, metric, weights = spec.knn
        report = on_progress or no_progress
        # the fit (neo4j_gds's docstring)
        report("read features", 0, None, "nodes")
        graph = self.read_subgraph(dataset, with_features=True, with_edges=False)
        if graph.n_nodes and graph.features is None:
            raise ValueError(graph.mixed_lengths(dataset))
        report("read features", graph.n_nodes, None, "nodes")
        encoding = FeatureEncoding.fit(graph.features, graph.categories, spec.scale)
        return self.build_knn_edges(dataset, k=k, metric=metric, weights=weights, sigma=spec.sigma,
                                    symmetrise=spec.symmetrise or "max", encoding=encoding, on_progress=report)

    def add_knn_edges(self, dataset: str, graph: SubGraph, new: np.ndarray, spec: GraphSpec,
                      on_progress: OnProgress | None = None) -> pa.Table:
        """The port's exact search (GDS's kNN builds graphs, not this: neo4j_gds.py says
        why), and nodes a user created in Neo4j without features (the embedded store's
        ingest makes none) neither searched for nor among: as a GDS build's projection
        leaves them out, they get no relationships and so no label."""
        lengths = graph.feature_lengths
        if graph.features is None and lengths is not None and len(np.unique(lengths[lengths > 0])) == 1:
            # the features of the others, read again (SubGraph keeps none of mixed lengths):
            # only on a dataset that holds such nodes
            nodes = self._node_table(dataset, with_features=True)
            nodes = nodes.filter(pa.compute.greater(pa.compute.list_value_length(nodes.column("features")), 0))
            complete = subgraph_from_tables(nodes, EDGE_SCHEMA.empty_table())
            position = pd.Index(complete.keys).get_indexer(pd.Index(graph.keys[np.asarray(new)]))
            return super().add_knn_edges(dataset, complete, position[position >= 0], spec, on_progress)
        return super().add_knn_edges(dataset, graph, new, spec, on_progress)

    def build_knn_edges(self, dataset: str, *, k: int = 10, metric: str = "euclidean",
                        weights: str = "gaussian", sigma: float | None = None,
                        similarity_cutoff: float | None = None, delta: float | None = None,
                        seed: int | None = None, deterministic: bool = False,
                        concurrency: int | None = None, sample_rate: float | None = None,
                        delta_threshold: float | None = None, max_iterations: int | None = None,
                        symmetrise: str = "max", encoding: FeatureEncoding | None = None,
                        on_progress: OnProgress | None = None) -> BuiltGraph:
        """Replace the dataset's similarity relationships with GDS kNN ones.

        Parameters
        ----------
        dataset : str
        k : int
            ``topK``: neighbours per node (the cap on them with ``delta``).
        metric : {"euclidean", "cosine"}
            kNN similarity on the feature vector (GDS ``EUCLIDEAN`` / ``COSINE``).
        weights : {"gaussian", "cosine", "binary", "similarity"}
            The local builder's weights, recomputed from the features; ``similarity``
            keeps GDS's score.
        sigma : float, optional
            Gaussian bandwidth; default the median distance to the farthest kept neighbour.
        similarity_cutoff : float, optional
            ``similarityCutoff``: pairs scoring lower are not written.
        delta : float, optional
            Also delete relationships longer than ``delta`` (δ-graph capped at k).
        seed : int, optional
            ``randomSeed`` (forces ``concurrency=1``, as GDS requires).
        deterministic : bool
            Reproducible run: ``randomSeed`` (``seed`` or 0) with ``concurrency=1``.
        concurrency, sample_rate, delta_threshold, max_iterations : optional
            Passed to GDS kNN when given (GDS defaults otherwise).
        symmetrise : {"max"}
            How the directed kNN lists become undirected on reading (only "max").
        encoding : FeatureEncoding, optional
            The fitted scaler and categorical vocabulary, applied in the projection
            (``similarity.encoding``); None: the features as stored.
        on_progress : OnProgress, optional
            Hears the build's stages (``neo4j_gds.build_knn`` names them).

        Returns
        -------
        BuiltGraph
            Similarity relationships the dataset has afterwards (directed, as written), and
            the Gaussian σ of their weights (the median one when not given).

        Raises
        ------
        StoreSetupError
            GDS is missing or too old, or the relationship type holds relationships
            graphlabel did not create between the dataset's nodes (checked before anything
            is deleted).
        """
        check_dataset_name(dataset)
        neo4j_gds.check_knn_spec(k, metric, weights)
        if sigma is not None and not sigma > 0:
            raise ValueError(f"sigma must be positive, got {sigma}")
        if delta is not None and not delta > 0:
            raise ValueError(f"delta must be positive, got {delta}")
        if similarity_cutoff is not None and not 0.0 <= similarity_cutoff <= 1.0:
            raise ValueError(f"similarity_cutoff must lie in [0, 1], got {similarity_cutoff}")
        if symmetrise != "max":
            raise ValueError(f"the GDS builder symmetrises with 'max' only, got {symmetrise!r};"
                             " use edge_builder='local' for other rules")
        options: dict[str, Any] = dict(seed=seed, deterministic=deterministic, concurrency=concurrency,
                                       similarity_cutoff=similarity_cutoff, sample_rate=sample_rate,
                                       delta_threshold=delta_threshold, max_iterations=max_iterations)
        neo4j_gds.knn_config(self, k, metric, **options)  # refuses bad options before any query
        if delta is not None and encoding is not None and encoding.center:
            raise ValueError("delta with scaled features is built locally (edge_builder='local'): the δ pruning"
                             " measures the stored features")
        return neo4j_gds.build_knn(self, dataset, k=int(k), metric=metric, weights=weights, sigma=sigma,
                                   delta=delta, knn_options=options, encoding=encoding, on_progress=on_progress)

    def dataset_lease(self, dataset: str, holder: str) -> contextlib.AbstractContextManager[None]:
        return neo4j_lease.dataset_lease(self._single, dataset, holder, lock_timeout_from_env())

    has_leases = True

    def lease_holder(self, dataset: str) -> str | None:
        row = self._single("read_lease", {"dataset": dataset}, routing=READ)
        return None if row is None else row["holder"]

    def close(self) -> None:
        self._driver.close()
