"""The embedded store: Kùzu, in-process, Cypher, Arrow in and out, on one of two engines.

Engines (``ENGINES``): ``ladybug``, Kùzu's maintained fork with the same Python API and
Cypher, and ``kuzu`` 0.11.3, the last release of an archived project (both dependencies).
The engine is a property of the store, not of the
process, because their database files are not compatible (each refuses the other's:
"not a valid Kuzu/Lbug database file"): each keeps its own file in the store folder
(``graph.kuzu`` / ``graph.lbug``), a plain folder opens whichever is there, and a URI says
which one to create or insist on (``kuzu://FOLDER``, ``ladybug://FOLDER``; ``open_store``).
A new store without a scheme gets ``$GRAPHLABEL_ENGINE``, else ``DEFAULT_ENGINE``,
ladybug, which keeps clear of kuzu 0.11.3's string-column defect at 1.11x kuzu's time end
to end at 1M (README "The embedded engine"; tests/engine_defect.py; ``python -m bench e2e_engines``
and ``python -m bench store`` measure both in the same run).

The two engines cannot share a process: both register the same native (pybind11) types,
so loading the second fails ("generic_type: type "Database" is already registered!") and
the process then crashes on exit. Each engine is imported only when a store of its kind is
opened, and opening the other kind in the same process is refused with a message instead
(``check_engine_free``); the tests run the engine's own tests and the store contract on
kuzu in a process of its own (tests/engines.py).
"""

from __future__ import annotations

import errno
import fcntl
import importlib
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .address_space import AddressRoom, address_room, database_bounds
from .changes import (
    content_hashes,
    graph_build_from_json,
    graph_build_json,
    label_state_table,
)
from .errors import (
    NotFound,
    QueryFailed,
    StoreNotFound,
    StoreOutOfMemory,
    StoreSetupError,
    WriteRefused,
)
from .explain import explanation, run_classes
from .port import GraphStore, UserEdgesWritten
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
    subgraph_from_positions,
)
from .user_edges import changed_endpoints, checked_weights
from .waiting import lock_timeout_from_env, wait_until_free

#: Engine → its database file in the store folder. The Python package has the engine's name.
ENGINES = {"kuzu": "graph.kuzu", "ladybug": "graph.lbug"}
#: Nodes (Entity-table offsets) whose features or relationships one query returns: Kùzu
#: keeps a query's whole result in its buffer pool and the Arrow copy doubles it, so the
#: features of 1M nodes read at once held 1.2 GB (kuzu 0.11.3), and a result larger than
#: the pool (``buffer_pool_bytes``) fails the query.
READ_SLICE = 200_000
#: ... and at most the pool's bytes over this many, where rows are wide (``_offset_slices``):
#: 200,000 nodes of 384 features (an embedding: 616 MB) failed in the 700 MiB pool their store
#: opened with. A slice of 32 features (54 MB) is an eighth of 512 MiB and stays 200,000.
READ_POOL_SHARE = 8
#: Offsets the first slice of a read spans, before a row's bytes are known (``_offset_slices``).
READ_PROBE = 1024
#: Kùzu's page cache, at least (``buffer_pool_bytes``). Its default, 80% of the machine's
#: memory, let every page a run read or wrote stay resident: labelling 1M nodes peaked at
#: 3.5 GB. Reads come in ``READ_SLICE``s and writes in batches in table order, so the pool
#: needs the working set, not the data: 512 MiB labels 1M nodes (256 MiB failed the
#: write-back's SET statements with "the buffer pool is full").
BUFFER_POOL_BYTES = 512 << 20


#: Pool bytes a COPY of relationships needs per relationship, beyond ``BUFFER_POOL_BYTES``:
#: one COPY of 67M relationships (10M nodes, 10-NN) failed in the 1.4 GiB pool the store
#: had and took 142 s in a 4 GiB one, where 5M-row COPYs into the growing table took 553 s
#: (each rewrites the relationship lists it touches; kuzu 0.11.3). 6.7M at 1M fit in 840 MiB.
COPY_BYTES_PER_RELATIONSHIP = 64
#: Rows of a node table in one node group, the unit in which the engine rewrites a column at a
#: checkpoint (``NODE_GROUP_SIZE`` of Kùzu's storage, 2^17).
NODE_GROUP_ROWS = 1 << 17
#: The pool a write of wide rows needs, in bytes per byte of a node group of such rows (as
#: Arrow hands them to the engine). Why: a row's bytes grow with its features (an embedding:
#: 384 numbers, 3 kB as a BLOB) and with the classes its scores hold, and what the engine
#: needs follows one node group of them, not the rows stored nor the ones written at once
#: (ladybug 0.22, a new store). 250,000 nodes of 384 features written in batches of 50,000
#: or 100,000 failed in the 512 MiB pool a store had ("the post-commit checkpoint failed:
#: ... buffer pool is full") and in 2 GiB, and passed in 2.9 GiB (7 times one node group's
#: bytes); 500,000 passed in 4 GiB. Predictions of 150 classes failed on 131,072 nodes in
#: 512 MiB and passed in 1.3 GiB (on 262,144 too), of 1,000 classes on 20,000 nodes failed in
#: 1 GiB and passed in 1.3 GiB. Rows of 32 features (0.3 kB) ask for 0.3 GiB: the 512 MiB
#: floor stays.
WIDE_ROW_POOL_FACTOR = 7


