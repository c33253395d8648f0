"""``graphlabel copy-store``: a store made with Kùzu 0.11.3, used as a user uses it (two
datasets ingested and labelled, a maxmargin model, a corrected label, the user's own edges),
copied into a new ladybug store, which must hold the same predictions, runs, decisions,
edges and model, and go on from them. Every command runs as a process of its own, as a user
runs it (this process loads ladybug, and Kùzu cannot load beside it)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_wine

GRAPHLABEL = Path(sys.executable).with_name("graphlabel")
ROOT = Path(__file__).resolve().parent.parent


def graphlabel(*arguments: str, cwd: Path, ok: bool = True, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(GRAPHLABEL), *arguments], capture_output=True, text=True, cwd=cwd, timeout=600,
                          env={**os.environ, **env})
    if ok:
        assert done.returncode == 0, f"graphlabel {' '.join(arguments)}:\n{done.stdout}{done.stderr}"
    return done


def write_set(folder: Path, name: str, loader) -> Path:
    data = loader()
    frame = pd.DataFrame(data.data, columns=[f"f{i}" for i in range(data.data.shape[1])])
    frame.insert(0, "id", [f"{name}{i}" for i in range(len(frame))])
    frame["label"] = np.where(np.arange(len(frame)) % 5 == 0, np.asarray(data.target_names)[data.target], "")
    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


def query(store: str, cypher: str, cwd: Path) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(graphlabel("query", cypher, "--store", store, "--format", "csv", cwd=cwd).stdout))


@pytest.fixture(scope="module")
def kuzu_store(tmp_path_factory):
    """A Kùzu store as a user of the release before left it."""
    folder = tmp_path_factory.mktemp("copy")
    store = "kuzu://old"
    for name, loader in (("wine", load_wine), ("cancer", load_breast_cancer)):
        graphlabel("ingest", str(write_set(folder, name, loader)), "--dataset", name, "--key", "id",
                   "--features", "f*", "--label", "label", "--store", store, cwd=folder)
    (folder / "edges.csv").write_text("a,b,w\nwine1,wine2,0.5\nwine3,wine4,1\nwine5,wine6,2\n")
    graphlabel("ingest-edges", "edges.csv", "--dataset", "wine", "--source", "a", "--target", "b", "--weight",
               "w", "--store", store, cwd=folder)
    graphlabel("label", "--dataset", "wine", "--store", store, cwd=folder)
    graphlabel("label", "--dataset", "cancer", "--solver", "maxmargin", "--store", store, cwd=folder)
    graphlabel("correct", "wine0", "--dataset", "wine", "--label", "class_1", "--reviewer", "ana", "--store", store,
               cwd=folder)
    return folder


def test_a_kuzu_store_is_copied_to_ladybug_with_all_it_holds(kuzu_store):
    folder = kuzu_store
    done = graphlabel("copy-store", "old", "new", cwd=folder)
    said = " ".join(done.stdout.split())
    assert said.startswith("copied the kuzu store old into a new ladybug store at new in"), said
    assert "747 nodes, " in said, said
    assert "3 user edges, 2 graph records, 2 label runs, 1 review decision, 1 model" in said, said
    assert (folder / "new" / "graph.lbug").is_file()
    assert not (folder / "new" / "graph.kuzu").exists()
    assert not [path for path in folder.iterdir() if path.name.startswith(".graphlabel-copy-")]
    for dataset in ("wine", "cancer"):  # the predictions, scores and flags, row for row
        for store in ("old", "new"):
            graphlabel("export", "--dataset", dataset, "--store", store, "--output", f"{store}-{dataset}.parquet",
                       cwd=folder)
        old, new = (pd.read_parquet(folder / f"{store}-{dataset}.parquet").sort_values("key", ignore_index=True)
                    for store in ("old", "new"))
        pd.testing.assert_frame_equal(old, new)
        assert new["predicted_label"].notna().all()
    for cypher in ("MATCH (r:LabelRun) RETURN r.run_id, r.dataset, r.solver, r.status, r.metrics ORDER BY r.run_id",
                   "MATCH (d:LabelDecision)-[:REVIEWS]->(n:Entity) RETURN d.key, d.label, d.previous_label,"
                   " d.reviewer, n.given_label",
                   "MATCH (a:Entity)-[e:USER_EDGE]->(b:Entity) RETURN a.key, b.key, e.weight ORDER BY a.key",
                   "MATCH (a:Entity)-[e:SIMILAR]->(b:Entity) RETURN a.dataset, count(e), sum(e.weight)"
                   " ORDER BY a.dataset"):
        old, new = query("old", cypher, folder), query("new", cypher, folder)
        pd.testing.assert_frame_equal(old, new)
        assert len(new) >= 1, cypher
    # the copy goes on from where the source was: the correction is the one change to label
    relabelled = " ".join(graphlabel("label", "--dataset", "wine", "--store", "new", cwd=folder).stdout.split())
    assert "incremental run: 1 changed node (0 new)" in relabelled, relabelled
    # and the maxmargin model came with it
    graphlabel("predict", "cancer.csv", "--dataset", "cancer", "--key", "id", "--features", "f*", "--output",
               "predicted.csv", "--store", "new", cwd=folder)
    assert len(pd.read_csv(folder / "predicted.csv")) == 569
    # the source is as it was, and still a Kùzu store
    assert (folder / "old" / "graph.kuzu").is_file()
    assert not (folder / "old" / "graph.lbug").exists()
    runs = query("old", "MATCH (r:LabelRun) RETURN count(r) AS runs", folder)
    assert runs["runs"].tolist() == [2]


WIDE_KUZU_STORE = """
import sys
import numpy as np
from bench.store import wide_tables
from graphstore import open_store
nodes, predictions = wide_tables(50_000, 32, 1_000, np.random.default_rng(0))
with open_store("kuzu://" + sys.argv[1], create=True) as store:
    store.write_nodes("wide", nodes)
    store.write_predictions("wide", predictions)
