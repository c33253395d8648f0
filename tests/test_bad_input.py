"""Issue 14: bad input that got through an adversarial run, each defect reproduced with the
commands of the issue, through the command line, against a real Kùzu store in a temporary
folder and a real Prefect server (the session's test harness).

Most commands run in-process with typer's runner (the same ``app`` the console script
calls). Where the process itself matters (a second process holding the store's lock, a
``kill -9``, what a user sees on the terminal: Prefect's own log lines, tracebacks), the
real console script runs as a subprocess, pointed at the harness's Prefect server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from prefect_runs import flow_runs_tagged
from store_lock import hold_lock
from typer.testing import CliRunner

from graphlabel.cli import app

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()
GRAPHLABEL = Path(sys.executable).parent / "graphlabel"


def rejects_line(output: str) -> list[str]:
    """The command's own "rejected N rows" line. Not a search for the word: when Prefect's
    console log reaches the runner's output (it depends on which test set up logging
    first), the flow's log line "stored 60 nodes in dataset 'star', rejected 0 rows" is there too."""
    return re.findall(r"^rejected \d.*$", output, flags=re.M)


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path, monkeypatch):
    """Commands write DATASET.rejects.csv in the working folder: keep it in the test's."""
    monkeypatch.chdir(tmp_path)


def cli(*args, env: dict | None = None):
    """Run ``graphlabel ARGS`` in-process; the result has ``exit_code`` and ``output``."""
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200", **(env or {})})


def cli_process(*args, cwd, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """Run the real console script, as a user's shell would, against the harness's server."""
    from prefect.settings import PREFECT_API_URL

    environment = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "COLUMNS": "200",
                   **(env or {})}
    return subprocess.run([str(GRAPHLABEL), *map(str, args)], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=timeout)


