"""What only the embedded store has, on a real database (a fresh one per test) of the
engine this process runs on, ladybug by default, and this whole file again on kuzu in a
process of its own (tests/engines.py): its folder and database file, the upgrade of stores
made by older versions, the engine setting, the page pool. The promises every store keeps
are checked in tests/test_store_contract.py."""

import re
import threading
import warnings
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from engines import DATABASE_FILE, ENGINE, IN_DEFAULT_PROCESS, run_on_the_other_engine

from graphstore import LabelRunRecord, open_store
from graphstore.kuzu_store import DEFAULT_ENGINE, ENGINES, engine_module
from graphstore.schemas import NODE_SCHEMA
from similarity.spec import GraphSpec

#: The engine this process does not run on.
OTHER = next(engine for engine in ENGINES if engine != ENGINE)


def nodes(keys, labels, dim=3, offset=0.0):
    feats = [[float(i) + offset] * dim for i in range(len(keys))]
    return pa.table({"key": keys, "features": feats, "label": labels}).cast(NODE_SCHEMA)


def test_store_reopens_with_its_data(store_path):
    with open_store(store_path, create=True) as store:
        store.write_nodes("toy", nodes(["a"], ["x"]))
    with open_store(f"{ENGINE}://{store_path}", create=True) as store:
        assert store.count_nodes("toy") == 1


@pytest.mark.parametrize("name", ["", "1abc", "a:b", "a b", "x" * 65, "a'; DROP"])
def test_bad_dataset_names_are_refused(embedded_store, name):
    with pytest.raises(ValueError, match="invalid dataset name"):
        embedded_store.write_nodes(name, nodes(["a"], ["x"]))


def test_missing_columns_are_named(embedded_store):
    with pytest.raises(ValueError, match=r"lacks columns \['label'\]"):
        embedded_store.write_nodes("toy", pa.table({"key": ["a"], "features": [[1.0]]}))


def test_build_edges_keeps_its_findings_when_another_thread_leaves_catch_warnings(embedded_store):
    """Before Python 3.14 the state of ``warnings.catch_warnings`` is the process's: a thread
    that left one while the port's builder recorded its warnings restored what it had seen,
    and the build's finding went to stderr instead of the run's warnings (similarity.findings).
    Neo4j's GDS build reports no step inside its build to leave at; its other graphs are this
    builder's."""
    keys = [f"n{i}" for i in range(60)]
    embedded_store.write_nodes("toy", nodes(keys, ["x", "y"] + [None] * 58))
    entered, leave, left = threading.Event(), threading.Event(), threading.Event()

    def other_thread() -> None:
        with warnings.catch_warnings():
            entered.set()
            leave.wait(60)
        left.set()

    def on_progress(stage: str, done: int, total: int | None, unit: str) -> None:
        if stage.startswith("kNN") and not leave.is_set():
            leave.set()  # the other thread leaves its catch_warnings inside the build
            assert left.wait(60)

    threading.Thread(target=other_thread, daemon=True).start()
    assert entered.wait(60)
    built = embedded_store.build_edges("toy", GraphSpec(k=5, sigma=1e3), on_progress)
    assert leave.is_set()
    assert left.is_set()
    assert built.warnings == ("the similarity graph of 'toy': 100% of the Gaussian weights (σ = 1000) are above"
                              " 0.999 (σ is far larger than the distances between neighbours: every edge weighs"
                              " the same)",)


# -- runs: stores made before run provenance -------------------------------------------------

T0 = pd.Timestamp("2026-03-01 00:00", tz="UTC")


def run_record(run_id, hours, status="completed", dataset="toy", **extra):
    started = T0 + pd.Timedelta(hours=hours)
    finished = None if status == "running" else started + pd.Timedelta(minutes=5)
    return LabelRunRecord(run_id, dataset, "harmonic", {"k": 10}, {"class_counts": {"x": 1}}, {"solve": 0.5},
                          started, finished, 2, 1, 0, status=status, **extra)