def buffer_pool_bytes(database: Path, relationships: int = 0, row_bytes: int = 0) -> int:
    """The pool a store opens with: ``BUFFER_POOL_BYTES`` and a quarter of the database
    file's size (the primary-key index and the pages a statement touches grow with the
    nodes: a 512 MiB pool failed to look up the keys of a batch into 8.5M stored nodes),
    or, for a COPY of ``relationships``, ``COPY_BYTES_PER_RELATIONSHIP`` each if that is
    more; for a write of nodes or predictions of ``row_bytes`` a row, at least
    ``WIDE_ROW_POOL_FACTOR`` times a node group of them; never more than Kùzu's own default
    of 80% of the memory."""
    import psutil

    stored = database.stat().st_size if database.is_file() else 0
    wanted = max(BUFFER_POOL_BYTES + max(stored // 4, COPY_BYTES_PER_RELATIONSHIP * relationships),
                 WIDE_ROW_POOL_FACTOR * NODE_GROUP_ROWS * row_bytes)
    return int(min(wanted, 0.8 * psutil.virtual_memory().total))


#: Prediction rows one SET statement writes (``write_predictions``): 1M rows did not fit in
#: a 1 GiB pool; per 100k the writes took as long as in one statement (kuzu 0.11.3).
WRITE_SLICE = 100_000
#: What both engines' errors say when the buffer pool cannot hold a statement's pages
#: (``StoreOutOfMemory``): an 8 MiB pool reading 60k nodes of 32 features, and the reads
#: of a store hit by kuzu 0.11.3's string-column defect (README, The embedded engine).
POOL_FULL = "Buffer manager exception"
#: ... and what ladybug's and kuzu's say when the database has filled its pages' region
#: (``max_db_size``, bounded under an address-space limit: ``graphstore.address_space``).
REGION_FULL = ("Maximum database size", "No more frame groups can be added")
#: The engine of a new store opened without a scheme: ladybug, which keeps clear of kuzu
#: 0.11.3's string-column defect (README "The embedded engine"; tests/engine_defect.py) at
#: 1.11x kuzu's time end to end (1M entities: 103.2 s against 92.5 s, medians of 2 rounds
#: in one run, bench/results/e2e_engines_full.md); a folder that holds a kuzu store still
#: opens as kuzu.
DEFAULT_ENGINE = "ladybug"
DATABASE_FILE = ENGINES[DEFAULT_ENGINE]
#: The environment variable that names the engine of a new store opened without a scheme,
#: for all of a user's stores (``kuzu`` for a user who needs kuzu's files).
ENGINE_ENV = "GRAPHLABEL_ENGINE"


def default_engine() -> str:
    """The engine of a new store opened without a scheme: ``$GRAPHLABEL_ENGINE``, else
    ``DEFAULT_ENGINE``."""
    engine = os.environ.get(ENGINE_ENV) or DEFAULT_ENGINE
    if engine not in ENGINES:
        raise ValueError(f"{ENGINE_ENV} must be one of {', '.join(ENGINES)}, got {engine!r}")
    return engine


#: The native module each engine loads; the other engine cannot load while it is there.
NATIVE_MODULES = {"kuzu": "kuzu._kuzu", "ladybug": "ladybug._lbug"}
INSTALL_HINTS = {engine: f"pip install graphlabel ({engine} is a dependency)" for engine in ENGINES}
#: The folder of the runs' models in the store folder (``KuzuStore.write_model``), one
#: ``RUN_ID.npz`` each.
MODELS_FOLDER = "models"
MODEL_FILE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}")
#: The file in the store folder whose lock a process holds while the store is open
#: (``_hold_store``).
STORE_LOCK_FILE = "graphlabel.lock"
#: The one weight property of the embedded store's user edges (USER_EDGE.weight).
USER_WEIGHT = "weight"
logger = logging.getLogger(__name__)


def _one_chunk(column: pa.ChunkedArray) -> pa.Array:
    """The column as one array: its chunk itself where it has one (``combine_chunks``
    copies even then: 1.0 s for a write-back slice of 100,000 nodes' 1,000 scores)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _floats_to_blob(lists: pa.ChunkedArray) -> pa.Array:
    """list<double> → one BLOB of little-endian float64 per row, null where the list is
    null (a node without scores), sharing the lists' values: no per-row object, no copy.

    Why a BLOB and not DOUBLE[]: in kuzu 0.11.3, re-setting a DOUBLE[] (or DOUBLE[d]) column
    on nodes that have relationships made the next checkpoint take 22 s for 20k nodes,
    against 0.1 s for a BLOB (bench/store.py measures the bulk paths); per-class scores on
    100k nodes with 1M relationships took 1.9 s as a BLOB, 147 s as DOUBLE[]
    (bench/results/scores_write.md). Why shared: a write-back slice of 100,000 nodes of
    1,000 classes is 0.8 GB of scores, and the copies made on the way to the engine took
    2.3 s of it. A null row keeps the span its list had, which Arrow allows and both engines
    read as null (measured, kuzu 0.11.3 and ladybug 0.22)."""
    flat = _one_chunk(lists)
    offsets = np.asarray(flat.offsets, dtype=np.int64)
    values = np.ascontiguousarray(flat.values.to_numpy(zero_copy_only=False), dtype="<f8")
    values = values[offsets[0]:offsets[-1]]
    validity = (None if flat.null_count == 0 else
                pa.py_buffer(np.packbits(np.asarray(flat.is_valid()), bitorder="little")))
    return pa.Array.from_buffers(pa.large_binary(), len(flat),
                                 [validity, pa.py_buffer((offsets - offsets[0]) * 8), pa.py_buffer(values)])


def _blob_to_features(blobs: pa.ChunkedArray) -> pa.Array:
    """The inverse of ``_floats_to_blob``: BLOB column → list<double>,
    null where the BLOB is null."""
    flat = blobs.combine_chunks().cast(pa.large_binary())
    validity, offsets_buffer, data = flat.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[flat.offset: flat.offset + len(flat) + 1]
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]] if data is not None else np.zeros(0, np.uint8)
    lists = pa.ListArray.from_arrays(pa.array((offsets - offsets[0]) // 8, pa.int64()).cast(pa.int32()),
                                     pa.array(raw.view("<f8").astype(np.float64)))
    return lists if validity is None else pa.compute.if_else(flat.is_valid(), lists, pa.scalar(None, lists.type))


def _offset_positions(offsets: np.ndarray) -> np.ndarray:
    """Row position of each Entity-table offset in ``offsets`` (-1 for an offset that is not
    there): an array indexed by offset, so a relationship's ends are looked up in numpy."""
    position = np.full(int(offsets.max()) + 1 if len(offsets) else 0, -1, dtype=np.int64)
    position[offsets] = np.arange(len(offsets))
    return position


def _row_positions(position: np.ndarray, offsets: pa.ChunkedArray) -> np.ndarray:
    """Rows of ``offsets`` by ``_offset_positions``' table (-1 where it has none)."""
    offsets = offsets.to_numpy().astype(np.int64, copy=False)
    inside = offsets < len(position)
    return np.where(inside, position[np.where(inside, offsets, 0)], -1)


def _float_blobs_decoded(array: pa.Array) -> pa.Array:
    """``array`` with every BLOB whose values are all multiples of 8 bytes read as a list of
    floats, also inside a node or relationship (a struct) and a list (``collect``): this
    store's BLOBs (``features``, ``label_scores``) are little-endian float64, where Neo4j
    keeps lists of floats."""
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        lengths = pa.compute.binary_length(array).to_numpy(zero_copy_only=False)
        return _blob_to_features(pa.chunked_array([array])) if np.all(np.nan_to_num(lengths, nan=0) % 8 == 0) \
            else array
    if pa.types.is_struct(array.type):
        return pa.StructArray.from_arrays([_float_blobs_decoded(field) for field in array.flatten()],
                                          names=[field.name for field in array.type], mask=array.is_null())
    if pa.types.is_list(array.type):  # offsets index the whole child, so a slice keeps its own
        return pa.ListArray.from_arrays(array.offsets, _float_blobs_decoded(array.values), mask=array.is_null())
    return array