"""


def test_a_kuzu_store_of_wide_rows_is_copied(tmp_path):
    """Predictions of 1,000 classes on 50,000 nodes (a node's scores are 8 kB): the export
    failed with the engine's 'buffer pool is full' (so did the import, from 20,000 such
    nodes). Both sides now size their pools by the widest row, as the store's writes do."""
    subprocess.run([sys.executable, "-c", WIDE_KUZU_STORE, "old"], cwd=tmp_path, check=True, timeout=600,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    said = " ".join(graphlabel("copy-store", "old", "new", cwd=tmp_path).stdout.split())
    assert "50,000 nodes" in said, said
    for store in ("old", "new"):
        graphlabel("export", "--dataset", "wide", "--store", store, "--output", f"{store}.parquet", cwd=tmp_path)
    old, new = (pd.read_parquet(tmp_path / f"{store}.parquet").sort_values("key", ignore_index=True)
                for store in ("old", "new"))
    assert new.shape == (50_000, old.shape[1])
    pd.testing.assert_frame_equal(old, new)


def test_the_default_store_is_copied_and_the_way_to_put_the_copy_in_its_place_is_said(kuzu_store):
    folder = kuzu_store
    shutil.copytree(folder / "old", folder / "mine")  # a store of one's own (the other tests read old)
    done = graphlabel("copy-store", "mine", "mine-copy", cwd=folder, GRAPHLABEL_STORE="mine")
    hint = done.stdout.strip().splitlines()[-1]
    way = "mv mine mine-kuzu && mv mine-copy mine"
    assert hint == f"the source is the default store, unchanged; to put the copy in its place: {way}", hint
    subprocess.run(way, shell=True, cwd=folder, check=True)  # noqa: S602 - the line a user pastes
    said = " ".join(graphlabel("report", "--dataset", "wine", cwd=folder, GRAPHLABEL_STORE="mine").stdout.split())
    assert "completed harmonic full" in said, said
    assert (folder / "mine" / "graph.lbug").is_file()
    assert not (folder / "mine" / "graph.kuzu").exists()


@pytest.mark.parametrize("source, destination, said", [
    ("old", "taken", "taken already exists and is not an empty folder: copy-store makes a new store"),
    ("missing", "elsewhere", "no store at missing: check the source folder"),
    ("old", "kuzu://elsewhere", "copy-store makes ladybug stores, not kuzu ones"),
    ("bolt://127.0.0.1:7687", "elsewhere", "copy-store copies embedded stores, and bolt:// is Neo4j"),
])
def test_what_copy_store_refuses_is_one_line(kuzu_store, source, destination, said):
    folder = kuzu_store
    (folder / "taken").mkdir(exist_ok=True)
    (folder / "taken" / "notes.txt").write_text("mine")
    done = graphlabel("copy-store", source, destination, cwd=folder, ok=False)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: {said}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (folder / "elsewhere").exists()
    assert (folder / "taken" / "notes.txt").read_text() == "mine"


def test_a_ladybug_store_is_not_copied_again(kuzu_store, tmp_path):
    graphlabel("ingest", str(write_set(tmp_path, "wine", load_wine)), "--dataset", "wine", "--key", "id",
               "--features", "f*", "--label", "label", "--store", "lady", cwd=tmp_path)
    done = graphlabel("copy-store", "lady", "again", cwd=tmp_path, ok=False)
    assert done.returncode == 1
    assert done.stderr.startswith("error: the store lady is already a ladybug store"), done.stderr
    assert not (tmp_path / "again").exists()


DEFECT = """
import sys
source = open(sys.argv[1]).read().replace('path = f"{folder}/db"', 'path = f"{folder}/graph.kuzu"')
sys.argv = ["engine_defect.py", "kuzu", sys.argv[2]]
exec(compile(source.rsplit("print(", 1)[0] + "conn.close(); db.close()", "engine_defect.py", "exec"))
"""


def test_a_kuzu_store_that_met_the_defect_is_said_in_one_line_and_leaves_nothing(tmp_path):
    # tests/engine_defect.py's reduced case, without its last read, as a store's database:
    # Kùzu's export then reads the damaged column and ends the process
    (tmp_path / "broken").mkdir()
    subprocess.run([sys.executable, "-c", DEFECT, str(ROOT / "tests" / "engine_defect.py"), str(tmp_path / "broken")],
                   check=True, timeout=120)
    done = graphlabel("copy-store", "broken", "rescued", cwd=tmp_path, ok=False)
    assert done.returncode == 1
    assert done.stderr.startswith("error: the kuzu engine crashed while it exported the store broken (signal 11);"
                                  " a Kùzu store of several datasets that ends this way has most likely met Kùzu"
                                  " 0.11.3's string-column defect"), done.stderr
    assert not (tmp_path / "rescued").exists()
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".graphlabel-copy-")]
