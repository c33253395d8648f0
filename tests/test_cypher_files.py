"""Every Cypher file in ``cypher/`` is checked by a parser.

- Neo4j templates (``*.neo4j.cypher``) are rendered with two configurations (today's
  names; and a user's own graph: other names, no dataset property, several feature
  properties) and every statement is parsed with the openCypher grammar of
  ``antlr4-cypher`` (PyPI), and by the live server (``EXPLAIN``, tests/test_neo4j_live.py).
  The exception is ``schema.neo4j.cypher``: openCypher has no
  schema commands, so its ``CREATE CONSTRAINT`` statements are matched against the Neo4j
  5 constraint syntax by a strict pattern instead.
- Shared files (``*.cypher`` without a dialect, the README's example queries) and the
  Neo4j-only examples are parsed with ``antlr4-cypher`` as they are.
- Kùzu files (``*.kuzu.cypher``) use ``LOAD FROM`` / ``COPY``, which openCypher does not
  have: they are checked by Kùzu's own parser and binder, with ``EXPLAIN`` in a temporary
  Kùzu database (planned, not run). The shared example queries also run on a real Kùzu
  store holding a real labelling run and are checked against the run's arrays.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from antlr4 import CommonTokenStream, InputStream
from antlr4.error.ErrorListener import ErrorListener
from antlr4_cypher import CypherLexer, CypherParser

from graphstore.identifiers import placeholders, render
from graphstore.neo4j_store import Neo4jGraphConfig
from graphstore.queries import CYPHER_DIR, load_query, split_statements
from graphstore.schemas import NODE_SCHEMA, WRITTEN_PREDICTION_SCHEMA

NEO4J_FILES = sorted(CYPHER_DIR.rglob("*.neo4j.cypher"))
KUZU_FILES = sorted(CYPHER_DIR.rglob("*.kuzu.cypher"))
SHARED_FILES = sorted(p for p in CYPHER_DIR.rglob("*.cypher") if p.name.count(".") == 1)
CONFIGS = {
    "defaults": Neo4jGraphConfig(),
    "own graph": Neo4jGraphConfig(node_label="Person", key="pid", dataset=None, features=("age", "income"),
                                  given_label="segment", relationship="LOOKS_LIKE", weight="score",
                                  run_label="Run"),
}
CONSTRAINT = re.compile(
    r"^CREATE CONSTRAINT `\w+` IF NOT EXISTS\s+FOR \((\w+):`\w+`\)\s+REQUIRE "
    r"(\1\.`?\w+`?|\((\1\.`\w+`, )+\1\.`\w+`\)) IS UNIQUE$"
)


class _Raise(ErrorListener):
    def syntaxError(self, recognizer, offending_symbol, line, column, msg, e):
        raise SyntaxError(f"line {line}:{column} {msg}")


def parse_opencypher(text: str) -> None:
    lexer = CypherLexer(InputStream(text))
    lexer.removeErrorListeners()
    lexer.addErrorListener(_Raise())
    parser = CypherParser(CommonTokenStream(lexer))
    parser.removeErrorListeners()
    parser.addErrorListener(_Raise())
    parser.script()


def query_name(path) -> str:
    relative = path.relative_to(CYPHER_DIR).as_posix()
    return relative.split(".")[0]


def test_the_parser_rejects_broken_cypher():
    for broken in ("MATCH (e:Entity WHERE e.x = 1 RETURN e", "MATCH (e) RETURN e ORDER", "UNWIND $rows row"):
        with pytest.raises(SyntaxError):
            parse_opencypher(broken)


# Statements with no Neo4j meaning: Kùzu's CHECKPOINT (the server manages its own), and the
# existing-pairs check of Kùzu's add_edges (Neo4j's MERGE batches need none).
# ingest-edges loads the user's edges into the embedded store only, marking the ends of changed ones
# (on Neo4j they are the user's)
# Kùzu's bulk paths: new nodes COPYed after a check of which exist (Neo4j MERGEs in UNWIND
# batches), the SIMILAR table dropped when it is one dataset's (Neo4j deletes in batches), the
# features and the export read a slice of table offsets at a time (where the export ends: last_offset).
KUZU_ONLY = {"checkpoint", "existing_edges", "delete_user_edges", "insert_user_edges", "mark_changed",
             "existing_nodes", "insert_nodes", "count_other_edges", "drop_similar", "read_features", "node_offsets",
             "last_offset", "widest_row", "entity_columns"}


def test_every_kuzu_query_has_a_neo4j_counterpart():
    neo4j_names = {query_name(p) for p in NEO4J_FILES}
    assert KUZU_FILES
    assert {query_name(p) for p in KUZU_FILES} - KUZU_ONLY <= neo4j_names


# Valid Neo4j that the openCypher grammar refuses: `gds.graph.drop` (DROP is one of its
# reserved words). Every template, these too, is also checked by the live server's own
# parser and planner (EXPLAIN) in tests/test_neo4j_live.py.
GRAMMAR_REFUSES = {"gds_drop"}


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
@pytest.mark.parametrize("path", NEO4J_FILES, ids=lambda p: p.name)
def test_neo4j_templates_parse_once_rendered(path, config_name):
    name = query_name(path)
    template = load_query(name, "neo4j")
    text = render(template, CONFIGS[config_name].fragments())
    assert "${" not in text
    statements = split_statements(text)
    assert statements
    for statement in statements:
        if name == "schema":
            assert CONSTRAINT.match(" ".join(statement.split()).replace("( ", "(")), statement
        elif name not in GRAMMAR_REFUSES:
            parse_opencypher(statement)


def test_every_placeholder_is_a_validated_fragment():
    known = set(Neo4jGraphConfig().fragments())
    used = set().union(*(placeholders(p.read_text()) for p in NEO4J_FILES))
    assert used
    assert used <= known
    assert not any(placeholders(p.read_text()) for p in KUZU_FILES + SHARED_FILES)


def test_schema_pattern_refuses_other_statements():
    for statement in ("CREATE CONSTRAINT `c` FOR (e:`E`) REQUIRE e.`k` IS UNIQUE",  # no IF NOT EXISTS
                      "CREATE CONSTRAINT `c` IF NOT EXISTS FOR (e:`E`) REQUIRE e.`k` IS NOT NULL",
                      "DROP CONSTRAINT `c`"):
        assert not CONSTRAINT.match(statement)


@pytest.mark.parametrize("path", SHARED_FILES, ids=lambda p: p.name)
def test_shared_files_parse_as_opencypher(path):
    for statement in split_statements(load_query(query_name(path), "neo4j")):
        parse_opencypher(statement)


def _kuzu_parameters(name: str) -> dict:
    """Values of the right types for the parameters of the Kùzu files (EXPLAIN binds them)."""
    now = pd.Timestamp("2026-01-01").to_pydatetime()
    # the columns KuzuStore.write_nodes sends (features as the BLOB Kùzu keeps)
    node_rows = pa.table({"uid": ["d:a"], "dataset": ["d"], "key": ["a"], "features": [b"\x00" * 8],
                          "given_label": ["x"], "categories": pa.array([["red"]], pa.list_(pa.string())),
                          "given_label_confidence": [0.5], "content_hash": pa.array([1], pa.int64())})
    predictions = pa.table({
        "key": ["a"], "predicted_label": ["x"], "label_confidence": [0.5], "label_noise": [False],
        "label_noise_score": [0.1], "label_run_id": ["r"], "label_solver": ["s"],
        "labelled_at": [now], "label_scores": [[0.5, 0.5]], "label_runner_up": ["y"],
        "label_margin": [0.0]}).cast(WRITTEN_PREDICTION_SCHEMA)
    # the adapter sends the scores as the BLOB Kùzu keeps
    predictions = predictions.set_column(predictions.column_names.index("label_scores"), "label_scores",
                                         pa.array([b"\x00" * 16]))
    tables = {
        "upsert_nodes": {"rows": node_rows, "now": now},
        "insert_nodes": {"rows": node_rows.append_column("updated_at", pa.array([now], pa.timestamp("us")))},
        "existing_nodes": {"rows": node_rows.select(["uid"])},
        "node_offsets": {"rows": node_rows.select(["uid"])},
        "mark_changed": {"rows": node_rows.select(["uid"]), "now": now},
        "write_predictions": {"rows": predictions.append_column("uid", pa.array(["d:a"]))},
        "insert_edges": {"edges": pa.table({"from": ["d:a"], "to": ["d:a"], "weight": [1.0],
                                            "dataset": ["d"]})},
        "add_edges": {"edges": pa.table({"from": ["d:a"], "to": ["d:a"], "weight": [1.0], "dataset": ["d"]})},
        "existing_edges": {"edges": pa.table({"from": ["d:a"], "to": ["d:a"], "weight": [1.0],
                                              "dataset": ["d"]})},
        "write_graph_build": {"dataset": "d", "spec": "{}", "built_at": now},
        "write_feature_columns": {"dataset": "d", "columns": "{}", "recorded_at": now},
        "insert_user_edges": {"edges": pa.table({"from": ["d:a"], "to": ["d:a"], "type": ["T"], "weight": [1.0],
                                                 "dataset": ["d"]})},
    }
    scalars = {"dataset": "d", "run_id": "r", "solver": "s", "parameters": "{}", "metrics": "{}",
               "timings": "{}", "started_at": now, "finished_at": now, "n_nodes": 1, "n_labeled": 1,
               "n_flagged": 0, "status": "completed", "versions": "{}", "error": "e", "max_rows": 1,
               "run_ids": ["r"], "uid": "d:a", "key": "a", "process": "{}", "heartbeat_at": now, "seen": now,
               "classes": "[]", "decision": "accept", "label": "x", "reviewer": "r", "decided_at": now,
               "decision_id": "i", "previous": "x",
               "edge_type": "T", "first": 0, "last": 1}
    return tables.get(name, scalars)


def test_kuzu_files_pass_kuzus_own_parser(tmp_path):
    """On the engine of this process (ladybug, kuzu's fork: one parser; the kuzu run of the
    store contract executes every one of them on kuzu too)."""
    from engines import DATABASE_FILE, ENGINE

    from graphstore.kuzu_store import engine_module

    engine = engine_module(ENGINE)
    db = engine.Database(str(tmp_path / DATABASE_FILE))
    conn = engine.Connection(db)
    for statement in split_statements(load_query("schema", "kuzu")):
        conn.execute(statement)
    with pytest.raises(RuntimeError):
        conn.execute("EXPLAIN MATCH (e:Entity WHERE e.key = 1 RETURN e")
    for path in KUZU_FILES:
        name = query_name(path)
        if name == "schema":
            continue
        text = load_query(name, "kuzu")
        parameters = _kuzu_parameters(name)
        needed = set(re.findall(r"\$(\w+)", text))
        # kuzu 0.11.3 crashes the process (segfault) on EXPLAIN with a parameter unbound
        assert needed <= set(parameters), f"{name}: give _kuzu_parameters {sorted(needed - set(parameters))}"
        for statement in split_statements(text):  # drop_dataset holds several
            conn.execute("EXPLAIN " + statement, {k: v for k, v in parameters.items() if k in needed})
    assert conn.execute("MATCH (e:Entity) RETURN count(e)").get_next() == [0]  # planned only
    conn.close()
    db.close()


@pytest.fixture(scope="module")
def labelled_kuzu_store(tmp_path_factory):
    """A Kùzu store with 300 digits, a kNN graph, one harmonic run and a wrong given label."""
    from sklearn.datasets import load_digits

    import similarity
    import solvers
    from graphstore import LabelRunRecord, open_store
    from graphstore.schemas import edge_table
    from labelling.problems import label_problem, prediction_rows

    X, y = load_digits(return_X_y=True)
    X, y = X[:300], y[:300]
    keys = np.array([f"d{i}" for i in range(len(y))], dtype=object)
    given = [str(v) if i % 5 == 0 else None for i, v in enumerate(y)]
    given[0] = "7"  # digit 0 given the wrong label
    store = open_store(str(tmp_path_factory.mktemp("examples") / "store"), create=True)
    store.write_nodes("digits", pa.table({"key": keys.tolist(), "features": X.tolist(), "label": given})
                      .cast(NODE_SCHEMA))
    store.replace_edges("digits", edge_table(keys, similarity.knn_graph(X, 8)))
    exported = label_problem(store.read_subgraph("digits"), "digits")
    prediction = solvers.solve(exported.problem, "harmonic")
    now = pd.Timestamp("2026-01-01 12:00", tz="UTC")
    store.write_predictions("digits", prediction_rows(exported, prediction, "run-1", now))
    store.write_run(LabelRunRecord("run-1", "digits", "harmonic", {}, {}, {}, now, now, len(y),
                                   int(exported.problem.labeled.sum()), int(prediction.noisy.sum())))
    yield store, exported, prediction
    store.close()


def test_example_low_confidence_on_kuzu(labelled_kuzu_store):
    store, exported, prediction = labelled_kuzu_store
    threshold = float(np.sort(prediction.confidence)[20])  # 20 nodes lie below it
    frame = store.query(load_query("examples/low_confidence", "kuzu"),
                        {"dataset": "digits", "max_confidence": threshold, "max_rows": 7})
    order = np.lexsort((exported.keys.astype(str), prediction.confidence))
    below = order[prediction.confidence[order] < threshold]
    assert len(below) >= 7
    assert frame["key"].tolist() == exported.keys[below[:7]].tolist()
    assert frame["confidence"].to_numpy() == pytest.approx(prediction.confidence[below[:7]])


def test_example_flagged_with_neighbours_on_kuzu(labelled_kuzu_store):
    store, exported, prediction = labelled_kuzu_store
    frame = store.query(load_query("examples/flagged_with_neighbours", "kuzu"), {"dataset": "digits"})
    assert sorted(frame["key"]) == sorted(exported.keys[prediction.noisy])
    assert "d0" in set(frame["key"])  # the planted wrong label is caught
    W = exported.problem.W.tocsr()
    position = {k: i for i, k in enumerate(exported.keys)}
    for key, neighbours in zip(frame["key"], frame["neighbours"]):
        row = W[position[key]]
        expected = {exported.keys[j]: w for j, w in zip(row.indices, row.data)}
        assert {n["key"]: n["weight"] for n in neighbours} == pytest.approx(expected)


def test_example_class_counts_per_run_on_kuzu(labelled_kuzu_store):
    store, exported, prediction = labelled_kuzu_store
    frame = store.query(load_query("examples/class_counts_per_run", "kuzu"), {"dataset": "digits"})
    assert frame["run_id"].tolist() == ["run-1"]  # one row per run, its metrics once
    got = {item["label"]: item["nodes"] for item in frame["nodes_now"][0]}
    classes, counts = np.unique(exported.classes[prediction.labels[prediction.labels >= 0]], return_counts=True)
    assert got == dict(zip(classes, counts))


def test_example_prediction_drivers_on_kuzu(labelled_kuzu_store):
    store, exported, prediction = labelled_kuzu_store
    frame = store.query(load_query("examples/prediction_drivers", "kuzu"),
                        {"dataset": "digits", "key": "d1", "max_rows": 5})
    row = exported.problem.W.tocsr()[1]
    strongest = np.argsort(-row.data, kind="stable")[:5]
    assert frame["weight"].to_numpy() == pytest.approx(row.data[strongest])
    assert set(frame["neighbour"]) == set(exported.keys[row.indices[strongest]])
    predicted = exported.classes[prediction.labels[1]]
    neighbour_labels = frame["given_label"].where(frame["given_label"].notna(), frame["predicted_label"])
    assert frame["agrees"].tolist() == (neighbour_labels == predicted).tolist()


def test_example_label_shares_and_explain_match_the_solvers_graph(labelled_kuzu_store):
    """The README's "why" query and `GraphStore.explain` against W, the matrix the solver
    averaged over: per class, the weight of the neighbours whose given (else predicted)
    label it is; shares over the weighted degree; the strongest neighbours in order."""
    from graphstore.errors import NotFound

    store, exported, prediction = labelled_kuzu_store
    W = exported.problem.W.tocsr()
    y = exported.problem.y
    voted = np.where(y >= 0, y, prediction.labels)  # given label, else predicted
    position = {k: i for i, k in enumerate(exported.keys)}
    for key in ("d0", "d1", "d5", "d123"):  # the planted wrong label, unlabelled and labelled nodes
        i = position[key]
        row = W[i]
        expected: dict = {}
        for j, w in zip(row.indices, row.data):
            label = exported.classes[voted[j]] if voted[j] >= 0 else None
            expected[label] = expected.get(label, 0.0) + w
        degree = row.data.sum()

        frame = store.query(load_query("examples/label_shares", "kuzu"), {"dataset": "digits", "key": key})
        assert dict(zip(frame["label"], frame["class_weight"])) == pytest.approx(expected)
        assert frame["neighbours"].sum() == row.nnz
        assert frame["class_weight"].is_monotonic_decreasing

        node, neighbours = store.explain("digits", key, limit=4)
        assert node["class_shares"] == pytest.approx({c: w / degree for c, w in expected.items()})
        assert list(node["class_shares"].values()) == sorted(node["class_shares"].values(), reverse=True)
        assert node["degree"] == pytest.approx(degree)
        assert node["n_neighbours"] == row.nnz
        assert node["predicted_label"] == exported.classes[prediction.labels[i]]
        assert node["given_label"] == (exported.classes[y[i]] if y[i] >= 0 else None)
        assert node["label_run_id"] == "run-1"
        assert node["label_noise"] == (bool(prediction.noisy[i]) if y[i] >= 0 else None)
        strongest = np.argsort(-row.data, kind="stable")[:4]
        assert neighbours["weight"].to_numpy() == pytest.approx(row.data[strongest])
        assert neighbours["share"].to_numpy() == pytest.approx(row.data[strongest] / degree)
        assert set(neighbours["key"]) == set(exported.keys[row.indices[strongest]])
        assert neighbours["agrees"].tolist() == (neighbours["label"] == node["predicted_label"]).tolist()
    # d0 is a 0 given the label 7: its neighbours' vote goes to its prediction, not to 7
    node, _ = store.explain("digits", "d0")
    assert node["given_label"] == "7"
    assert next(iter(node["class_shares"])) == node["predicted_label"] != "7"
    with pytest.raises(NotFound, match="no node with key 'nope' in dataset 'digits'"):
        store.explain("digits", "nope")


def test_the_readmes_queries_are_the_example_files():
    """Every Cypher block of the README is an example file as it stands (comments aside), so
    the live suite, which runs the files on labelled data (tests/test_neo4j_live.py), runs
    the README's queries."""
    readme = (CYPHER_DIR.parent / "README.md").read_text()
    blocks = re.findall(r"```cypher\n(.*?)```", readme, flags=re.S)
    def words(text: str) -> str:
        return " ".join(text.split())

    examples = {words(load_query(query_name(p), "neo4j")): p.name
                for p in CYPHER_DIR.joinpath("examples").glob("*.cypher")}
    assert len(blocks) >= 6
    for block in blocks:
        assert words(block) in examples, block