def _frame(result) -> pd.DataFrame:
    """A user query's rows as the Neo4j adapter gives them; a statement that returns no
    columns (a write) gives none.

    Float64 BLOBs are read as lists of floats (``_float_blobs_decoded``: they showed as
    "<80 bytes>"); a list, a node or a relationship is a Python list or dict in its cell, not
    a numpy array (printed as "['a' 'b']" in a table or CSV, a traceback in JSON)."""
    if not result.get_column_names():
        return pd.DataFrame()
    table = result.get_as_arrow()
    frame = table.to_pandas()
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_nested(kind):
            decoded = _float_blobs_decoded(column.combine_chunks())
            frame[name] = pd.Series(decoded.to_pylist(), index=frame.index, dtype=object)
    return frame


def _roll_back(connection) -> None:
    """End the transaction a failed statement was in, if the engine has not already: it ends
    it itself after a binder, runtime or conversion error, not after a parser error or a
    refused write, and a ROLLBACK with none open raises "No active transaction", which hid
    the statement's own error (a misspelt property in ``graphlabel query`` said only that)."""
    try:
        connection.execute("ROLLBACK")
    except RuntimeError as error:
        if "No active transaction" not in str(error):
            raise


def _uids(dataset: str, keys: pa.Array) -> pa.Array:
    return pa.compute.binary_join_element_wise(dataset, keys, ":")



def check_engine_free(engine: str) -> None:
    """Raise ``StoreSetupError`` when the other embedded engine is loaded in this process
    (module docstring: loading both crashes the process)."""
    for other, native in NATIVE_MODULES.items():
        if other != engine and native in sys.modules:
            raise StoreSetupError(
                f"this process has already opened a {other} store, and the {engine} engine cannot be loaded"
                f" next to it (both register the same native types): open the {engine} store from another"
                " process")


def engine_module(engine: str) -> ModuleType:
    """The engine's Python package, imported now (only when a store of its kind opens)."""
    if engine not in ENGINES:
        raise ValueError(f"embedded engine must be one of {tuple(ENGINES)}, got {engine!r}")
    check_engine_free(engine)
    try:
        return importlib.import_module(engine)
    except ImportError as error:
        raise StoreSetupError(f"the {engine} engine is not installed ({error}): {INSTALL_HINTS[engine]}") from None


def stored_engines(folder: Path) -> list[str]:
    """The engines whose database file is in ``folder``."""
    return [engine for engine, name in ENGINES.items() if (folder / name).exists()]


def _open_database(module: ModuleType, path: Path, timeout: float, bounds: dict[str, int]):
    """The database at ``path`` opened with ``bounds`` (its pool, and under an address-space
    limit its pages' region: ``graphstore.address_space``), waiting
    up to ``timeout`` seconds while another process holds its lock (Kùzu lets one process
    at a time open a database for writing: a scheduled run and a user's ``query`` meet
    here). Says once that it waits, then either opens or raises ``StoreLocked``."""

    def attempt():
        try:
            return module.Database(str(path), **bounds)
        except RuntimeError as error:
            if "Mmap" in str(error):  # the address space could not hold the reservation
                raise StoreOutOfMemory(f"the store {path.parent} could not reserve its page cache and pages"
                                       f" ({error}): raise the address-space limit (ulimit -v) or lift it"
                                       " (ulimit -v unlimited)") from None
            if "lock" not in str(error).lower():
                raise
            return None

    return _waiting(attempt, path.parent, timeout)


#: The store locks this process holds (``_hold_store``): lock file → [handle, stores open].
#: One handle per file, because closing any descriptor of a file drops every POSIX lock
#: the process holds on it.
_HELD: dict[Path, list[Any]] = {}


def _hold_store(folder: Path, timeout: float) -> Path:
    """Hold an exclusive lock on the store folder's ``STORE_LOCK_FILE`` until
    ``_release_store``, waiting as ``_open_database`` does; returns the lock file. Why a
    lock of graphlabel's own beside Kùzu's: the store closes and opens its database
    several times a run (``_reopen``), and another graphlabel process polling for Kùzu's
    lock could take the database in that moment and keep it; it waits for this lock
    first, so it cannot. A POSIX record lock, per process as Kùzu's own is: a second store
    opened by the same process (a test beside its fixture) opens, as it did."""
    lock_file = (folder / STORE_LOCK_FILE).resolve()
    if lock_file in _HELD:
        _HELD[lock_file][1] += 1
        return lock_file

    def attempt():
        handle = open(lock_file, "ab")
        try:
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            handle.close()
            if error.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            return None
        return handle

    _HELD[lock_file] = [_waiting(attempt, folder, timeout), 1]
    return lock_file


def _release_store(lock_file: Path) -> None:
    """One store of this process closed: the lock goes with the last."""
    held = _HELD[lock_file]
    held[1] -= 1
    if held[1] == 0:
        del _HELD[lock_file]
        held[0].close()


def _waiting(attempt: Callable[[], Any], folder: Path, timeout: float) -> Any:
    """``attempt()`` until the store is free (``graphstore.waiting``)."""
    return wait_until_free(attempt, timeout, lambda: "another process", f"the store {folder}",
                           note=" (one process at a time can open it)")