def test_a_store_created_before_run_provenance_gains_the_columns(store_path):
    """A store whose LabelRun table predates status/versions/error opens, reads its old runs
    as completed ones without versions, and takes new runs."""
    engine = engine_module(ENGINE)
    Path(store_path).mkdir(parents=True)
    db = engine.Database(str(Path(store_path) / DATABASE_FILE))
    conn = engine.Connection(db)
    conn.execute("CREATE NODE TABLE LabelRun(run_id STRING, dataset STRING, solver STRING, parameters STRING,"
                 " metrics STRING, timings STRING, started_at TIMESTAMP, finished_at TIMESTAMP, n_nodes INT64,"
                 " n_labeled INT64, n_flagged INT64, PRIMARY KEY(run_id))")
    conn.execute("CREATE (:LabelRun {run_id: 'old', dataset: 'toy', solver: 'harmonic', parameters: '{}',"
                 " metrics: '{}', timings: '{}', started_at: timestamp('2025-01-01 00:00:00'), n_nodes: 1,"
                 " n_labeled: 1, n_flagged: 0})")
    conn.close()
    db.close()
    with open_store(store_path, create=True) as store:
        old = store.read_runs("toy").iloc[0]
        assert (old["run_id"], old["status"], old["versions"], old["error"]) == ("old", "completed", {}, None)
        store.write_run(run_record("new", 0, versions={"numpy": "2.0"}))
        assert store.read_runs("toy")["run_id"].tolist() == ["new", "old"]
        assert store.read_runs(run_id="new").iloc[0]["versions"] == {"numpy": "2.0"}
    with open_store(store_path, create=True) as store:  # reopening: the ALTERs are no-ops now
        assert len(store.read_runs()) == 2


def test_a_store_created_before_per_class_scores_gains_their_columns(store_path):
    """A store whose Entity table predates label_scores, label_runner_up, label_margin and
    label_accepted (and LabelRun.classes) opens, takes a run's scores and exports them."""
    from labelling.export import export_frame

    engine = engine_module(ENGINE)
    Path(store_path).mkdir(parents=True)
    db = engine.Database(str(Path(store_path) / DATABASE_FILE))
    conn = engine.Connection(db)
    conn.execute("CREATE NODE TABLE Entity(uid STRING, dataset STRING, key STRING, features BLOB,"
                 " given_label STRING, predicted_label STRING, label_confidence DOUBLE, label_noise BOOLEAN,"
                 " label_noise_score DOUBLE, label_run_id STRING, label_solver STRING, labelled_at TIMESTAMP,"
                 " updated_at TIMESTAMP, content_hash INT64, PRIMARY KEY(uid))")
    conn.execute("CREATE (:Entity {uid: 'toy:a', dataset: 'toy', key: 'a', given_label: 'x'})")
    conn.close()
    db.close()
    with open_store(store_path, create=True) as store:
        rows = pa.table({"key": ["a"], "predicted_label": ["x"], "label_confidence": [0.9], "label_noise": [False],
                         "label_run_id": ["r"], "label_solver": ["harmonic"],
                         "labelled_at": [T0.tz_localize(None).to_pydatetime()],
                         "label_scores": [[0.9, 0.1]], "label_runner_up": ["y"], "label_margin": [0.8]})
        assert store.write_predictions("toy", rows) == 1
        store.write_run(run_record("r", 0, classes=["x", "y"]))
        frame = export_frame(store, "toy")
    assert frame[["key", "score_x", "score_y", "label_runner_up", "label_margin"]].values.tolist() == [
        ["a", 0.9, 0.1, "y", 0.8]]


# -- the embedded engine: kuzu or ladybug, a property of the store -------------------------


def test_the_engine_is_the_stores_and_a_uri_may_name_it(tmp_path):
    from graphstore import StoreNotFound, StoreSetupError
    from graphstore.kuzu_store import KuzuStore

    folder = tmp_path / "store"
    with open_store(str(folder), create=True) as store:  # a new store: the engine of new stores
        assert (store.dialect, store.engine, store.cypher_dialect) == (ENGINE, ENGINE, "kuzu")
        store.write_nodes("toy", nodes(["a"], ["x"]))
    assert sorted(p.name for p in folder.iterdir()) == [DATABASE_FILE, "graphlabel.lock"]
    with open_store(f"{ENGINE}://{folder}") as store:
        assert store.count_nodes("toy") == 1
    # the files are not compatible: a URI naming the other engine is refused, not answered
    # from a second, empty database made beside the first (checked before the other loads)
    refused = rf"is a {ENGINE} store \({re.escape(DATABASE_FILE)}\), not a {OTHER} one"
    with pytest.raises(StoreSetupError, match=refused):
        open_store(f"{OTHER}://{folder}", create=True)
    assert sorted(p.name for p in folder.iterdir()) == [DATABASE_FILE, "graphlabel.lock"]
    with pytest.raises(StoreNotFound, match="no store at"):
        open_store(f"{OTHER}://{tmp_path / 'none'}")
    (folder / ENGINES[OTHER]).write_bytes(b"")  # a folder with both: the URI must say which
    with pytest.raises(StoreSetupError, match="holds a database of each engine"):
        open_store(str(folder))
    with open_store(f"{ENGINE}://{folder}") as store:
        assert store.count_nodes("toy") == 1
    with pytest.raises(ValueError, match="embedded engine must be one of"):
        KuzuStore(folder, engine="sqlite")