def two_blobs(n: int = 60, labelled: int = 20, dim: int = 3, seed: int = 0, gap: float = 4.0) -> pd.DataFrame:
    """``n`` records in two blobs ``gap`` apart (separated by default), ``labelled`` of them
    with their class."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, dim))
    X[n // 2:] += gap
    label = np.array(["a"] * (n // 2) + ["b"] * (n - n // 2), dtype=object)
    label[rng.permutation(n)[labelled:]] = ""
    frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(dim)])
    frame.insert(0, "id", [f"n{i}" for i in range(n)])
    frame["label"] = label
    return frame


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(path, index=False)
    return path


# -- 14, 15: hostile input and secrets ----------------------------------------------------


@pytest.mark.parametrize("name", ["base\n", "base\r\n", "\nbase"])
def test_14_a_dataset_name_with_a_newline_is_refused(tmp_path, store_path, name):
    csv = write_csv(tmp_path / "base.csv", two_blobs())
    result = cli("ingest", csv, "--dataset", name, "--key", "id", "--features", "x*", "--label", "label",
                 "--store", store_path)
    assert result.exit_code == 1, result.output
    assert "invalid dataset name" in result.output
    assert not Path(store_path).exists()  # refused before the store was opened


@pytest.mark.usefixtures("prefect_harness")
def test_14_a_refused_dataset_name_never_reaches_prefect(tmp_path, store_path):
    from prefect import get_client

    csv = write_csv(tmp_path / "base.csv", two_blobs())
    done = cli_process("ingest", csv, "--dataset", "base14\n", "--key", "id", "--features", "x*", "--store",
                       store_path, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: invalid dataset name"), done.stderr
    with get_client(sync_client=True) as client:
        assert flow_runs_tagged(client, "base14\n") == []


@pytest.mark.usefixtures("prefect_harness")
def test_14_a_missing_file_is_said_before_a_store_or_a_run_is_made(tmp_path, store_path):
    """A misspelt path made an empty store (a newcomer's first command: the default
    ./.graphlabel) and, with a server, a failed run in the dashboard."""
    from prefect import get_client

    from flows.labelling import ingest_flow

    done = cli_process("ingest", tmp_path / "nope.csv", "--dataset", "nofile14", "--key", "id", "--features", "x*",
                       "--store", store_path, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == f"error: no such file: {tmp_path / 'nope.csv'}", done.stderr
    assert not Path(store_path).exists()
    with get_client(sync_client=True) as client:
        assert flow_runs_tagged(client, "nofile14") == []
    with pytest.raises(FileNotFoundError, match="no such file"):  # the flow from Python, as it says it
        ingest_flow(str(tmp_path / "nope.csv"), "nofile14", "id", "x*", store_uri=store_path)
    assert not Path(store_path).exists()


def test_14_every_identifier_check_matches_the_whole_name():
    from graphstore import check_dataset_name
    from graphstore.identifiers import check_identifier

    for good in ("base", "Entity"):
        assert check_dataset_name(good) == good
        assert check_identifier(good) == good
    for bad in ("base\n", "Entity\n"):
        with pytest.raises(ValueError):
            check_dataset_name(bad)
        with pytest.raises(ValueError):
            check_identifier(bad)


@pytest.mark.parametrize("uri", ["neo4j://127.0.0.1:1?password=hunter2",
                                 "bolt://127.0.0.1:1/?policy=eu&Auth_Token=hunter2",
                                 "neo4j://127.0.0.1:1?pwd=hunter2#frag"])
def test_15_a_password_in_the_uri_query_is_refused_and_never_shown(uri):
    result = cli("query", "RETURN 1", "--store", uri)
    assert result.exit_code == 2, result.output
    assert "holds credentials" in result.output
    assert "hunter2" not in result.output


def test_15_any_query_string_is_redacted_in_messages():
    from graphstore.secrets import check_store_uri, redact, redact_uri

    assert redact_uri("neo4j://db:7687?policy=eu") == "neo4j://db:7687?***"
    assert redact("cannot reach bolt://db:7687/x?a=1&b=2 now") == "cannot reach bolt://db:7687/x?*** now"
    assert redact_uri("neo4j://alice:pw@db?token=t") == "neo4j://alice:***@db?***"
    assert check_store_uri("neo4j://db:7687?policy=eu") == "neo4j://db:7687?policy=eu"  # routing context
    for uri in ("neo4j://db?password=x", "neo4j://db?credentials=x", "bolt://db?secret=x", "neo4j://db?key=x"):
        with pytest.raises(ValueError, match="holds credentials"):
            check_store_uri(uri)


def test_15_a_refused_uri_never_reaches_prefect(tmp_path):
    from prefect import get_client

    csv = write_csv(tmp_path / "base.csv", two_blobs())
    result = cli("ingest", csv, "--dataset", "secretive15", "--key", "id", "--features", "x*",
                 "--store", "neo4j://127.0.0.1:1?password=hunter2")
    assert result.exit_code == 2
    assert "hunter2" not in result.output
    with get_client(sync_client=True) as client:
        assert flow_runs_tagged(client, "secretive15") == []


# -- 4, 5: the query command ----------------------------------------------------------------


@pytest.fixture
def two_datasets(tmp_path, store_path):
    """A store holding datasets ``base`` and ``other``, 60 nodes each."""
    csv = write_csv(tmp_path / "base.csv", two_blobs())
    for dataset in ("base", "other"):
        result = cli("ingest", csv, "--dataset", dataset, "--key", "id", "--features", "x*", "--label", "label",
                     "--store", store_path)
        assert result.exit_code == 0, result.output
    return store_path


def count_nodes(store: str) -> int:
    result = cli("query", "MATCH (e:Entity) RETURN count(e) AS n", "--store", store)
    assert result.exit_code == 0, result.output
    return int(result.output.split("│")[-2]) if "│" in result.output else int(result.output.split()[-3])


def test_a_misspelt_dataset_is_one_line_and_leaves_no_failed_run_behind(two_datasets):
    """``label --dataset`` with a name no node has printed the export stage's "0 nodes" lines
    before its error, and left a failed LabelRun that ``report`` then listed (a newcomer's walk).
    Every command that takes a dataset says the same line, which names the store's datasets."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(Path(two_datasets).parent / "prefect-home"), COLUMNS="200")  # as a user, no server

    def said(*args: str) -> tuple[int, list[str]]:
        done = subprocess.run([str(Path(sys.executable).with_name("graphlabel")), *args, "--store", two_datasets],
                              capture_output=True, text=True, env=env, timeout=300)
        return done.returncode, (done.stdout + done.stderr).strip().splitlines()

    unknown = "error: no dataset 'bsae' in the store (no node belongs to it); its datasets: 'base', 'other'"
    records = str(Path(two_datasets).parent / "base.csv")
    for command in (("label",), ("build-graph",), ("report",), ("export",), ("drop-dataset", "--yes"),
                    ("prune-runs", "--keep-last", "1"), ("accept", "a0"), ("correct", "a0", "--label", "a"),
                    ("predict", records, "--key", "id", "--features", "x*", "--label", "label")):
        assert said(*command, "--dataset", "bsae") == (1, [unknown]), command
    assert said("report", "--dataset", "base") == (  # nodes, and no run yet (the misspelt label recorded none)
        1, ["error: no runs of dataset 'base' in the store yet: graphlabel label --dataset base starts one"])
    assert said("drop-dataset", "--yes") == (
        2, ["error: name the dataset to delete once: graphlabel drop-dataset NAME (or --dataset NAME)"])


def test_04_a_query_with_an_unbound_parameter_is_refused_naming_it(two_datasets):
    result = cli("query", "MATCH (e:Entity) WHERE e.dataset=$ds RETURN count(e)", "--store", two_datasets)
    assert result.exit_code == 1, result.output
    assert "$ds" in result.output
    assert "-p ds=" in result.output
    result = cli("query", "MATCH (e:Entity) WHERE e.dataset=$ds RETURN count(e) AS n", "-p", "ds=base",
                 "--store", two_datasets)
    assert result.exit_code == 0, result.output
    assert " 60 " in result.output, result.output
    # '$ds' in a string or a comment is not a parameter
    result = cli("query", "MATCH (e:Entity) WHERE e.key <> '$ds' // $x\nRETURN count(e) AS n",
                 "--store", two_datasets)
    assert result.exit_code == 0, result.output
    assert " 120 " in result.output, result.output


def test_05_a_statement_the_store_refuses_says_why_in_one_line(two_datasets):
    """A misspelt property said only "No active transaction for ROLLBACK": the engine had
    ended the transaction itself, and the adapter's ROLLBACK raised over the real error."""
    result = cli("query", "MATCH (e:Entity) RETURN e.confidence", "--store", two_datasets)
    assert result.exit_code == 1, result.output
    assert "error: query failed: Binder exception: Cannot find property confidence for e." in result.output
    assert "ROLLBACK" not in result.output
    result = cli("query", "MATCH (e:Entity) RETURN count(e) AS n", "--store", two_datasets)
    assert result.exit_code == 0, result.output
    assert " 120 " in result.output, result.output


@pytest.mark.parametrize("command, says", [
    (["label", "--params", '{"gamma_q": 1}'], "error: harmonic has no parameter 'gamma_q'; its parameters: gamma_g, "),
    (["label", "--params", '{"gamma_g": -1}'], "error: gamma_g must be a finite number >= 0"),
    (["label", "--params", "[1]"], "error: --params must be a JSON object of the solver's parameters, such as"),
    (["label", "--rebuild-graph", "--scale", "minmax"], "error: scale must be one of"),
    (["build-graph", "--scale", "minmax"], "error: scale must be one of"),
])
def test_a_bad_solver_or_graph_option_is_refused_before_a_run_starts(tmp_path, store_path, command, says):
    """It was a failed LabelRun on the record, and a failed flow run on the Prefect server,
    for every misspelt --params; a bad graph option was a failed flow run."""
    import uuid

    from prefect import get_client

    from graphstore import open_store

    dataset = f"params-{uuid.uuid4().hex[:8]}"  # its own: the session's Prefect server is shared
    ingested = cli("ingest", write_csv(tmp_path / "d.csv", two_blobs()), "--dataset", dataset, "--key", "id",
                   "--features", "x*", "--label", "label", "--store", store_path)
    assert ingested.exit_code == 0, ingested.output
    result = cli(*command, "--dataset", dataset, "--store", store_path)
    assert result.exit_code == 2, result.output  # a bad option (README: "2 for a bad option")
    assert result.output.startswith(says), result.output
    with open_store(store_path) as store:
        assert store.read_runs(dataset=dataset).empty
    with get_client(sync_client=True) as client:
        assert [run.name for run in flow_runs_tagged(client, dataset) if "ingest" not in run.tags] == []


def test_05_several_statements_are_refused_and_nothing_is_deleted(two_datasets):
    result = cli("query", 'MATCH (e:Entity) WHERE e.dataset="other" RETURN count(e); MATCH (e) DETACH DELETE e',
                 "--store", two_datasets)
    assert result.exit_code == 1, result.output
    assert "one statement" in result.output
    assert count_nodes(two_datasets) == 120
    result = cli("query", "MATCH (e:Entity) RETURN count(e) AS n;", "--store", two_datasets)  # a final ';' is fine
    assert result.exit_code == 0, result.output
    assert " 120 " in result.output, result.output


def test_05_query_is_read_only_unless_write_is_given(two_datasets):
    write = "MATCH (e:Entity) WHERE e.dataset = 'other' DETACH DELETE e"
    result = cli("query", write, "--store", two_datasets)
    assert result.exit_code == 1, result.output
    assert "--write" in result.output
    assert count_nodes(two_datasets) == 120
    result = cli("query", write, "--write", "--store", two_datasets)
    assert result.exit_code == 0, result.output
    assert count_nodes(two_datasets) == 60


class _Counters:
    def __init__(self, updates: bool):
        self.contains_updates, self.contains_system_updates = updates, False


class _TransformingDriver:
    """A fake driver that, like the real ``execute_query``, hands its result to the
    ``result_transformer_`` inside the (here imaginary) transaction."""

    def __init__(self, updates: bool):
        self.updates, self.calls = updates, []

    def execute_query(self, query_, parameters_=None, routing_="w", database_=None, result_transformer_=None, **kw):
        import neo4j

        self.calls.append((query_, routing_))
        summary = type("Summary", (), {"counters": _Counters(self.updates)})()
        eager = neo4j.EagerResult([neo4j.Record({"n": 1})], summary, ["n"])
        result = type("Result", (), {"to_eager_result": lambda self: eager})()
        return result_transformer_(result) if result_transformer_ else eager


def test_05_the_neo4j_adapter_refuses_writes_inside_the_transaction_and_one_statement_only():
    from graphstore.errors import WriteRefused
    from graphstore.neo4j_store import Neo4jStore

    store = Neo4jStore(_TransformingDriver(updates=False), ensure_schema=False)
    assert store.query("MATCH (e) RETURN 1 AS n")["n"].tolist() == [1]
    assert store._driver.calls == [("MATCH (e) RETURN 1 AS n", "r")]
    store = Neo4jStore(_TransformingDriver(updates=True), ensure_schema=False)
    with pytest.raises(WriteRefused, match="--write"):
        store.query("MATCH (e) SET e.x = 1 RETURN 1 AS n")
    store.query("MATCH (e) SET e.x = 1 RETURN 1 AS n", write=True)  # asked to write: the write route
    assert store._driver.calls[-1] == ("MATCH (e) SET e.x = 1 RETURN 1 AS n", "w")
    for bad, message in (("RETURN 1; MATCH (e) DETACH DELETE e", "2 statements"), ("RETURN $x", r"\$x")):
        with pytest.raises(ValueError, match=message):
            store.query(bad)
    assert len(store._driver.calls) == 2  # the refused ones never reached the driver


@pytest.mark.parametrize("text, statements, names", [
    ("RETURN 1", 1, []), ("RETURN 1;", 1, []), ("RETURN 1; ; // done", 1, []),
    ("RETURN ';' AS a, \"x;y\" AS b", 1, []), ("RETURN 1 /* ; $a */ AS one", 1, []),
    ("MATCH (e) WHERE e.a = $a AND e.b = $`b c` RETURN $a", 1, ["a", "b c"]),
    ("RETURN 'it\\'s $no' AS s", 1, []), ("RETURN 1; RETURN 2", 2, []),
])
def test_05_user_statements_are_counted_outside_strings_and_comments(text, statements, names):
    from graphstore.queries import user_statement

    if statements > 1:
        with pytest.raises(ValueError, match=f"{statements} statements"):
            user_statement(text, {})
        return
    assert user_statement(text, {name: 1 for name in names}) == text
    for name in names:
        with pytest.raises(ValueError, match="without a value"):
            user_statement(text, {other: 1 for other in names if other != name})


# -- 11, 13: opening the store --------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["query", "MATCH (e:Entity) RETURN count(e)"], ["report", "--dataset", "base"],
    ["explain", "n0", "--dataset", "base"], ["prune-runs", "--dataset", "base", "--keep-last", "1"],
    ["build-graph", "--dataset", "base"], ["label", "--dataset", "base"],
])
def test_13_read_commands_refuse_a_store_that_does_not_exist(tmp_path, command):
    typo = tmp_path / "typo" / "deep" / "store"
    result = cli(*command, "--store", typo)
    assert result.exit_code == 1, result.output
    assert "no store at" in result.output
    assert not (tmp_path / "typo").exists()  # nothing was created
    afile = tmp_path / "afile"
    afile.write_text("not a store")
    result = cli(*command, "--store", afile)
    assert result.exit_code == 1, result.output
    assert "is a file" in result.output
    assert "FileExistsError" not in result.output