class KuzuStore(GraphStore):
    """A Kùzu (or ladybug) database in the folder ``path``.

    Parameters
    ----------
    path : str or Path
        Folder of the store; the database file is ``path/graph.lbug`` (``graph.kuzu`` for
        kuzu).
    engine : {"kuzu", "ladybug"}, optional
        The engine; by default the one whose file the folder holds, ``default_engine()``
        for a new store. A folder holding the other engine's file is refused (the files are
        not compatible), as is a folder holding both without ``engine``.
    create : bool, default False
        Create the store when the folder holds none. Without it a missing store raises
        ``StoreNotFound``: a mistyped ``--store`` must not answer "0 rows" from a store
        made on the spot (only ingesting creates one).
    lock_timeout : float, optional
        Seconds to wait while another process holds the database (default
        ``$GRAPHLABEL_LOCK_TIMEOUT``, else 60); then ``StoreLocked``.
    """

    #: The Cypher files both engines run (``cypher/*.kuzu.cypher``); ``dialect`` names the
    #: engine, whose library a run's provenance records.
    cypher_dialect = "kuzu"

    def __init__(self, path: str | Path, *, engine: str | None = None, create: bool = False,
                 lock_timeout: float | None = None) -> None:
        self.path = Path(path)
        if engine is not None and engine not in ENGINES:
            raise ValueError(f"embedded engine must be one of {tuple(ENGINES)}, got {engine!r}")
        if self.path.exists() and not self.path.is_dir():
            raise StoreNotFound(f"the store path {self.path} is a file, not a store folder: check --store"
                                " or GRAPHLABEL_STORE")
        present = stored_engines(self.path)
        if engine is None:
            if len(present) > 1:
                raise StoreSetupError(f"the store folder {self.path} holds a database of each engine"
                                      f" ({', '.join(ENGINES[e] for e in present)}): say which with"
                                      f" {' or '.join(f'{e}://{self.path}' for e in present)}")
            engine = present[0] if present else default_engine()
        elif present and engine not in present:
            raise StoreSetupError(f"the store {self.path} is a {present[0]} store ({ENGINES[present[0]]}), not a"
                                  f" {engine} one (their files are not compatible): open it as"
                                  f" {present[0]}://{self.path} or as the folder {self.path}")
        if not create and engine not in present:
            raise StoreNotFound(f"no store at {self.path}: check --store or GRAPHLABEL_STORE (graphlabel ingest"
                                " creates a store)")
        module = engine_module(engine)
        self.engine = self.dialect = engine
        self.path.mkdir(parents=True, exist_ok=True)
        timeout = lock_timeout_from_env() if lock_timeout is None else lock_timeout
        self._file, self._timeout = self.path / ENGINES[engine], timeout
        self._lock_file: Path | None = _hold_store(self.path, timeout)
        try:
            self._room = address_room(self._file)  # before the engine reserves anything
            self._opened = self._bounds(buffer_pool_bytes(self._file))  # what the database opened with
            self._db = _open_database(module, self._file, timeout, self._opened)
        except BaseException:
            _release_store(self._lock_file)
            raise
        self._module = module
        self._conn = module.Connection(self._db)
        self.ensure_schema()

    def _run(self, name: str, parameters: dict[str, Any] | None = None):
        with self._pool_errors(name):
            return self._conn.execute(load_query(name, self.cypher_dialect), parameters or {})

    def _rows(self, name: str, parameters: dict[str, Any] | None = None) -> pa.Table:
        """A query's result as one Arrow table (where the engine reads most of the pages)."""
        result = self._run(name, parameters)
        with self._pool_errors(name):
            return result.get_as_arrow()

    def _pool_errors(self, name: str):
        """``_pool_full_as_one_line`` for this store's ``name`` statement."""
        return _pool_full_as_one_line(self.engine, self.path, self._pool_bytes, name, self._room)

    def _bulk(self, name: str, parameters: dict[str, Any]):
        """A bulk write, then a checkpoint (see cypher/checkpoint.kuzu.cypher for why);
        returns the write's result."""
        result = self._run(name, parameters)
        self._run("checkpoint")
        return result

    def _check_endpoints(self, dataset: str, edges: pa.Table) -> None:
        if edges.num_rows:
            check_endpoints(dataset, edges, self._rows("node_keys", {"dataset": dataset}).column("key"))

    def ensure_schema(self) -> None:
        for statement in split_statements(load_query("schema", self.cypher_dialect)):
            self._conn.execute(statement)

    def write_nodes(self, dataset: str, nodes: pa.Table) -> int:
        check_dataset_name(dataset)
        nodes = conform_table(nodes, STORED_NODE_SCHEMA, "node", NODE_OPTIONAL_COLUMNS)
        if not nodes.num_rows:
            return 0
        rows = pa.table({
            "uid": _uids(dataset, nodes.column("key")), "dataset": pa.repeat(pa.scalar(dataset), nodes.num_rows),
            "key": nodes.column("key"), "features": _floats_to_blob(nodes.column("features")),
            "given_label": nodes.column("label"), "categories": nodes.column("categories"),
            "given_label_confidence": nodes.column("label_confidence"),
            "content_hash": pa.array(content_hashes(nodes), pa.int64())})
        self._fit_pool(rows=rows)  # wide features (an embedding) ask for more
        # updated_at: only for new rows and rows whose hash differs (upsert_nodes.kuzu.cypher)
        now = pd.Timestamp.now(tz="UTC").tz_localize(None).to_pydatetime()
        stored = self._rows("existing_nodes", {"rows": rows.select(["uid"])}).column("uid")
        # a uid twice in the table (a caller's, not ingest's: parse_records keeps one row per key)
        # would fail the COPY: it is MERGEd in order, the last row winning, as before the COPY
        counts = pa.compute.value_counts(rows.column("uid")).flatten()
        repeated = pa.compute.filter(counts[0], pa.compute.greater(counts[1], 1))
        merged = pa.compute.or_(pa.compute.is_in(rows.column("uid"), value_set=stored),
                                pa.compute.is_in(rows.column("uid"), value_set=repeated))
        if pa.compute.any(merged).as_py():
            self._run("upsert_nodes", {"rows": rows.filter(merged), "now": now})
        new = rows.filter(pa.compute.invert(merged))
        if new.num_rows:
            self._run("insert_nodes", {"rows": new.append_column(
                "updated_at", pa.repeat(pa.scalar(now, pa.timestamp("us")), new.num_rows))})
        self._run("checkpoint")
        self._fit_pool()
        return rows.num_rows

    def _fit_pool(self, relationships: int = 0, rows: pa.Table | None = None, row_bytes: int = 0) -> None:
        """Open the database again with a larger pool once it has grown past the one it
        was opened with, or before a COPY of ``relationships`` or a write of ``rows`` (or of
        rows of ``row_bytes``) that needs more (``buffer_pool_bytes``): an ingest of 10M
        rows into a new store starts with 512 MiB and needs more as the stored keys grow."""
        if rows is not None and rows.num_rows:
            row_bytes = max(row_bytes, rows.nbytes // rows.num_rows)
        wanted = buffer_pool_bytes(self._file, relationships, row_bytes)
        bounds = self._bounds(wanted)
        larger_region = bounds.get("max_db_size", 0) > (self._region or 0)  # under an address-space limit
        if bounds["buffer_pool_size"] > 1.25 * self._pool_bytes or larger_region:
            self._reopen(wanted)

    def _reopen(self, pool_bytes: int) -> None:
        """The database closed and opened again with a pool of ``pool_bytes``. Kùzu's lock
        is free for the moment between; graphlabel's (``_hold_store``) is held throughout.

        Whatever stops it halfway, the store is left open (at the pool it had): serve's
        stop cancels a run with SIGTERM, which may land here, and the run's failure is
        then recorded through this store (it was not: "could not mark run … failed:
        Connection is closed")."""
        try:
            self._conn.close()
            self._db.close()
            bounds = self._bounds(pool_bytes)
            self._db = _open_database(self._module, self._file, self._timeout, bounds)
            self._opened = bounds
        except BaseException:
            self._conn.close()
            self._db.close()
            self._db = _open_database(self._module, self._file, self._timeout, self._opened)
            raise
        finally:
            self._conn = self._module.Connection(self._db)

    def _bounds(self, pool_bytes: int) -> dict[str, int]:
        """What the database opens with: a pool of ``pool_bytes``, but under an address-space
        limit within the room the store took when it first opened (``address_room``), not
        within what the process has left at each reopen: what the run has allocated since
        is the run's (judged again, the write-back's reopen of a run that had labelled the
        digits was refused)."""
        return database_bounds(self._room, self._file, pool_bytes)

    @property
    def _pool_bytes(self) -> int:
        """The page cache the database is open with."""
        return self._opened["buffer_pool_size"]

    @property
    def _region(self) -> int | None:
        """The pages' region it is open with; None: the engine's own (no address-space limit)."""
        return self._opened.get("max_db_size")

    def replace_edges(self, dataset: str, edges: pa.Table) -> int:
        check_dataset_name(dataset)
        edges = conform_table(edges, EDGE_SCHEMA, "edge")
        self._check_endpoints(dataset, edges)  # before the old relationships are deleted
        self._delete_edges(dataset)
        rows = self._edge_rows(dataset, edges)
        if rows.num_rows:
            self._fit_pool(rows.num_rows)
            self._bulk("insert_edges", {"edges": rows})
        return rows.num_rows

    def _delete_edges(self, dataset: str) -> None:
        """Delete the dataset's similarity relationships: the whole SIMILAR table dropped and
        made again when they are all the dataset's (count_other_edges.kuzu.cypher says why),
        else one by one."""
        if self._run("count_other_edges", {"dataset": dataset}).get_next()[0] == 0:
            self._run("drop_similar")
            self.ensure_schema()
            self._run("checkpoint")
        else:
            self._bulk("delete_edges", {"dataset": dataset})

    def _edge_rows(self, dataset: str, edges: pa.Table) -> pa.Table:
        return pa.table({
            "from": _uids(dataset, edges.column("source")),
            "to": _uids(dataset, edges.column("target")),
            "weight": edges.column("weight"),
            # repeated in Arrow: a Python list of the name held 67M references at 10M nodes
            "dataset": pa.repeat(pa.scalar(dataset, pa.string()), edges.num_rows),
        })

    def add_edges(self, dataset: str, edges: pa.Table) -> int:
        check_dataset_name(dataset)
        edges = conform_table(edges, EDGE_SCHEMA, "edge")
        if not edges.num_rows:
            return 0
        self._check_endpoints(dataset, edges)
        rows = self._edge_rows(dataset, edges)
        # pairs already stored (a retried call) are MERGEd, the others bulk-loaded (see
        # existing_edges.kuzu.cypher for the timings behind the split)
        stored = self._rows("existing_edges", {"edges": rows})
        if stored.num_rows:
            pairs = pd.MultiIndex.from_arrays([rows.column("from").to_pandas(), rows.column("to").to_pandas()])
            known = pairs.isin(pd.MultiIndex.from_arrays([stored.column("from").to_pandas(),
                                                         stored.column("to").to_pandas()]))
            self._run("add_edges", {"edges": rows.filter(pa.array(known))})
            rows = rows.filter(pa.array(~known))
        if rows.num_rows:
            self._fit_pool(rows.num_rows)
            self._run("insert_edges", {"edges": rows})
        self._run("checkpoint")
        return int(stored.num_rows + rows.num_rows)

    def read_user_edges(self, dataset: str, edge_type: str, weight_property: str | None = None) -> pa.Table:
        check_dataset_name(dataset)
        if weight_property not in (None, USER_WEIGHT):
            raise ValueError(f"the embedded store keeps one weight per user edge, {USER_WEIGHT!r} (ingest-edges"
                             f" --weight COL), not {weight_property!r}: use --graph edges:{edge_type}:{USER_WEIGHT}")
        table = self._rows("read_user_edges", {"dataset": dataset, "edge_type": edge_type})
        return checked_weights(table.column("source").to_pylist(), table.column("target").to_pylist(),
                               None if weight_property is None else table.column("weight").to_pylist(),
                               edge_type, weight_property, dataset)

    def write_user_edges(self, dataset: str, edge_type: str, edges: pa.Table) -> UserEdgesWritten:
        check_dataset_name(dataset)
        edges = conform_table(edges, EDGE_SCHEMA, "edge")
        self._check_endpoints(dataset, edges)  # before the type's old edges are deleted
        before = self._rows("read_user_edges", {"dataset": dataset, "edge_type": edge_type})
        changed = changed_endpoints(before.cast(EDGE_SCHEMA), edges)
        if len(changed):  # marked first: a write stopped half way then relabels too much, never too little
            now = pd.Timestamp.now(tz="UTC").tz_localize(None).to_pydatetime()
            uids = _uids(dataset, pa.array(changed.tolist(), pa.string()))
            self._bulk("mark_changed", {"rows": pa.table({"uid": uids}), "now": now})
        self._bulk("delete_user_edges", {"dataset": dataset, "edge_type": edge_type})
        if edges.num_rows:
            rows = self._edge_rows(dataset, edges)
            rows = rows.add_column(2, "type", pa.repeat(pa.scalar(edge_type, pa.string()), edges.num_rows))
            self._fit_pool(rows.num_rows)
            self._bulk("insert_user_edges", {"edges": rows})
        return UserEdgesWritten(stored=edges.num_rows, changed_nodes=len(changed))

    def read_label_state(self, dataset: str) -> pa.Table:
        check_dataset_name(dataset)
        table = self._rows("read_label_state", {"dataset": dataset})
        return label_state_table(table.column("key"), table.column("changed"), table.column("labelled"),
                                 table.column("predicted_label"))

    def read_predictions(self, dataset: str) -> pa.Table:
        check_dataset_name(dataset)
        return self._rows("read_predictions", {"dataset": dataset}).cast(READ_PREDICTION_SCHEMA)

    def write_graph_build(self, dataset: str, spec: dict[str, Any]) -> None:
        check_dataset_name(dataset)
        self._run("write_graph_build", {
            "dataset": dataset, "spec": graph_build_json(spec),
            "built_at": pd.Timestamp.now(tz="UTC").tz_localize(None).to_pydatetime()})

    def read_graph_build(self, dataset: str) -> dict[str, Any] | None:
        check_dataset_name(dataset)
        rows = self._rows("read_graph_build", {"dataset": dataset}).to_pylist()
        if not rows:
            return None
        spec = graph_build_from_json(rows[0]["spec"])
        spec["built_at"] = pd.Timestamp(rows[0]["built_at"]) if rows[0]["built_at"] is not None else None
        return spec

    def write_feature_columns(self, dataset: str, columns: dict[str, Any]) -> None:
        check_dataset_name(dataset)
        self._run("write_feature_columns", {
            "dataset": dataset, "columns": json.dumps(columns),
            "recorded_at": pd.Timestamp.now(tz="UTC").tz_localize(None).to_pydatetime()})

    def read_feature_columns(self, dataset: str) -> dict[str, Any] | None:
        check_dataset_name(dataset)
        rows = self._rows("read_feature_columns", {"dataset": dataset}).to_pylist()
        return json.loads(rows[0]["columns"]) if rows else None

    def read_subgraph(self, dataset: str, with_features: bool = True, with_edges: bool = True) -> SubGraph:
        check_dataset_name(dataset)
        nodes = self._rows("read_nodes", {"dataset": dataset})
        # in key order (labelling.problems.in_key_order's), so the features are read into
        # their final rows and never copied to sort them (256 MB at 1M nodes of 32)
        order = pa.compute.sort_indices(nodes.column("key"))
        nodes = nodes.take(order)
        position = _offset_positions(nodes.column("node").to_numpy().astype(np.int64, copy=False))
        # the pages a read touched stay resident in the pool until the database closes:
        # reopened after the features and after the relationships (50 ms each at 1M nodes),
        # the pages of the one are not held while the other is read, nor through the
        # assembly below and the solve after it (a 1M label run's solve peaked at 2,240 MiB
        # with them, 1,772 without)
        features, lengths = self._read_features(dataset, position) if with_features else (None, None)
        if with_features and with_edges:
            self._reopen(self._pool_bytes)
        source, target, weight = self._read_edges(dataset, position) if with_edges else (
            np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        self._reopen(self._pool_bytes)
        return subgraph_from_positions(nodes, source, target, weight, features, lengths)

    def _read_edges(self, dataset: str, position: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The dataset's relationships as rows of ``position`` (-1 for an end outside it) and
        weights, ``READ_SLICE`` source offsets at a time (read_edges.kuzu.cypher)."""
        parts = []
        for first in range(0, len(position), READ_SLICE):  # a loop over slices of nodes
            part = self._rows("read_edges", {"dataset": dataset, "first": first,
                                             "last": first + READ_SLICE})
            parts.append((_row_positions(position, part.column("source")),
                          _row_positions(position, part.column("target")),
                          part.column("weight").to_numpy().astype(np.float64, copy=False)))
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        return tuple(np.concatenate(column) for column in zip(*parts))  # type: ignore[return-value]

    def _offset_slices(self, name: str, parameters: dict[str, Any], end: int) -> Iterator[pa.Table]:
        """Query ``name`` over the Entity-table offsets [0, ``end``), one slice of offsets at a
        time (its ``$first`` and ``$last``), each slice's rows one result: ``READ_SLICE``
        offsets, or fewer, so that a slice of the widest rows read so far holds at most the
        pool's bytes over ``READ_POOL_SHARE`` (an embedding's 384 features, many classes'
        scores). The first slice spans ``READ_PROBE`` offsets, and the span doubles while
        no row has been read (offsets of other datasets)."""
        first, span, widest = 0, READ_PROBE, 0
        while first < end:  # a loop over slices of offsets
            part = self._rows(name, {**parameters, "first": first, "last": first + span})
            yield part
            first += span
            if part.num_rows:
                widest = max(widest, part.nbytes // part.num_rows)
            span = (min(READ_SLICE, max(1, self._pool_bytes // (READ_POOL_SHARE * widest))) if widest
                    else min(READ_SLICE, 2 * span))

    def _read_features(self, dataset: str, position: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The nodes' features as ``SubGraph`` holds them, in the rows ``position`` gives
        each Entity-table offset: an (n, d) matrix, or when the lengths differ (None and)
        each node's length. Read a slice of offsets at a time (``_offset_slices``,
        read_features.kuzu.cypher)."""
        n = int((position >= 0).sum())
        if n == 0:
            return None, None
        lengths = np.zeros(n, dtype=np.int64)
        matrix: np.ndarray | None = None
        mixed = False
        for part in self._offset_slices("read_features", {"dataset": dataset}, len(position)):
            rows = position[part.column("node").to_numpy()]
            blobs = part.column("features").combine_chunks().cast(pa.large_binary())
            sizes = pa.compute.binary_length(blobs).fill_null(0).to_numpy(zero_copy_only=False) // 8
            lengths[rows] = sizes
            if not len(rows) or mixed:
                continue
            if matrix is None:
                matrix = np.empty((n, int(sizes[0])))
            if np.any(sizes != matrix.shape[1]):
                mixed, matrix = True, None
                continue
            values = _blob_to_features(pa.chunked_array([blobs])).flatten().to_numpy(zero_copy_only=False)
            matrix[rows] = values.reshape(len(rows), -1)
        if mixed:
            return None, lengths
        return (matrix if matrix is not None else np.zeros((n, 0))), None

    def feature_lengths(self, dataset: str) -> dict[int, int]:
        check_dataset_name(dataset)
        rows = self._rows("feature_lengths", {"dataset": dataset}).to_pylist()
        return {int(row["length"]): int(row["nodes"]) for row in rows if row["length"] is not None}

    def count_nodes(self, dataset: str) -> int:
        check_dataset_name(dataset)
        return int(self._run("count_nodes", {"dataset": dataset}).get_next()[0])

    def dataset_names(self) -> list[str]:
        return self._rows("dataset_names", {}).column("dataset").to_pylist()

    def has_edges(self, dataset: str) -> bool:
        check_dataset_name(dataset)
        return self._run("has_edges", {"dataset": dataset}).has_next()

    def write_predictions(self, dataset: str, predictions: pa.Table) -> int:
        check_dataset_name(dataset)
        predictions = conform_table(predictions, WRITTEN_PREDICTION_SCHEMA, "prediction")
        rows = predictions.append_column("uid", _uids(dataset, predictions.column("key")))
        if not rows.num_rows:
            return 0
        index = rows.column_names.index("label_scores")
        rows = rows.set_column(index, "label_scores", _floats_to_blob(rows.column("label_scores")))
        self._fit_pool(rows=rows)  # many classes: wide rows
        # in the nodes' table order (node_offsets.kuzu.cypher says why); a row whose uid is
        # no node matches nothing, as before
        found = self._rows("node_offsets", {"rows": rows.select(["uid"])})
        in_order = found.column("uid").take(pa.compute.sort_indices(found.column("node")))
        rows = rows.take(pa.compute.index_in(in_order, value_set=rows.column("uid")))
        # a statement per WRITE_SLICE rows: a SET keeps the old values of its whole
        # transaction in the buffer pool
        written = sum(int(self._bulk("write_predictions", {"rows": rows.slice(start, WRITE_SLICE)}).get_next()[0])
                      for start in range(0, rows.num_rows, WRITE_SLICE))
        # Kùzu keeps memory outside its pool after each SET, and gives it back only when
        # the database closes: 1M predictions written in 100k statements took the process
        # from 441 to 1,135 MiB, and to 1,002 with the database reopened after each
        self._reopen(self._pool_bytes)
        return written

    def write_run(self, run: LabelRunRecord) -> None:
        self._run("write_run", run.properties())

    def read_runs(self, dataset: str | None = None, run_id: str | None = None,
                  limit: int = 20, status: str | None = None) -> pd.DataFrame:
        if dataset is not None:
            check_dataset_name(dataset)
        limit = check_limit(limit, "limit")
        # '' for a filter not given (read_runs.kuzu.cypher says why not null)
        rows = self._rows("read_runs", {"dataset": dataset or "", "run_id": "" if run_id is None else str(run_id),
                                        "max_rows": limit, "status": check_status(status) or ""})
        return runs_frame(rows.to_pylist())

    def interrupt_run(self, run_id: str, seen: Any, error: str) -> bool:
        marked = self._run("interrupt_run", {"run_id": run_id, "seen": naive_utc(seen), "error": error})
        return bool(marked.get_next()[0])

    def prune_runs(self, dataset: str, keep_last: int) -> int:
        check_dataset_name(dataset)
        doomed = runs_to_prune(self._rows("run_history", {"dataset": dataset}).to_pandas(),
                               keep_last)
        if not doomed:
            return 0
        # one statement, so one transaction: the guards in delete_runs.kuzu.cypher see the
        # same state as the delete
        deleted = int(self._run("delete_runs", {"dataset": dataset, "run_ids": doomed}).get_next()[0])
        for run_id in doomed:  # the models of the runs the guards let go (a loop over pruned runs)
            path = self._model_path(run_id)
            if path.exists() and self.read_runs(run_id=run_id, limit=1).empty:
                path.unlink()
        return deleted

    # -- run models: files next to the database ------------------------------------------
    # Why files: kuzu 0.11.3's Python API takes no bytes parameter ("Unknown parameter type
    # <class 'bytes'>"), so a BLOB property could only be written through an Arrow COPY; a
    # model is one file of a few hundred kB (digits: 0.5 MB) that only `predict` and
    # `explain` read whole, and the store folder is graphlabel's own.

    def _model_path(self, run_id: str) -> Path:
        if not isinstance(run_id, str) or not MODEL_FILE_NAME.fullmatch(run_id):
            raise ValueError(f"invalid run id {run_id!r}: letters, digits, '_', '.' and '-' only")
        return self.path / MODELS_FOLDER / f"{run_id}.npz"

    def write_model(self, run_id: str, model: bytes) -> None:
        path = self._model_path(run_id)
        if self.read_runs(run_id=run_id, limit=1).empty:
            raise ValueError(f"no run {run_id!r} in the store to keep a model with")
        path.parent.mkdir(exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_bytes(bytes(model))
        os.replace(partial, path)  # a reader sees the old model or the new one, never half of one

    def read_model(self, run_id: str) -> bytes | None:
        path = self._model_path(run_id)
        return path.read_bytes() if path.is_file() else None

    def explain(self, dataset: str, key: str, limit: int = 10) -> tuple[dict[str, Any], pd.DataFrame]:
        check_dataset_name(dataset)
        if not isinstance(key, str):
            raise TypeError(f"key must be a string, got {type(key).__name__}")
        limit = check_limit(limit, "limit")
        uid = f"{dataset}:{key}"  # the primary key, as _uids builds it
        found = self._rows("explain_node", {"uid": uid})
        # the neighbours' scores are float64 BLOBs: read as lists, as a query reads them
        node = found.set_column(found.column_names.index("neighbours"), "neighbours",
                                _float_blobs_decoded(found.column("neighbours").combine_chunks())).to_pylist()
        if not node:
            return explanation(None, [], dataset, key)  # raises NotFound naming key and dataset
        neighbours = self._rows("explain_neighbours", {"uid": uid, "max_rows": limit}).to_pylist()
        row = node[0]
        return explanation(row, neighbours, dataset, key, run_classes(row, self.read_runs))

    def node_features(self, dataset: str, key: str) -> np.ndarray | None:
        check_dataset_name(dataset)
        rows = self._rows("node_features", {"uid": f"{dataset}:{key}"})
        if not rows.num_rows:
            raise NotFound(f"no node with key {key!r} in dataset {dataset!r}")
        if rows.column("features")[0].as_py() is None:
            return None
        return _blob_to_features(rows.column("features")).flatten().to_numpy(zero_copy_only=False).astype(np.float64)

    def read_export(self, dataset: str) -> pa.Table:
        check_dataset_name(dataset)
        last = self._run("last_offset", {"dataset": dataset}).get_next()[0]
        # a slice at a time (a node's scores hold a number per class); one slice when there is no node
        table = pa.concat_tables(self._offset_slices("read_export", {"dataset": dataset},
                                                     1 if last is None else last + 1))
        index = table.column_names.index("label_scores")
        scores = _blob_to_features(table.column("label_scores"))
        return table.set_column(index, "label_scores", scores).cast(EXPORT_SCHEMA)

    def given_label_counts(self, dataset: str) -> dict[str, int]:
        check_dataset_name(dataset)
        rows = self._rows("given_label_counts", {"dataset": dataset})
        return dict(zip(rows.column("label").to_pylist(), rows.column("nodes").to_pylist(), strict=True))

    def reviewed_labels(self, dataset: str) -> dict[str, str]:
        check_dataset_name(dataset)
        rows = self._rows("reviewed_labels", {"dataset": dataset})
        return dict(zip(rows.column("key").to_pylist(), rows.column("label").to_pylist(), strict=True))

    def record_decision(self, dataset: str, key: str, decision: str, label: str | None, reviewer: str,
                        decided_at: pd.Timestamp, decision_id: str) -> dict[str, Any]:
        check_dataset_name(dataset)
        check_decision(decision, label)
        uid = f"{dataset}:{key}"
        node = self._rows("explain_node", {"uid": uid}).to_pylist()
        if not node:
            raise NotFound(f"no node with key {key!r} in dataset {dataset!r}")
        rows = self._rows("record_decision", {
            "uid": uid, "previous": node[0]["given_label"], "dataset": dataset, "decision": decision, "label": label,
            "reviewer": str(reviewer), "decided_at": naive_utc(decided_at),
            "decision_id": decision_id}).to_pylist()
        if not rows:
            raise NotFound(f"no node with key {key!r} in dataset {dataset!r}")
        return rows[0]

    def drop_dataset(self, dataset: str) -> dict[str, int]:
        check_dataset_name(dataset)
        run_ids = list(self.read_runs(dataset=dataset, limit=1_000_000)["run_id"])
        counts = {"nodes": self.count_nodes(dataset), "runs": len(run_ids),
                  "decisions": int(self._run("count_decisions", {"dataset": dataset}).get_next()[0])}
        # one transaction: a failure half way leaves the dataset as it was
        self._conn.execute("BEGIN TRANSACTION")
        try:
            for statement in split_statements(load_query("drop_dataset", self.cypher_dialect)):
                self._conn.execute(statement, {"dataset": dataset})
        except BaseException:
            _roll_back(self._conn)
            raise
        self._conn.execute("COMMIT")
        self._run("checkpoint")
        for run_id in run_ids:  # the runs' kept models (write_model) go with them
            self._model_path(run_id).unlink(missing_ok=True)
        return counts

    def query(self, cypher: str, parameters: dict[str, Any] | None = None, *, write: bool = False) -> pd.DataFrame:
        statement = user_statement(cypher, parameters)
        if write:
            try:
                return _frame(self._conn.execute(statement, parameters or {}))
            except RuntimeError as error:
                raise QueryFailed(str(error)) from None
        # Kùzu refuses any write inside a read-only transaction, whatever the statement's
        # clauses (CREATE, SET, DELETE, COPY, CALL of a writing procedure...)
        self._conn.execute("BEGIN TRANSACTION READ ONLY")
        try:
            frame = _frame(self._conn.execute(statement, parameters or {}))
        except RuntimeError as error:
            _roll_back(self._conn)
            if "read-only transaction" in str(error):
                # ladybug 0.22 caches the statement it prepared in the read-only
                # transaction, and that one keeps refusing to write, even with write=True
                # (found by tests/test_store_contract.py): a new connection has no cache
                self._conn.close()
                self._conn = self._module.Connection(self._db)
                raise WriteRefused() from None
            raise QueryFailed(str(error)) from None
        self._conn.execute("COMMIT")
        return frame

    def close(self) -> None:
        self._conn.close()
        self._db.close()
        if self._lock_file is not None:  # closing twice releases once
            _release_store(self._lock_file)
            self._lock_file = None

    # -- the whole store, for graphstore.store_copy ------------------------------------------

    def export_database(self, folder: Path, row_bytes: int = 0) -> dict[str, dict[str, int]]:
        """Write every table to ``folder`` as Parquet, with the schema and the ``COPY``
        statements that load them (the engine's ``EXPORT DATABASE``), and return the rows of
        each table as ``table_rows`` counts them. The pool is first sized for rows of
        ``row_bytes`` (``widest_row_bytes``), as a write of them is: 100,000 nodes of 993
        classes' scores failed to export with 'the buffer pool is full'."""
        self._fit_pool(row_bytes=row_bytes)
        with self._pool_errors("export_database"):  # one line, should the memory still be short
            self._conn.execute(f"EXPORT DATABASE {_path_literal(folder)} (format='parquet')")
        return self.table_rows()

    def widest_row_bytes(self) -> int:
        """The bytes of the widest features plus the widest per-class scores of any node (0
        for an Entity table without those columns: a database graphlabel did not make)."""
        columns = set(self._rows("entity_columns", {}).column("name").to_pylist())
        if not {"features", "label_scores"} <= columns:
            return 0
        return int(self._run("widest_row", {}).get_next()[0])

    def table_rows(self) -> dict[str, dict[str, int]]:
        """Rows of each table, by kind (``"NODE"``, ``"REL"``) and table name."""
        tables = self._conn.execute("CALL show_tables() RETURN name, type").get_as_arrow().to_pylist()
        rows: dict[str, dict[str, int]] = {"NODE": {}, "REL": {}}
        for table in tables:
            pattern = f"(x:{table['name']})" if table["type"] == "NODE" else f"()-[x:{table['name']}]->()"
            counted = self._conn.execute(f"MATCH {pattern} RETURN count(x)").get_next()[0]
            rows[table["type"]][table["name"]] = int(counted)
        return rows


@contextmanager
def _pool_full_as_one_line(engine: str, path: Path | str, pool_bytes: int, name: str,
                           room: AddressRoom | None = None) -> Iterator[None]:
    """The engine's "buffer pool is full" as ``StoreOutOfMemory``, one line with what to
    do (under an address-space limit, the ``room`` that bounds the pool: raise it); any
    other engine error is a bug of a query of ours and keeps its traceback."""
    try:
        yield
    except RuntimeError as error:
        if POOL_FULL not in str(error):  # also "the post-commit checkpoint failed: Buffer manager..."
            raise
        if any(full in str(error) for full in REGION_FULL):  # the pages' region under an address-space limit
            raise StoreOutOfMemory(
                f"the {engine} store {path} reached the size its address-space reservation holds, in {name}:"
                f" {error} Raise the address-space limit (ulimit -v), or lift it (ulimit -v unlimited)") from None
        defect = ("; on a kuzu store that holds several datasets it is more likely kuzu 0.11.3's known defect"
                  " (README, The embedded engine): keep new datasets in a ladybug store"
                  " (GRAPHLABEL_ENGINE=ladybug; graphlabel copy-store moves a kuzu store that still"
                  " reads)") if engine == "kuzu" else ""
        advice = ("Close other programs and try again" if room is None else
                  f"The address-space limit (ulimit -v) keeps the page cache under {room.pool >> 20:,} MiB: raise"
                  " it, or lift it (ulimit -v unlimited)")
        raise StoreOutOfMemory(
            f"the {engine} store {path} ran out of its page cache ({pool_bytes >> 20:,} MiB)"
            f" in {name}: {error} {advice}{defect}") from None


def import_database(folder: Path, engine: str, exported: Path, relationships: int, row_bytes: int = 0,
                    lock_timeout: float | None = None) -> KuzuStore:
    """A new ``engine`` store in ``folder`` (which must hold no database) loaded from a
    folder ``KuzuStore.export_database`` wrote (the engine's ``IMPORT DATABASE``), opened;
    its pool is sized for a COPY of ``relationships`` and for rows of ``row_bytes`` (the
    source's ``widest_row_bytes``: 20,000 nodes of 1,000 classes' scores failed to import
    with the engine's pool error; ``buffer_pool_bytes``)."""
    module = engine_module(engine)
    folder.mkdir(parents=True, exist_ok=True)
    if stored_engines(folder):
        raise StoreSetupError(f"{folder} already holds a store: copy into a new folder")
    timeout = lock_timeout_from_env() if lock_timeout is None else lock_timeout
    lock_file = _hold_store(folder, timeout)  # no other graphlabel process opens it half made
    try:
        database_file = folder / ENGINES[engine]
        room = address_room(database_file)
        bounds = database_bounds(room, database_file, buffer_pool_bytes(database_file, relationships, row_bytes))
        pool_bytes = bounds["buffer_pool_size"]
        database = _open_database(module, database_file, timeout, bounds)
        connection = module.Connection(database)
        try:
            with _pool_full_as_one_line(engine, folder, pool_bytes, "import_database", room):
                connection.execute(f"IMPORT DATABASE {_path_literal(exported)}")
        finally:
            connection.close()
            database.close()
        return KuzuStore(folder, engine=engine, lock_timeout=timeout)
    finally:
        _release_store(lock_file)  # the store opened above holds its own


def _path_literal(path: Path) -> str:
    """A folder as a Cypher string literal (EXPORT and IMPORT DATABASE take no parameter)."""
    text = str(path)
    if "'" in text or "\\" in text:
        raise ValueError(f"a folder to export to or import from cannot contain a quote or a backslash: {text}")
    return f"'{text}'"