ENGINES_IN_ONE_PROCESS = """
import sys
from graphstore import StoreSetupError, open_store
first, second, folder = sys.argv[1:]
with open_store(f"{first}://{folder}/one", create=True) as store:
    store.count_nodes("toy")
try:
    open_store(f"{second}://{folder}/two", create=True)
except StoreSetupError as error:
    print(error)
"""


@pytest.mark.parametrize("first, second", [("kuzu", "ladybug"), ("ladybug", "kuzu")])
def test_the_two_engines_are_never_loaded_in_one_process(tmp_path, first, second):
    """Loading the second engine's native module fails ("type Database is already
    registered") and the process then dies on exit (SIGSEGV, measured with kuzu 0.11.3 and
    ladybug 0.22.0): the store refuses with a message before it gets there."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", ENGINES_IN_ONE_PROCESS, first, second, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"the {second} engine cannot be loaded next to it" in done.stdout
    file = {"kuzu": "graph.kuzu", "ladybug": "graph.lbug"}[first]
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == sorted([file, "graphlabel.lock"])
    assert not (tmp_path / "two").exists()


NEW_STORE_ENGINE = """
import sys
from graphstore import open_store
try:
    with open_store(sys.argv[1], create=True) as store:
        print(store.engine)
except ValueError as error:
    print(error)