def test_13_ingest_creates_the_store(tmp_path):
    csv = write_csv(tmp_path / "base.csv", two_blobs())
    store = tmp_path / "new" / "store"
    result = cli("ingest", csv, "--dataset", "base", "--key", "id", "--features", "x*", "--store", store)
    assert result.exit_code == 0, result.output
    assert count_nodes(str(store)) == 60


def test_11_a_locked_store_is_waited_for_with_a_message_then_one_clear_line(two_datasets, tmp_path):
    holder = hold_lock(two_datasets, 120)
    try:
        for command in (["query", "MATCH (e:Entity) RETURN count(e)"], ["label", "--dataset", "base"]):
            done = cli_process(*command, "--store", two_datasets, cwd=tmp_path,
                               env={"GRAPHLABEL_LOCK_TIMEOUT": "3"})
            assert done.returncode == 1, done.stderr
            assert "in use by another process" in done.stderr
            assert "waiting up to 3 s" in done.stderr
            assert "Traceback" not in done.stderr + done.stdout
            assert done.stderr.strip().splitlines()[-1].startswith("error: the store")
    finally:
        holder.kill()
        holder.wait()


def test_11_the_wait_ends_when_the_other_process_lets_go(two_datasets, tmp_path):
    from prefect.settings import PREFECT_API_URL

    # the holder lets go once the command says it waits (a holder that let go after a fixed
    # 2 s could be gone before a command slowed by a loaded machine reached the lock)
    holder = hold_lock(two_datasets, 120)
    environment = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "GRAPHLABEL_LOCK_TIMEOUT": "60"}
    command = subprocess.Popen([str(GRAPHLABEL), "query", "MATCH (e:Entity) RETURN count(e) AS n", "--store",
                                str(two_datasets)], cwd=tmp_path, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    said = []
    try:
        for line in command.stderr:  # ends when the command does: after 60 s of waiting at most
            said.append(line)
            if "waiting up to 60 s" in line:
                break
    finally:
        holder.kill()
        holder.wait()
    out, err = command.communicate(timeout=120)
    assert command.returncode == 0, "".join(said) + err
    assert any("waiting up to 60 s" in line for line in said)
    assert " 120 " in out


# -- 2, 7: which columns are features, and when two keys or labels are the same ------------


def test_02_feature_globs_never_take_the_key_or_label_column(tmp_path, store_path):
    csv = write_csv(tmp_path / "base.csv", two_blobs())
    result = cli("ingest", csv, "--dataset", "star", "--key", "id", "--features", "*", "--label", "label",
                 "--store", store_path)
    assert result.exit_code == 0, result.output
    assert "stored 60 nodes" in result.output
    assert not rejects_line(result.output), result.output
    (tmp_path / "lab.csv").write_text("id,x,x_label\n1,0.5,a\n2,0.7,b\n3,0.1,\n")
    result = cli("ingest", tmp_path / "lab.csv", "--dataset", "gl", "--key", "id", "--features", "x*",
                 "--label", "x_label", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert "stored 3 nodes" in result.output
    result = cli("query", "MATCH (e:Entity) WHERE e.dataset = 'gl' RETURN e.key AS k, octet_length(e.features) AS b,"
                 " e.given_label AS l ORDER BY k", "--store", store_path)
    assert result.output.split().count("8") == 3, result.output  # one feature (8 bytes) per node
    # naming the key or label column as a feature explicitly is a mistake, said as such
    result = cli("ingest", tmp_path / "lab.csv", "--dataset", "gl", "--key", "id", "--features", "x,x_label",
                 "--label", "x_label", "--store", store_path)
    assert result.exit_code == 1, result.output
    assert "label column" in result.output, result.output


KEY_SPELLINGS = pd.DataFrame({"id": ["7", " 7 ", "7.0", "8", "9.50", "007"],
                              "x": [1.0, 1.0, 1.0, 2.0, 3.0, 4.0],
                              "label": ["1", "1.0", " 1 ", "2.0", "2", "1.00"]})


def stored(store: str, dataset: str) -> dict:
    from graphstore import open_store

    with open_store(store) as graph_store:
        graph = graph_store.read_subgraph(dataset)
    return dict(zip(graph.keys, graph.labels))


@pytest.mark.parametrize("kind", ["csv", "parquet-text", "parquet-numbers"])
def test_07_keys_and_labels_follow_one_rule_in_csv_and_parquet(tmp_path, store_path, kind):
    frame = KEY_SPELLINGS.copy()
    if kind == "csv":
        path = write_csv(tmp_path / "keys.csv", frame)
    else:
        if kind == "parquet-numbers":  # numbers as numbers, where they are numbers
            frame = frame.iloc[[0, 2, 3, 4]].assign(id=[7, 7.0, 8, 9.5], label=[1, 1.0, 2.0, 2])
            frame["id"], frame["label"] = frame["id"].astype(float), frame["label"].astype(float)
        path = tmp_path / "keys.parquet"
        frame.to_parquet(path)
    result = cli("ingest", path, "--dataset", "keys", "--key", "id", "--features", "x", "--label", "label",
                 "--classes", "1,2", "--store", store_path)
    assert result.exit_code == 0, result.output
    held = stored(store_path, "keys")
    # 7, ' 7 ' and 7.0 are one key (the first is stored, the same values again are repeats);
    # labels 1, 1.0 and ' 1 ' one class, and --classes 1,2 takes 1.0 and 2.0
    assert held["7"] == "1"
    assert held["8"] == "2"
    assert "label not in classes" not in result.output
    if kind != "parquet-numbers":
        assert held["007"] == "1"
        assert held["9.50"] == "2"  # not integral: written as given
        assert set(held) == {"7", "8", "9.50", "007"}
    else:
        assert set(held) == {"7", "8", "9.5"}


# -- 12: malformed CSV lines ------------------------------------------------------------------


def ingest_file(path, dataset, store, *extra):
    return cli("ingest", path, "--dataset", dataset, "--key", "id", "--features", "x1,x2", "--label", "label",
               *extra, "--store", store)


def rejects_of(tmp_path, dataset) -> pd.DataFrame:
    return pd.read_csv(tmp_path / f"{dataset}.rejects.csv", keep_default_na=False)


@pytest.mark.parametrize("bad_line, reason", [
    (b"b,1,2,3,q", "line 3 has 5 fields, the header 4"),
    (b'b,"1,2,q', "line 3: a quote opened on this line is never closed"),
    (b"b\xe9,1,2,q", "line 3 is not valid utf-8"),
])
def test_12_a_malformed_line_is_rejected_with_its_line_number_and_the_rest_is_stored(tmp_path, store_path,
                                                                                     bad_line, reason):
    path = tmp_path / "in.csv"
    path.write_bytes(b"id,x1,x2,label\na,1,2,p\n" + bad_line + b"\nc,2,3,\n\nd,4,5,q\n")
    result = ingest_file(path, "t12", store_path)
    assert result.exit_code == 0, result.output
    assert "stored 3 nodes" in result.output
    assert "rejected 1 row (" in result.output
    rejects = rejects_of(tmp_path, "t12")
    assert rejects["row"].tolist() == [3]
    assert reason in rejects["reason"][0]
    assert set(stored(store_path, "t12")) == {"a", "c", "d"}


def test_12_an_undecodable_line_names_the_encoding_option_and_passing_it_stores_everything(tmp_path, store_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("id,x1,x2,label\na,1,2,p\nbé,1,2,q\nc,2,3,\n".encode("latin-1"))
    result = ingest_file(path, "latin", store_path)
    assert result.exit_code == 0, result.output
    assert "--encoding" in rejects_of(tmp_path, "latin")["reason"][0], result.output
    result = ingest_file(path, "latin", store_path, "--encoding", "latin-1")
    assert result.exit_code == 0, result.output
    assert "stored 3 nodes" in result.output, result.output
    assert set(stored(store_path, "latin")) == {"a", "bé", "c"}


def test_12_a_file_in_another_encoding_fails_naming_the_file_and_the_option(tmp_path, store_path):
    path = tmp_path / "utf16.csv"
    path.write_bytes("id,x1,x2,label\na,1,2,p\nb,1,2,q\n".encode("utf-16"))
    result = ingest_file(path, "u16", store_path)
    assert result.exit_code == 1, result.output
    assert "utf16.csv" in result.output
    assert "--encoding utf-16" in result.output  # the encoding its byte-order mark names
    assert not (tmp_path / "u16.rejects.csv").exists()
    result = ingest_file(path, "u16", store_path, "--encoding", "utf-16")
    assert result.exit_code == 0, result.output
    assert "stored 2 nodes" in result.output, result.output


def test_12_a_header_only_file_says_no_rows_and_writes_no_rejects_file(tmp_path, store_path):
    path = tmp_path / "header.csv"
    path.write_text("id,x1,x2,label\n")
    result = ingest_file(path, "hdr", store_path)
    assert result.exit_code == 1, result.output
    assert "no rows" in result.output
    assert "store: " not in result.output  # said alone: no meter of 0 of 0 nodes before it
    assert not (tmp_path / "hdr.rejects.csv").exists()
    (tmp_path / "empty.csv").write_bytes(b"")
    result = ingest_file(tmp_path / "empty.csv", "hdr", store_path)
    assert result.exit_code == 1, result.output
    assert "empty" in result.output, result.output


def test_12_reject_rows_are_file_line_numbers(tmp_path, store_path):
    # a blank line, a quoted line break and CRLF endings before the bad rows
    path = tmp_path / "lines.csv"
    path.write_bytes(b'id,x1,x2,label\r\na,1,2,p\r\n\r\n"b\r\nb",1,2,q\r\nc,oops,3,\r\nd,4,5,q,extra\r\ne,5,6,p\r\n')
    result = ingest_file(path, "ln", store_path)
    assert result.exit_code == 0, result.output
    rejects = rejects_of(tmp_path, "ln")
    assert dict(zip(rejects["row"], rejects["kind"])) == {6: "non-numeric feature", 7: "malformed line"}
    assert set(stored(store_path, "ln")) == {"a", "b\r\nb", "e"}


# -- 1: another feature count in a later ingest ------------------------------------------------


def test_01_a_later_ingest_with_other_columns_or_another_feature_count_is_refused(tmp_path, store_path):
    base = write_csv(tmp_path / "base.csv", two_blobs())
    wide = two_blobs(n=10, labelled=0, dim=4, seed=1).assign(id=[f"m{i}" for i in range(10)])
    wide = write_csv(tmp_path / "wide.csv", wide)
    assert cli("ingest", base, "--dataset", "base", "--key", "id", "--features", "x*", "--label", "label",
               "--store", store_path).exit_code == 0
    # named columns: the file is matched to the dataset's by name, whole (labelling/feature_columns.py)
    result = cli("ingest", wide, "--dataset", "base", "--key", "id", "--features", "x*", "--label", "label",
                 "--store", store_path)
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert ("error: the feature columns are not the ones dataset 'base' was ingested with (3 numeric: 'x1', 'x2',"
            " 'x3'): these add 'x4'; ingest the columns it has (renamed as they were), or start it over with"
            " graphlabel drop-dataset --dataset base") in said
    assert len(stored(store_path, "base")) == 60
    # one column of lists has no names: its length is checked row by row
    vectors = pd.DataFrame({"id": [f"v{i}" for i in range(8)], "vec": [[float(i), 1.0, 2.0] for i in range(8)],
                            "label": ["a", "b"] + [None] * 6})
    vectors.to_parquet(tmp_path / "vectors.parquet")
    ingest_vectors = ("ingest", "--dataset", "vecs", "--key", "id", "--features", "vec", "--store", store_path)
    assert cli(*ingest_vectors[:1], tmp_path / "vectors.parquet", *ingest_vectors[1:], "--label",
               "label").exit_code == 0
    longer = pd.DataFrame({"id": [f"w{i}" for i in range(4)], "vec": [[1.0, 2.0, 3.0, 4.0]] * 4})
    longer.to_parquet(tmp_path / "longer.parquet")
    result = cli(*ingest_vectors[:1], tmp_path / "longer.parquet", *ingest_vectors[1:])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "wrong feature length: got 4, expected 3" in said
    # the way out, beside the reason
    assert ("the dataset's 8 nodes have 3 features each: ingest the same columns, or start it over with"
            " graphlabel drop-dataset --dataset vecs") in said
    rejects = rejects_of(tmp_path, "vecs")
    assert len(rejects) == 4
    assert set(rejects["kind"]) == {"wrong feature length"}
    # a list column of the wrong length in a Parquet file, mixed with good rows
    mixed = pd.DataFrame({"id": ["p0", "p1"], "vec": [[1.0, 2.0, 3.0], [1.0, 2.0]]})
    mixed.to_parquet(tmp_path / "mixed.parquet")
    result = cli(*ingest_vectors[:1], tmp_path / "mixed.parquet", *ingest_vectors[1:])
    assert result.exit_code == 0, result.output
    assert "stored 1 node " in result.output, result.output
    # an ingest that rejects no row removes the rejects file an earlier one left: it would read as its own
    assert (tmp_path / "vecs.rejects.csv").is_file()
    result = cli(*ingest_vectors[:1], tmp_path / "vectors.parquet", *ingest_vectors[1:], "--label", "label")
    assert result.exit_code == 0, result.output
    assert "rejected no row: removed vecs.rejects.csv, an earlier ingest's" in result.output
    assert not (tmp_path / "vecs.rejects.csv").exists()
    result = cli("label", "--dataset", "vecs", "--rebuild-graph", "--k", "3", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert "labelled 9 nodes" in result.output, result.output


def test_01_a_store_with_mixed_lengths_names_the_nodes(tmp_path, store_path):
    import pyarrow as pa

    from graphstore import open_store
    from graphstore.schemas import NODE_SCHEMA

    with open_store(store_path, create=True) as store:  # a store written before lengths were checked
        store.write_nodes("base", pa.table({"key": [f"n{i}" for i in range(6)] + ["odd"],
                                            "features": [[float(i), 0.0] for i in range(6)] + [[1.0, 2.0, 3.0]],
                                            "label": ["a", "b"] + [None] * 5}).cast(NODE_SCHEMA))
    result = cli("label", "--dataset", "base", "--rebuild-graph", "--k", "2", "--store", store_path)
    assert result.exit_code == 1, result.output
    assert "6 of length 2, 1 of length 3" in result.output
    assert "'odd'" in result.output


class _AnsweringDriver:
    """A fake driver answering every query with ``rows`` (and recording the calls)."""

    def __init__(self, rows):
        self.rows, self.calls = rows, []

    def execute_query(self, query_, parameters_=None, routing_="w", database_=None, **kw):
        import neo4j

        self.calls.append((query_, dict(parameters_ or {}), routing_))
        keys = list(self.rows[0]) if self.rows else []
        return neo4j.EagerResult([neo4j.Record(row) for row in self.rows], None, keys)


def test_01_the_neo4j_adapter_reports_feature_lengths():
    from graphstore.neo4j_store import Neo4jStore

    driver = _AnsweringDriver([{"length": 3, "nodes": 60}, {"length": 4, "nodes": 10}, {"length": None, "nodes": 2}])
    store = Neo4jStore(driver, ensure_schema=False)
    assert store.feature_lengths("base") == {3: 60, 4: 10}
    query, parameters, routing = driver.calls[-1]
    assert "size(e.`features`) AS length" in query
    assert parameters == {"dataset": "base"}
    assert routing == "r"


# -- 3, 6, 9, 10: graphs and predictions -------------------------------------------------------


def ingest_frame(tmp_path, store, dataset, frame, features="x*"):
    path = write_csv(tmp_path / f"{dataset}.csv", frame)
    result = cli("ingest", path, "--dataset", dataset, "--key", "id", "--features", features, "--label", "label",
                 "--store", store)
    assert result.exit_code == 0, result.output
    return result


def edge_weights(store: str, dataset: str, keys=None) -> np.ndarray:
    from graphstore import open_store

    with open_store(store) as graph_store:
        graph = graph_store.read_subgraph(dataset, with_features=False)
    if keys is None:
        return graph.weight
    inside = np.isin(graph.keys[graph.source], keys) & np.isin(graph.keys[graph.target], keys)
    return graph.weight[inside]


@pytest.mark.parametrize("n", [2, 5])
def test_10_k_is_capped_at_n_minus_1_with_a_warning(tmp_path, store_path, n):
    ingest_frame(tmp_path, store_path, "small", two_blobs(n=n, labelled=n))
    result = cli("build-graph", "--dataset", "small", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert f"k = 10 is more than the {n - 1} other nodes" in result.output
    assert len(edge_weights(store_path, "small")) == n * (n - 1) // 2  # everyone is everyone's neighbour
    result = cli("label", "--dataset", "small", "--rebuild-graph", "--full", "--store", store_path)
    assert result.exit_code == 0, result.output


def test_10_one_node_is_not_a_graph(tmp_path, store_path):
    ingest_frame(tmp_path, store_path, "one", two_blobs(n=1, labelled=1))
    result = cli("build-graph", "--dataset", "one", "--store", store_path)
    assert result.exit_code == 1, result.output
    assert "at least 2 nodes" in result.output, result.output


def test_03_one_far_away_point_does_not_flatten_the_weights(tmp_path, store_path):
    frame = two_blobs(n=40, labelled=10, dim=2, seed=1)
    frame.loc[40] = ["far", 1e6, 1e6, ""]
    ingest_frame(tmp_path, store_path, "o", frame)
    result = cli("build-graph", "--dataset", "o", "--store", store_path)
    assert result.exit_code == 0, result.output
    ordinary = edge_weights(store_path, "o", keys=frame["id"][:40].to_numpy())
    # with the mean k-th distance as sigma every one of these was 0.9999999...
    assert np.median(ordinary) < 0.9
    assert ordinary.min() < 0.5
    assert "warning:" not in result.output  # nothing degenerate to warn about


def test_09_labelling_a_dataset_without_a_graph_builds_it_and_says_so(tmp_path, store_path):
    ingest_frame(tmp_path, store_path, "base", two_blobs())
    result = cli("label", "--dataset", "base", "--k", "5", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert "no similarity relationships" in result.output
    assert "built" in result.output
    assert "labelled 60 nodes" in result.output
    result = cli("query", "MATCH (e:Entity) WHERE e.predicted_label IS NULL RETURN count(e) AS n", "--store",
                 store_path)
    assert " 0 " in result.output, result.output
    # and so does the run's report, where only the log had said it (a walk through the Prefect UI)
    from graphstore import open_store
    from labelling.reporting import report_warnings, run_report_markdown

    with open_store(store_path) as store:
        run = store.read_runs("base").iloc[0].to_dict()
    (built,) = [text for text in report_warnings(run) if "no similarity relationships" in text]
    assert f"- {built}" in run_report_markdown(run).splitlines()


def test_09_a_run_without_a_server_says_each_warning_once(tmp_path, store_path):
    """The real console script with no Prefect server: the flow's warning is printed once,
    as ``warning: ...`` (Python's last-resort log handler printed it a second time, bare)."""
    ingest_frame(tmp_path, store_path, "base", two_blobs())
    done = cli_process("label", "--dataset", "base", "--k", "5", "--store", store_path, cwd=tmp_path,
                       env={"PREFECT_API_URL": ""})
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "no similarity relationships" in line]
    assert len(said) == 1, done.stderr
    assert said[0].startswith("warning: ")


@pytest.mark.parametrize("server", ["the harness's", "none"])
def test_09_a_solvers_warning_is_one_line_without_the_code_that_raised_it(tmp_path, store_path, server):
    """A labelling no better than a guess (mincut on one blob with 4 labels: one class takes
    every unlabelled node) is said as the command's other warnings are, once, its class
    named; Python's format printed "solvers/registry.py:92: DegenerateLabelingWarning: ..."
    and then that line's source, "return function(problem, **params)". The run says it (its
    log, record and report): a CI run with a server lost the solver's warning (the publishing
    thread's imports took it, test_operations) and printed nothing of it."""
    ingest_frame(tmp_path, store_path, "blob", two_blobs(labelled=4, gap=0.0))
    done = cli_process("label", "--dataset", "blob", "--k", "5", "--solver", "mincut", "--store", store_path,
                       cwd=tmp_path, env={"PREFECT_API_URL": ""} if server == "none" else None)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    said = [line for line in lines if line.startswith("warning:") and "no better than guessing" in line]
    assert len(said) == 1, done.stderr
    assert said[0].startswith("warning: mincut: class 'b' takes 100.0% of the unlabelled nodes"), said
    assert "Warning" not in done.stderr, done.stderr  # no category name, no file and line
    assert "return function(" not in done.stderr, done.stderr
    logged = [line for line in lines if "| WARNING |" in line and "no better than guessing" in line]
    assert len(logged) == (1 if server != "none" else 0), done.stderr  # the run's log, which Prefect prints
    from graphstore import open_store

    with open_store(store_path) as store:
        metrics = store.read_runs("blob", limit=1)["metrics"][0]
    kept = metrics["run_warnings"]
    assert [warning for warning in kept if "no better than guessing" in warning] == [said[0].removeprefix("warning: ")]
    assert metrics["no_better_than_guessing"] == "'b'"  # the headline's first words


def test_09_a_sigma_that_zeroes_every_weight_is_said(tmp_path, store_path):
    """Every Gaussian weight 0 (σ far below the distances): the graph had no relationship and
    said nothing, since the zero weights were dropped before the weights were judged."""
    ingest_frame(tmp_path, store_path, "base", two_blobs())
    result = cli("build-graph", "--dataset", "base", "--k", "5", "--sigma", "1e-9", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert "100% of the Gaussian weights (σ = 1e-09) are below 0.001" in " ".join(result.output.split())
    assert "wrote 0 similarity relationships" in result.output


def test_09_nodes_no_label_reaches_are_counted_and_said(tmp_path, store_path):
    from graphstore import open_store

    ingest_frame(tmp_path, store_path, "base", two_blobs())
    assert cli("build-graph", "--dataset", "base", "--k", "5", "--store", store_path).exit_code == 0
    late = two_blobs(n=10, labelled=0, seed=3).assign(id=[f"late{i}" for i in range(10)])
    ingest_frame(tmp_path, store_path, "base", late)
    result = cli("label", "--dataset", "base", "--full", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert "10 of 70 nodes (14.3%) got no prediction" in result.output
    assert "10 have no similarity relationship" in result.output
    assert "--rebuild-graph" in result.output
    with open_store(store_path) as store:
        metrics = store.read_runs("base")["metrics"][0]
    assert metrics["n_unreachable"] == 10
    assert metrics["unreached_share"] == pytest.approx(10 / 70)


def test_06_features_that_say_nothing_give_no_flags_and_low_confidence(tmp_path, store_path):
    from graphstore import open_store

    frame = two_blobs(n=40, labelled=20, dim=2, seed=1)
    frame[["x1", "x2"]] = 1.0  # every row the same vector
    ingest_frame(tmp_path, store_path, "c", frame)
    result = cli("label", "--dataset", "c", "--rebuild-graph", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert "0 flagged as noisy" in result.output
    assert "every node has the same features" in result.output
    given = frame.loc[frame["label"] != "", "label"]
    majority = given.value_counts(normalize=True).max()
    with open_store(store_path) as store:
        written = store.query("MATCH (e:Entity) WHERE e.dataset = 'c' RETURN e.label_confidence AS c,"
                              " e.label_noise AS noise, e.predicted_label AS p")
    assert written["c"].max() <= majority + 1e-9
    assert not written["noise"].fillna(False).any()
    assert written["p"].nunique() == 1  # identical entities, identical answers


def test_06_duplicated_vectors_among_informative_ones(tmp_path, store_path):
    from graphstore import open_store

    frame = two_blobs(n=80, labelled=30, dim=2, seed=2)
    frame.loc[:29, ["x1", "x2"]] = [2.0, 2.0]  # 30 copies of one vector (an imputed default, say)
    ingest_frame(tmp_path, store_path, "d", frame)
    result = cli("label", "--dataset", "d", "--rebuild-graph", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert "30 nodes share their features with more than k = 10 others" in result.output
    with open_store(store_path) as store:
        written = store.query("MATCH (e:Entity) WHERE e.dataset = 'd' RETURN e.key AS key, e.label_confidence AS c,"
                              " e.label_noise AS noise, e.predicted_label AS p").set_index("key")
    copies = written.loc[frame["id"][:30]]
    assert copies["p"].nunique() == 1
    assert copies["c"].nunique() == 1
    assert not copies["noise"].fillna(False).any()
    given = frame["label"][:30][frame["label"][:30] != ""]
    assert copies["c"].iloc[0] == pytest.approx(given.value_counts(normalize=True).max())


# -- 8: runs killed mid-way ------------------------------------------------------------------


def runs_of(store: str, dataset: str) -> pd.DataFrame:
    from graphstore import open_store

    with open_store(store) as graph_store:
        return graph_store.read_runs(dataset, limit=100)


def kill_label_run_mid_way(store: str, cwd, after: str = "record-run") -> None:
    """Start `graphlabel label --full` and kill -9 it as soon as its task run ``after`` has
    finished: ``record-run`` (the LabelRun is written as running; the graph build comes
    next), ``export`` (the solve comes next) or ``solve`` (the write-back comes next)."""
    import signal

    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PREFECT_LOGGING_LEVEL": "INFO"}
    process = subprocess.Popen([str(GRAPHLABEL), "label", "--dataset", "big", "--full", "--store", store], cwd=cwd,
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stderr:  # Prefect logs each task run as it finishes
            if f"Task run '{after}" in line and "Completed" in line:
                break
        else:
            pytest.fail(f"the label run ended before its {after} task finished")
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL


def test_08_a_killed_run_is_marked_failed_by_the_next_report_and_run(tmp_path, store_path):
    frame = two_blobs(n=3000, labelled=600, dim=8)  # a run of a few seconds: time to kill it
    ingest_frame(tmp_path, store_path, "big", frame)
    assert cli("build-graph", "--dataset", "big", "--store", store_path).exit_code == 0
    kill_label_run_mid_way(store_path, tmp_path)
    killed = runs_of(store_path, "big")
    assert killed["status"].tolist() == ["running"]  # what the store holds right after the kill
    result = cli("report", "--dataset", "big", "--store", store_path)
    assert result.exit_code == 0, result.output
    runs = runs_of(store_path, "big")
    assert runs["status"].tolist() == ["failed"]
    assert runs["error"][0].startswith("interrupted")
    assert "is gone" in runs["error"][0]
    # a second kill, then a successful run: the run marks the killed one itself
    kill_label_run_mid_way(store_path, tmp_path)
    result = cli("label", "--dataset", "big", "--full", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert sorted(runs_of(store_path, "big")["status"]) == ["completed", "failed", "failed"]
    clean = str(tmp_path / "clean")  # the re-run ends as one clean run on a fresh store does
    ingest_frame(tmp_path, clean, "big", frame)
    assert cli("build-graph", "--dataset", "big", "--store", clean).exit_code == 0
    assert cli("label", "--dataset", "big", "--full", "--store", clean).exit_code == 0
    query = "MATCH (e:Entity) RETURN e.key AS key, e.predicted_label AS p, e.label_noise AS noise ORDER BY key"
    from graphstore import open_store

    with open_store(store_path) as after_kills, open_store(clean) as fresh:
        pd.testing.assert_frame_equal(after_kills.query(query), fresh.query(query))
    # and retention no longer keeps them as if they were running (the completed run stays:
    # the nodes' predictions come from it)
    result = cli("prune-runs", "--dataset", "big", "--keep-last", "0", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert "deleted 2 LabelRun nodes" in result.output, result.output
    assert runs_of(store_path, "big")["status"].tolist() == ["completed"]


@pytest.mark.parametrize("after", ["record-run", "export", "solve"],
                         ids=["during the graph build", "during the solve", "during the write-back"])
def test_held_a_run_killed_at_any_stage_reruns_to_the_clean_result(tmp_path, store_path, after):
    """What held in the adversarial run: kill -9 during the kNN build, the solve or the
    write-back, then run again: the store ends as one clean run leaves it."""
    # overlapping blobs: one component with both classes, so the solver runs; stages of a second or more
    frame = two_blobs(n=20_000, labelled=2_000, dim=8, seed=5, gap=1.0)
    ingest_frame(tmp_path, store_path, "big", frame)
    kill_label_run_mid_way(store_path, tmp_path, after)
    assert runs_of(store_path, "big")["status"].tolist() == ["running"]
    result = cli("label", "--dataset", "big", "--full", "--store", store_path)
    assert result.exit_code == 0, result.output
    assert sorted(runs_of(store_path, "big")["status"]) == ["completed", "failed"]
    clean = str(tmp_path / "clean")
    ingest_frame(tmp_path, clean, "big", frame)
    assert cli("label", "--dataset", "big", "--full", "--store", clean).exit_code == 0
    query = ("MATCH (e:Entity) RETURN e.key AS key, e.predicted_label AS p, e.label_confidence AS c,"
             " e.label_noise AS noise ORDER BY key")
    from graphstore import open_store

    with open_store(store_path) as after_kill, open_store(clean) as fresh:
        pd.testing.assert_frame_equal(after_kill.query(query), fresh.query(query))


def test_08_the_liveness_rule(monkeypatch):
    import socket

    from graphstore.processes import this_process
    from labelling.liveness import why_interrupted

    now = pd.Timestamp("2026-06-01 12:00")
    silence = pd.Timedelta(hours=6)
    me = this_process()
    host = socket.gethostname()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    dead_process = {"host": host, "pid": dead.pid, "started": me["started"]}

    def run(process, seen_hours_ago):
        return {"process": process, "heartbeat_at": now - pd.Timedelta(hours=seen_hours_ago), "started_at": now}

    assert why_interrupted(run(me, 0.1), now, silence) is None  # alive, here
    assert "is gone" in why_interrupted(run(dead_process, 0.1), now, silence)
    reused = {**me, "started": me["started"] - 3600}  # this pid, but a process started an hour later
    assert "is gone" in why_interrupted(run(reused, 0.1), now, silence)
    elsewhere = {"host": "another-host", "pid": 1, "started": 0.0}
    assert why_interrupted(run(elsewhere, 5.9), now, silence) is None  # can't tell yet
    assert "no sign of life on another-host since" in why_interrupted(run(elsewhere, 6.1), now, silence)
    old = {"process": {}, "heartbeat_at": pd.NaT, "started_at": now - pd.Timedelta(hours=7)}  # before heartbeats
    assert why_interrupted(old, now, silence).startswith("interrupted: no sign of life since")
    # on a store with leases a label run holds its dataset's while it runs (rule 2)
    from labelling.liveness import label_run_holder

    leased = {**run(elsewhere, 0.1), "run_id": "r1"}
    assert why_interrupted(leased, now, silence, lease_holder=label_run_holder("r1")) is None
    for holder in (None, label_run_holder("r2"), "build-graph"):
        assert why_interrupted(leased, now, silence, lease_holder=holder).startswith(
            "interrupted: it no longer holds the lease of its dataset, which a running label run renews every"
            " 15 s: its process (pid 1 on another-host) is gone, or was silent for more than 60 s")
    monkeypatch.setenv("GRAPHLABEL_RUN_STALE_HOURS", "0")
    from labelling.liveness import stale_after

    with pytest.raises(ValueError, match="GRAPHLABEL_RUN_STALE_HOURS"):
        stale_after()


def test_08_interrupting_is_conditional_on_the_last_sign_of_life(embedded_store):
    from graphstore import LabelRunRecord

    t0 = pd.Timestamp("2026-06-01 12:00")
    run = LabelRunRecord("r1", "toy", "harmonic", {}, {}, {}, t0, None, 0, 0, 0, status="running",
                         process={"host": "h", "pid": 1, "started": 0.0}, heartbeat_at=t0 + pd.Timedelta(minutes=5))
    embedded_store.write_run(run)
    assert not embedded_store.interrupt_run("r1", t0, "interrupted: stale view")  # it wrote again since
    assert embedded_store.read_runs(status="running")["run_id"].tolist() == ["r1"]
    assert embedded_store.interrupt_run("r1", run.heartbeat_at, "interrupted: gone")
    row = embedded_store.read_runs(run_id="r1").iloc[0]
    assert (row["status"], row["error"], row["finished_at"]) == ("failed", "interrupted: gone", run.heartbeat_at)
    assert row["process"] == {"host": "h", "pid": 1, "started": 0.0}
    assert embedded_store.read_runs(status="running").empty
    assert not embedded_store.interrupt_run("r1", run.heartbeat_at, "again")  # failed runs stay as they are


def test_08_the_neo4j_adapter_interrupts_conditionally():
    from graphstore.neo4j_store import Neo4jStore

    driver = _AnsweringDriver([{"marked": 1}])
    store = Neo4jStore(driver, ensure_schema=False)
    assert store.interrupt_run("r1", pd.Timestamp("2026-06-01 12:05"), "interrupted: gone")
    query, parameters, routing = driver.calls[-1]
    assert "r.status = 'running' AND coalesce(r.heartbeat_at, r.started_at) = $seen" in query
    assert parameters["run_id"] == "r1"
    assert parameters["error"] == "interrupted: gone"
    assert routing == "w"
    store.read_runs("toy", status="running")
    assert driver.calls[-1][1]["status"] == "running"


# -- 17: every expected condition ends with one clear line ------------------------------------


def test_17_expected_conditions_end_with_one_clear_line_and_no_traceback(tmp_path):
    """The real console script, as a newcomer runs it: each case exits non-zero, prints
    no traceback, and its last line is the error."""
    store = tmp_path / "st"
    (tmp_path / "one.csv").write_text("id,x1,x2,label\na,1,2,p\nb,2,3,p\nc,3,4,\n")
    (tmp_path / "none.csv").write_text("id,x1,x2,label\na,1,2,\nb,2,3,\nc,3,4,\n")
    (tmp_path / "single.csv").write_text("id,x1,x2,label\na,1,2,p\n")
    (tmp_path / "header.csv").write_text("id,x1,x2,label\n")
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "u16.csv").write_bytes("id,x1,x2,label\na,1,2,p\n".encode("utf-16"))
    (tmp_path / "afile").write_text("not a store")
    for name in ("one", "none", "single"):
        assert cli("ingest", tmp_path / f"{name}.csv", "--dataset", name, "--key", "id", "--features", "x1,x2",
                   "--label", "label", "--store", store).exit_code == 0
    ingest = ["ingest", "--key", "id", "--features", "x1,x2", "--store", store]
    cases = {
        "empty file": [*ingest, tmp_path / "empty.csv", "--dataset", "e"],
        "header only": [*ingest, tmp_path / "header.csv", "--dataset", "e"],
        "another encoding": [*ingest, tmp_path / "u16.csv", "--dataset", "e"],
        "hostile name": [*ingest, tmp_path / "one.csv", "--dataset", "x' OR 1=1 //"],
        "one class": ["label", "--dataset", "one", "--store", store],
        "no labels": ["label", "--dataset", "none", "--store", store],
        "too few nodes for a graph": ["build-graph", "--dataset", "single", "--store", store],
        "no such store": ["query", "RETURN 1", "--store", tmp_path / "typo"],
        "a file as store": ["report", "--dataset", "one", "--store", tmp_path / "afile"],
        "unbound parameter": ["query", "MATCH (e:Entity) WHERE e.dataset = $ds RETURN count(e)", "--store", store],
        "two statements": ["query", "RETURN 1; MATCH (e) DETACH DELETE e", "--store", store],
        "a write": ["query", "MATCH (e:Entity) DETACH DELETE e", "--store", store],
        "credentials in the URI": ["query", "RETURN 1", "--store", "neo4j://127.0.0.1:1?password=hunter2"],
    }
    for case, command in cases.items():
        done = cli_process(*command, cwd=tmp_path)
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        assert done.returncode != 0, (case, done.stdout, done.stderr)
        assert "Traceback" not in done.stdout + done.stderr, (case, done.stderr)
        # the run's "Finished in state Failed(...)" and the last line say it: not a third time
        assert "Encountered exception" not in done.stdout + done.stderr, (case, done.stderr)
        assert done.stderr.strip().splitlines()[-1].startswith("error: "), (case, done.stderr)
        assert lines[-1].startswith("error: "), (case, lines[-3:])
        assert "hunter2" not in done.stdout + done.stderr


# -- what held in the adversarial run, kept under test ---------------------------------------


def test_held_row_accounting_is_exact_with_one_percent_bad_rows(tmp_path, store_path):
    n = 20_000
    rng = np.random.default_rng(7)
    frame = two_blobs(n=n, labelled=2_000, dim=4, seed=7)
    bad = rng.choice(n, n // 100, replace=False)
    frame["x1"] = frame["x1"].astype(object)
    frame.loc[bad[: len(bad) // 2], "x1"] = "oops"  # non-numeric
    frame.loc[bad[len(bad) // 2:], "id"] = ""  # missing key
    csv = write_csv(tmp_path / "big.csv", frame)
    result = cli("ingest", csv, "--dataset", "big", "--key", "id", "--features", "x*", "--label", "label",
                 "--store", store_path)
    assert result.exit_code == 0, result.output
    rejects = rejects_of(tmp_path, "big")
    assert f"stored {n - len(bad):,} nodes" in result.output
    assert len(rejects) == len(bad)
    assert sorted(rejects["row"]) == sorted(bad + 2)  # file lines: the header is line 1


def test_held_odd_but_valid_csv_files_are_read_whole(tmp_path, store_path):
    long_key = "k" * 10_000
    text = ("id,x1,x2,label\r\n" "a,1,2,p\r\n" '"b, with\r\na line break",2,3,q\r\n' "ünïcødé-ключ-键,3,4,\r\n"
            f"{long_key},4,5,p\r\n")
    path = tmp_path / "odd.csv"
    path.write_bytes(codecs_bom() + text.encode("utf-8"))
    result = ingest_file(path, "odd", store_path)
    assert result.exit_code == 0, result.output
    assert "stored 4 nodes" in result.output, result.output
    assert not rejects_line(result.output), result.output
    assert set(stored(store_path, "odd")) == {"a", "b, with\r\na line break", "ünïcødé-ключ-键", long_key}


def codecs_bom() -> bytes:
    import codecs

    return codecs.BOM_UTF8


def test_held_two_label_runs_on_one_store_both_complete(two_datasets, tmp_path):
    from prefect.settings import PREFECT_API_URL

    assert cli("build-graph", "--dataset", "base", "--k", "5", "--store", two_datasets).exit_code == 0
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()}
    runs = [subprocess.Popen([str(GRAPHLABEL), "label", "--dataset", "base", "--full", "--store", two_datasets],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
    assert runs_of(two_datasets, "base")["status"].tolist() == ["completed", "completed"]