"""


def test_graphlabel_engine_names_the_engine_of_every_new_store_without_a_scheme(tmp_path):
    """A new folder gets ladybug's file by default, kuzu's with GRAPHLABEL_ENGINE=kuzu; an
    existing store opens with its own engine whatever the setting; a bad value is said."""
    import os
    import subprocess
    import sys

    def opened(folder, engine: str | None) -> str:
        environment = {name: value for name, value in os.environ.items() if name != "GRAPHLABEL_ENGINE"}
        done = subprocess.run([sys.executable, "-c", NEW_STORE_ENGINE, str(folder)], capture_output=True, text=True,
                              timeout=120, cwd=Path(__file__).resolve().parent.parent,
                              env={**environment, **({"GRAPHLABEL_ENGINE": engine} if engine else {})})
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    assert DEFAULT_ENGINE == "ladybug"
    assert opened(tmp_path / "new", None) == "ladybug"
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["graph.lbug", "graphlabel.lock"]
    assert opened(tmp_path / "old", "kuzu") == "kuzu"  # a kuzu store, as every store was before
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == ["graph.kuzu", "graphlabel.lock"]
    assert opened(tmp_path / "old", None) == "kuzu"
    assert opened(tmp_path / "new", "kuzu") == "ladybug"
    assert opened(tmp_path / "other", "sqlite") == "GRAPHLABEL_ENGINE must be one of kuzu, ladybug, got 'sqlite'"


@pytest.mark.parametrize("engine", ["kuzu", "ladybug"])
def test_kuzus_string_column_defect_and_ladybug_without_it(engine, tmp_path):
    """The README's reduction of the defect that made a store of five datasets unreadable:
    kuzu 0.11.3 ends the process with a segmentation fault reading the column; ladybug
    reads it (25 values of 26 nodes). Should kuzu ever read it, the README is wrong."""
    import signal
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(Path(__file__).parent / "engine_defect.py"), engine, str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    if engine == "kuzu":
        assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stdout, done.stderr[-2000:])
    else:
        assert (done.returncode, done.stdout.strip()) == (0, "[25, 26]"), done.stderr[-2000:]


def test_the_page_pool_grows_with_the_store_and_keeps_its_data(store_path, monkeypatch):
    """Kùzu's pool is bounded (its default of 80% of the memory kept every page resident)
    and grows with the database file: a store reopens its database with a larger pool once
    the file outgrows the one it opened with (here the pool grows 8x faster than it does, so
    a few batches show it)."""
    import numpy as np

    import graphstore.kuzu_store as kuzu_store

    assert kuzu_store.buffer_pool_bytes(Path(store_path) / "none.kuzu") == kuzu_store.BUFFER_POOL_BYTES
    sized = kuzu_store.buffer_pool_bytes
    faster = lambda file, relationships=0, row_bytes=0: (  # noqa: E731
        kuzu_store.BUFFER_POOL_BYTES + 8 * (file.stat().st_size if file.is_file() else 0))
    monkeypatch.setattr(kuzu_store, "buffer_pool_bytes", faster)
    with open_store(store_path, create=True) as store:
        first = store._pool_bytes
        assert first == kuzu_store.BUFFER_POOL_BYTES  # a new store: no file yet when it opened
        rng = np.random.default_rng(0)
        for batch in range(4):  # 4 x 40k nodes of 32 features: tens of MB of pages
            keys = [f"k{batch}-{i}" for i in range(40_000)]
            table = pa.table({"key": keys, "features": list(rng.normal(size=(40_000, 32))),
                              "label": [None] * 40_000}, schema=NODE_SCHEMA)
            store.write_nodes("big", table)
        assert store._pool_bytes > 1.25 * first
        assert store._pool_bytes <= faster(store._file)
        assert store.count_nodes("big") == 160_000
    monkeypatch.setattr(kuzu_store, "buffer_pool_bytes", sized)
    with open_store(store_path) as store:
        assert store.count_nodes("big") == 160_000
        assert store._pool_bytes == sized(store._file) > kuzu_store.BUFFER_POOL_BYTES


def test_a_page_pool_too_small_for_a_read_is_one_line_with_what_to_do(store_path, monkeypatch, tmp_path):
    """The engine's "buffer pool is full" (a walk's export on a store hit by kuzu 0.11.3's
    defect) printed a traceback; it is one line naming the store, the pool and the advice.
    Made real here with an 8 MiB pool reading 60k nodes at once."""
    import numpy as np
    from typer.testing import CliRunner

    import graphstore.kuzu_store as kuzu_store
    from graphlabel.cli import app

    rng = np.random.default_rng(0)
    with open_store(store_path, create=True) as store:
        store.write_nodes("big", pa.table({"key": [f"k{i}" for i in range(60_000)],
                                           "features": list(rng.normal(size=(60_000, 32))),
                                           "label": ["a"] * 60_000}, schema=NODE_SCHEMA))
    monkeypatch.setattr(kuzu_store, "buffer_pool_bytes", lambda file, relationships=0, row_bytes=0: 8 << 20)
    # one slice of the whole dataset, as large as the pool: reads come in slices sized to fit it
    monkeypatch.setattr(kuzu_store, "READ_PROBE", kuzu_store.READ_SLICE)
    monkeypatch.setattr(kuzu_store, "READ_POOL_SHARE", 1)
    result = CliRunner().invoke(app, ["export", "--dataset", "big", "--output", str(tmp_path / "big.csv"),
                                      "--store", store_path])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert said.startswith(f"error: the {ENGINE} store {store_path} ran out of its page cache (8 MiB) in"
                           " read_export: Buffer manager exception"), said
    assert ("GRAPHLABEL_ENGINE=ladybug" in said) == (ENGINE == "kuzu")  # kuzu's defect, named on kuzu alone
    assert "Traceback" not in result.output
    assert not (tmp_path / "big.csv").exists()


def test_the_page_pool_grows_before_a_copy_of_relationships_that_needs_it(store_path, monkeypatch):
    """A COPY of many relationships needs pool in proportion to them (67M at 10M nodes
    failed in the pool the stored nodes called for): the store reopens with the larger pool
    first (here 256 KiB per relationship, so that 3,000 of them call for it)."""
    import numpy as np

    import graphstore.kuzu_store as kuzu_store

    monkeypatch.setattr(kuzu_store, "COPY_BYTES_PER_RELATIONSHIP", 256 << 10)
    n = 1_000
    with open_store(store_path, create=True) as store:
        keys = [f"k{i}" for i in range(n)]
        store.write_nodes("d", pa.table({"key": keys, "features": list(np.eye(n, 4)), "label": [None] * n},
                                        schema=NODE_SCHEMA))
        before = store._pool_bytes
        source = np.repeat(np.arange(n), 3)
        target = (source + np.tile([1, 2, 3], n)) % n
        edges = pa.table({"source": pa.array(keys).take(source), "target": pa.array(keys).take(target),
                          "weight": np.ones(3 * n)})
        assert store.replace_edges("d", edges) == 3 * n
        assert store._pool_bytes == kuzu_store.buffer_pool_bytes(store._file, 3 * n) > 1.25 * before
        assert len(store.read_subgraph("d", with_features=False).source) == 3 * n


WIDE_NODES = 10_000


def _wide_rows(n: int, features: int, classes: int):
    """n nodes of ``features`` numbers (an embedding's width) and their predictions of ``classes``."""
    import numpy as np

    rng = np.random.default_rng(0)
    keys = [f"k{i}" for i in range(n)]
    X, scores = rng.normal(size=(n, features)), rng.dirichlet(np.ones(classes), size=n)
    nodes = pa.table({"key": keys, "features": list(X), "label": [None] * n}, schema=NODE_SCHEMA)
    predictions = pa.table({
        "key": keys, "predicted_label": [str(c) for c in scores.argmax(axis=1)], "label_confidence": scores.max(axis=1),
        "label_noise": [None] * n, "label_run_id": ["r"] * n, "label_solver": ["harmonic"] * n,
        "labelled_at": [T0.tz_localize(None).to_pydatetime()] * n, "label_scores": list(scores),
        "label_runner_up": ["0"] * n, "label_margin": np.zeros(n)})
    return X, scores, nodes, predictions


def test_wide_rows_an_embedding_and_many_classes_are_written_and_read_whole(store_path, monkeypatch):
    """Rows of 384 features (an embedding's width: ``ingest`` of 250,000 of them failed) and
    predictions of 300 classes (labelling 100,000 nodes of 993 classes failed at the
    write-back): the engine's checkpoint needs a pool in proportion to a node group of such
    rows, and a read of 200,000 of them at once did not fit the pool its store opened with.
    The store sizes its pool by the rows' width before each write (``WIDE_ROW_POOL_FACTOR``)
    and reads wide rows in shorter slices (``READ_POOL_SHARE``). Made real with small floors
    for the pool: each step, a store opened anew, failed before (64 MiB for the writes,
    16 MiB for the reads)."""
    import numpy as np

    import graphstore.kuzu_store as kuzu_store

    X, scores, nodes, predictions = _wide_rows(WIDE_NODES, 384, 300)
    order = np.argsort([f"k{i}" for i in range(WIDE_NODES)])  # a subgraph's rows are in key order
    monkeypatch.setattr(kuzu_store, "BUFFER_POOL_BYTES", 64 << 20)
    with open_store(store_path, create=True) as store:
        assert store.write_nodes("wide", nodes) == WIDE_NODES
    with open_store(store_path) as store:
        assert store.write_predictions("wide", predictions) == WIDE_NODES
        store.write_run(run_record("r", 0, classes=[str(c) for c in range(300)]))
    monkeypatch.setattr(kuzu_store, "BUFFER_POOL_BYTES", 16 << 20)
    with open_store(store_path) as store:
        np.testing.assert_array_equal(store.read_subgraph("wide", with_edges=False).features, X[order])
    with open_store(store_path) as store:
        export = store.read_export("wide").sort_by("key")
        np.testing.assert_array_equal(np.stack(export.column("label_scores").to_numpy(zero_copy_only=False)),
                                      scores[order])



def test_a_whole_store_export_and_import_short_of_memory_say_so_in_one_line(store_path, monkeypatch, tmp_path):
    """copy-store's two sides size their pools by the widest row (``widest_row_bytes``); when
    the memory is still short, each side's pool error is one line, not the engine's traceback."""
    import graphstore.kuzu_store as kuzu_store
    from graphstore.errors import StoreOutOfMemory

    _, _, nodes, predictions = _wide_rows(WIDE_NODES, 32, 300)
    with open_store(store_path, create=True) as store:
        store.write_nodes("wide", nodes)
        store.write_predictions("wide", predictions)
        assert store.widest_row_bytes() == 32 * 8 + 300 * 8
        store.export_database(tmp_path / "exported", store.widest_row_bytes())
    monkeypatch.setattr(kuzu_store, "buffer_pool_bytes", lambda *args: 8 << 20)
    with pytest.raises(StoreOutOfMemory, match=r"ran out of its page cache \(8 MiB\) in import_database"):
        kuzu_store.import_database(tmp_path / "copy", ENGINE, tmp_path / "exported", 0, 300 * 8)
    monkeypatch.setattr(kuzu_store, "BUFFER_POOL_BYTES", 8 << 20)
    with open_store(store_path) as store, pytest.raises(StoreOutOfMemory, match="in export_database"):
        store.export_database(tmp_path / "again")

OPEN_IN_ANOTHER_PROCESS = """
import sys
from graphstore import StoreLocked
from graphstore.kuzu_store import KuzuStore
try:
    KuzuStore(sys.argv[1], lock_timeout=1).close()
    print("opened")
except StoreLocked:
    print("locked")
"""


def test_another_process_cannot_take_the_store_while_it_reopens_its_database(store_path):
    # the store closes and opens its database several times a run (after an export's reads,
    # after each write of predictions); in that moment Kùzu's own lock is free, and another
    # process polling for it took the database and kept it. graphlabel's lock is held throughout
    import subprocess
    import sys

    from graphstore.kuzu_store import KuzuStore

    def other_process() -> str:
        done = subprocess.run([sys.executable, "-c", OPEN_IN_ANOTHER_PROCESS, store_path], capture_output=True,
                              text=True, cwd=Path(__file__).parent.parent, timeout=120)
        return done.stdout.strip()

    store = KuzuStore(store_path, create=True)
    KuzuStore(store_path).close()  # a second store in the same process still opens, and its close keeps the lock
    store._conn.close()
    store._db.close()  # the moment of a reopen: Kùzu's lock is free
    assert other_process() == "locked"
    store._reopen(store._pool_bytes)
    store.close()
    assert other_process() == "opened"


@pytest.mark.parametrize("when", ["before the database opens", "after it opened"])
def test_a_signal_during_a_reopen_leaves_the_store_open_for_the_runs_failure(store_path, monkeypatch, when):
    """serve's stop cancels a run with SIGTERM, which can land while the store reopens its
    database; the run's failure is then written through the same store. It was not: the
    connection stayed closed ("could not mark run … failed: Connection is closed")."""
    import os
    import signal

    import graphstore.kuzu_store as kuzu_store

    opened = kuzu_store._open_database
    signals = []

    def open_with_a_signal(*args):  # one signal, as serve's stop sends one SIGTERM
        database = opened(*args) if when == "after it opened" else None
        if not signals:
            signals.append(signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt at its next step
        return database or opened(*args)

    with open_store(store_path, create=True) as store:
        store.write_nodes("toy", nodes(["a", "b"], ["x", None]))
        pool = store._pool_bytes
        monkeypatch.setattr(kuzu_store, "_open_database", open_with_a_signal)
        with pytest.raises(KeyboardInterrupt):
            store._reopen(2 * pool)
        monkeypatch.setattr(kuzu_store, "_open_database", opened)
        store.write_run(run_record("r1", 0, status="failed", error="interrupted"))
        assert store.count_nodes("toy") == 2
        assert store._pool_bytes == pool
    with open_store(store_path) as store:
        assert store.read_runs("toy")["status"].tolist() == ["failed"]


def test_under_an_address_space_limit_the_pages_region_grows_with_the_file_within_the_room(store_path, monkeypatch):
    """A file past its pages' region stops the engine ("Maximum database size of … bytes
    has been reached"): the store reopens with a larger region as the file grows, up to the
    room it took (``graphstore.address_space``), and past that says so in one line. Made real
    with small regions: 64 MiB, growing at 2x the file."""
    import numpy as np

    import graphstore.address_space as address_space
    import graphstore.kuzu_store as kuzu_store
    from graphstore.errors import StoreOutOfMemory

    monkeypatch.setattr(address_space, "SMALLEST_REGION_BYTES", 64 << 20)
    monkeypatch.setattr(address_space, "REGION_GROWTH", 4)
    rng = np.random.default_rng(0)

    def write(store, batches):
        for batch in range(batches):  # 50k nodes of 32 features: about 13 MB of pages each
            keys = [f"k{batch}-{i}" for i in range(50_000)]
            store.write_nodes("big", pa.table({"key": keys, "features": list(rng.normal(size=(50_000, 32))),
                                               "label": [None] * 50_000}, schema=NODE_SCHEMA))

    room = address_space.AddressRoom(pool=512 << 20, pages=1 << 30)
    monkeypatch.setattr(kuzu_store, "address_room", lambda path: room)
    with open_store(store_path, create=True) as store:
        assert store._region == 64 << 20
        write(store, 8)
        assert store._file.stat().st_size > 64 << 20  # past the first region, which grew
        assert store._region >= 4 * store._file.stat().st_size
        assert store.count_nodes("big") == 400_000

    small = address_space.AddressRoom(pool=512 << 20, pages=128 << 20)
    monkeypatch.setattr(kuzu_store, "address_room", lambda path: small)
    with pytest.raises(StoreOutOfMemory, match=r"(outgrown the 0\.12 GiB|reservation holds).*ulimit -v"):
        with open_store(store_path) as store:
            write(store, 8)


UNDER_AN_ADDRESS_SPACE_LIMIT = """
import resource, sys
import psutil
from graphlabel.cli import main
resource.setrlimit(resource.RLIMIT_AS, (psutil.Process().memory_info().vms + int(sys.argv[1]), resource.RLIM_INFINITY))
sys.argv[:] = ["graphlabel", *sys.argv[2:]]
main()
"""


def test_under_an_address_space_limit_the_store_labels_or_says_in_one_line_why_not(tmp_path):
    """``ulimit -v`` (a batch system's or a container's limit): the engine reserved 8 TiB of
    address space for its pages whatever the limit, so ``graphlabel demo`` under a 5 GiB one
    ended in a traceback ("Mmap for size 8796093022208 failed"). The store now reserves
    within the limit, keeping room for the run (``graphstore.address_space``), and reopens
    within what it first took; with too little room it says so in one line."""
    import os
    import subprocess
    import sys

    def demo(headroom: int, folder: Path) -> subprocess.CompletedProcess:
        # the limit is set once the CLI's module is loaded (24 MiB); the run's own imports take ~0.5 GiB of it
        return subprocess.run([sys.executable, "-c", UNDER_AN_ADDRESS_SPACE_LIMIT, str(headroom), "demo", "--store",
                               str(folder), "-q"], capture_output=True, text=True, timeout=300,
                              cwd=Path(__file__).resolve().parent.parent,
                              env={**os.environ, "GRAPHLABEL_ENGINE": ENGINE})

    labelled = demo(5 << 30, tmp_path / "roomy")
    assert labelled.returncode == 0, labelled.stderr[-2000:]
    accuracy = float(re.search(r"accuracy on the 1,697 hidden labels: ([0-9.]+)", labelled.stdout).group(1))
    assert accuracy > 0.9
    assert (tmp_path / "roomy" / DATABASE_FILE).is_file()

    refused = demo(2 << 30, tmp_path / "tight")
    assert refused.returncode == 1
    said = refused.stderr.strip()
    assert len(said.splitlines()) == 1, said[-2000:]
    assert said.startswith("error: the address-space limit (ulimit -v) leaves this process")
    assert re.search(r"where the store \S+tight needs 3\.12 GiB .* raise the limit, or lift it", said)


# -- the other engine ------------------------------------------------------------------------

if IN_DEFAULT_PROCESS:
    def test_this_file_holds_on_the_other_embedded_engine():
        """Runs this file on kuzu (the engine of the stores made before ladybug was the
        default) in a new Python process: the engines cannot share a process."""
        run_on_the_other_engine(__file__, min_passed=15)
else:  # tests that start processes of their own for each engine: run once, in the default process
    del test_the_two_engines_are_never_loaded_in_one_process
    del test_graphlabel_engine_names_the_engine_of_every_new_store_without_a_scheme
    del test_kuzus_string_column_defect_and_ladybug_without_it

