"""The operating commands (report, prune-runs, explain, serve --check) on a real Kùzu
store; none of them starts a flow, so no Prefect server is needed."""

import io
import json
import os

import pandas as pd
import pyarrow as pa
import pytest
from store_lock import hold_lock
from typer.testing import CliRunner

from graphlabel.cli import app
from graphstore import LabelRunRecord, open_store
from graphstore.schemas import EDGE_SCHEMA, NODE_SCHEMA, PREDICTION_SCHEMA

runner = CliRunner()
T0 = pd.Timestamp("2026-03-01 02:00", tz="UTC")


def invoke(*args):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.fixture
def store_with_runs(store_path):
    with open_store(store_path, create=True) as store:
        store.write_nodes("toy", pa.table({"key": ["a", "b", "c"], "features": [[0.0], [1.0], [2.0]],
                                           "label": [None, "x", "y"]}).cast(NODE_SCHEMA))
        store.replace_edges("toy", pa.table({"source": ["a", "a"], "target": ["b", "c"],
                                             "weight": [0.75, 0.25]}).cast(EDGE_SCHEMA))
        store.write_predictions("toy", pa.table({
            "key": ["a", "b", "c"], "predicted_label": ["x", "x", "y"], "label_confidence": [0.6, 1.0, 1.0],
            "label_noise": [None, False, False], "label_run_id": ["run-3"] * 3, "label_solver": ["harmonic"] * 3,
            "labelled_at": [T0.tz_localize(None).to_pydatetime()] * 3}).cast(PREDICTION_SCHEMA))
        for i, status in enumerate(["completed", "failed", "completed", "completed"]):
            store.write_run(LabelRunRecord(
                f"run-{i}", "toy", "harmonic", {"k": 5}, {"class_counts": {"x": 2, "y": 1}, "mean_confidence": 0.8,
                                                          "holdout_accuracy": 0.75},
                {"solve": 0.125}, T0 + pd.Timedelta(hours=i), T0 + pd.Timedelta(hours=i, seconds=30), 3, 2, 0,
                status=status, versions={"kuzu": "0.11.3"}, error="boom" if status == "failed" else None))
    return store_path


def test_report_lists_a_datasets_runs_newest_first(store_with_runs):
    result = runner.invoke(app, ["report", "--dataset", "toy", "--store", store_with_runs], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    # in 80 columns, but for the suggested command's store path (a temporary folder's here)
    assert max(len(line.replace(store_with_runs, "STORE")) for line in result.output.splitlines()) <= 80
    lines = [line for line in result.output.splitlines() if line.startswith("run-") and "failed:" not in line]
    assert [line.split()[0] for line in lines] == ["run-3", "run-2", "run-1", "run-0"]
    assert "0.750" in lines[0]
    assert "3" in lines[0].split()
    # a failed run: its numbers are dashes, its error is said under the table
    assert "failed" in lines[2]
    assert "0.750" not in lines[2]
    assert lines[2].count("—") == 3
    assert "run-1 failed: boom" in result.output
    # the command it suggests names the store it was given (a Neo4j walk's suggestions lacked it)
    assert f"graphlabel report --run run-3 --store {store_with_runs}" in " ".join(result.output.split())


def test_report_of_one_run_in_the_terminal_and_as_markdown(store_with_runs):
    result = runner.invoke(app, ["report", "--run", "run-3", "--store", store_with_runs], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    for text in ("run run-3: toy · harmonic, completed", "accuracy on held-out labels", "0.750",
                 "unlabelled nodes reached", "1 of 1 (100.0%)", "0.125", "0.11.3", "30.0 s"):
        assert text in result.output, text
    # the headline comes before everything else
    assert result.output.index("headline") < result.output.index("class distribution")
    result = invoke("report", "--run", "run-1", "--markdown", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    assert "| status | failed |" in result.output
    assert "> boom" in result.output.splitlines()  # the error in a paragraph: it wraps in the Prefect UI
    assert "| error | in full above |" in result.output


def test_report_takes_a_unique_start_or_end_of_a_run_id(store_with_runs):
    with open_store(store_with_runs) as store:
        store.write_run(LabelRunRecord("3f2a1b9c-0000-4000-8000-00004d4c4a17", "toy", "harmonic", {}, {}, {},
                                       T0 + pd.Timedelta(hours=9), T0 + pd.Timedelta(hours=9, seconds=3), 3, 2, 0))
    result = invoke("report", "--run", "3f2a", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    assert "run …4d4c4a17: toy · harmonic, completed" in result.output  # the end, as the runs table shows
    result = invoke("report", "--run", "4d4c4a17", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    assert "3f2a1b9c-0000-4000-8000-00004d4c4a17" in result.output
    result = invoke("report", "--run", "run-", "--store", store_with_runs)
    assert result.exit_code == 1
    assert "is the start or end of 4 runs" in result.output
    assert ", ...): give more of it" in result.output  # three named, the fourth left out


def test_report_errors_are_one_clear_line(store_with_runs):
    result = invoke("report", "--store", store_with_runs)
    assert result.exit_code == 2  # a bad option
    assert "give --run ID" in result.output
    result = invoke("report", "--run", "nope", "--store", store_with_runs)
    assert result.exit_code == 1
    assert "no run 'nope' in the store" in result.output
    result = invoke("report", "--run", "run-3", "--dataset", "other", "--store", store_with_runs)
    assert result.exit_code == 1
    assert "belongs to dataset 'toy'" in result.output
    result = invoke("report", "--dataset", "other", "--store", store_with_runs)
    assert result.exit_code == 1
    assert "no dataset 'other' in the store (no node belongs to it); its datasets: 'toy'" in result.output


def test_prune_runs_command(store_with_runs):
    result = invoke("prune-runs", "--dataset", "toy", "--keep-last", "1", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    # run-3 is kept (newest completed, and the nodes' current run); run-2, run-1, run-0 go
    assert "deleted 3 LabelRun nodes of 'toy'" in result.output
    with open_store(store_with_runs, create=True) as store:
        assert store.read_runs("toy")["run_id"].tolist() == ["run-3"]
    result = invoke("prune-runs", "--dataset", "toy", "--keep-last", "-1", "--store", store_with_runs)
    assert result.exit_code != 0


def test_explain_command_shows_the_neighbours_and_class_shares(store_with_runs):
    result = invoke("explain", "a", "--dataset", "toy", "--limit", "1", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "node 'a' of dataset 'toy'" in out
    assert "run-3" in out
    assert "0.600" in out
    assert "x ← predicted" in out
    assert "75.0%" in out
    assert "25.0%" in out# shares of the weighted degree
    assert "strongest 1 of 2 neighbours" in out
    assert " b " in out
    assert " c " not in out
    result = invoke("explain", "zz", "--dataset", "toy", "--store", store_with_runs)
    assert result.exit_code == 1
    assert "no node with key 'zz' in dataset 'toy'" in result.output
    result = invoke("explain", "a", "--dataset", "tyo", "--store", store_with_runs)  # a typo in the dataset
    assert result.exit_code == 1
    assert "no dataset 'tyo' in the store (no node belongs to it); its datasets: 'toy'" in result.output


def test_serve_check_validates_and_lists_without_serving(tmp_path, store_with_runs):
    good = tmp_path / "good.toml"
    good.write_text(f'store = "{store_with_runs}"\n[[jobs]]\ndataset = "toy"\ncron = "0 3 * * *"\nk = 5\n')
    result = invoke("serve", "--config", str(good), "--check")
    assert result.exit_code == 0, result.output
    assert "label-toy-harmonic" in result.output
    assert "0 3 * * *" in result.output
    # when the scheduler starts it: 03:00 UTC of today or tomorrow
    now = pd.Timestamp.now(tz="UTC")
    due = now.normalize() + pd.Timedelta(hours=3)
    due = due if due > now else due + pd.Timedelta(days=1)
    assert f" next run │ {due:%a %Y-%m-%d} 03:00 UTC " in " ".join(result.output.split())
    bad = tmp_path / "bad.toml"
    bad.write_text('[[jobs]]\ndataset = "toy"\ncron = "0 3 * * *"\nk = "five"\n')
    result = invoke("serve", "--config", str(bad))
    assert result.exit_code == 1
    assert "k must be a positive integer, got 'five'" in result.output
    result = invoke("serve", "--config", str(tmp_path / "missing.toml"))
    assert result.exit_code == 1
    assert "missing.toml" in result.output
    assert "warning" not in invoke("serve", "--config", str(good), "--check").output
    shared = tmp_path / "shared.toml"
    shared.write_text(f'store = "{store_with_runs}"\n[[jobs]]\ndataset = "toy"\ncron = "0 3 * * *"\n\n'
                      '[[jobs]]\ndataset = "toy"\ninterval = 600\nsolver = "mincut"\n')
    result = invoke("serve", "--config", str(shared), "--check")
    assert result.exit_code == 0, result.output
    assert "warning: jobs 'label-toy-harmonic' and 'label-toy-mincut' share the embedded store" in (
        " ".join(result.output.split()))
    assert result.output.count("next run") == 1  # an interval job's runs count from when serve starts


def test_serve_check_fails_on_each_job_that_could_not_run_now(tmp_path, store_with_runs):
    with open_store(store_with_runs) as store:
        store.write_nodes("one", pa.table({"key": ["a", "b"], "features": [[0.0], [1.0]],
                                           "label": ["x", "x"]}).cast(NODE_SCHEMA))
    jobs = {"ready": 'dataset = "toy"', "typo": 'dataset = "tyo"', "one-class": 'dataset = "one"',
            "no-edges": 'dataset = "toy"\ngraph = "edges:BOUGHT"',
            "no-store": f'dataset = "toy"\nstore = "{tmp_path / "elsewhere"}"',
            "empty-folder": f'dataset = "toy"\nstore = "{tmp_path / "empty"}"'}
    (tmp_path / "empty").mkdir()  # a folder, but no store in it: the store's own "no store at"
    config = tmp_path / "jobs.toml"
    config.write_text(f'store = "{store_with_runs}"\n' + "".join(
        f'\n[[jobs]]\nname = "{name}"\ncron = "0 3 * * *"\n{fields}\n' for name, fields in jobs.items()))
    result = invoke("serve", "--config", str(config), "--check")
    assert result.exit_code == 1
    said = " ".join(result.output.split())
    # each as the run would have failed with it, at its hour
    for line in ("error: job 'typo' cannot run now: no dataset 'tyo' in the store (no node belongs to it);"
                 " its datasets: 'one', 'toy'",
                 "error: job 'one-class' cannot run now: dataset 'one' has given labels of one class only ('x')",
                 "error: job 'no-edges' cannot run now: dataset 'toy' has no BOUGHT edges between its nodes",
                 f"error: job 'no-store' cannot run now: no store at {tmp_path / 'elsewhere'}: ingest the dataset"
                 f" there first (graphlabel ingest FILE --dataset toy --store {tmp_path / 'elsewhere'}), or check the"
                 " schedule's store",
                 f"error: job 'empty-folder' cannot run now: no store at {tmp_path / 'empty'}: ingest the dataset"
                 f" there first (graphlabel ingest FILE --dataset toy --store {tmp_path / 'empty'}), or check the"
                 " schedule's store"):
        assert line in said, line
    assert "'ready' cannot" not in said
    assert not (tmp_path / "elsewhere").exists()  # looked for, not made


def test_serve_check_says_which_jobs_it_could_not_look_at_in_a_store_another_process_holds(
        tmp_path, store_with_runs):
    config = tmp_path / "jobs.toml"
    config.write_text(f'store = "{store_with_runs}"\n[[jobs]]\ndataset = "tyo"\ncron = "0 3 * * *"\n')
    holder = hold_lock(store_with_runs, 120)  # a served job's run, say
    try:
        result = invoke("serve", "--config", str(config), "--check")
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "warning: job 'label-tyo-harmonic' was not checked: the store" in said
    assert "cannot run now" not in said
    result = invoke("serve", "--config", str(config), "--check")
    assert result.exit_code == 1
    assert "cannot run now: no dataset 'tyo'" in result.output


def test_serve_check_reports_every_error_and_its_table_fits_80_columns(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[jobs]]\ndataset = "toy"\ncron = "0 3 * * *"\nk = "five"\nsolver = "magic"\n\n'
                   '[[jobs]]\ndataset = "other"\ninterval = 0\n')
    result = runner.invoke(app, ["serve", "--config", str(bad), "--check"], env={"COLUMNS": "80"})
    assert result.exit_code == 1
    assert "3 problems in" in result.output
    for text in ("got 'five'", "got 'magic'", "jobs[1] (dataset 'other'): interval must be"):
        assert text in " ".join(result.output.split()), text
    good = tmp_path / "good.toml"
    store = "/a/store/folder/whose/path/is/longer/than/any/terminal/is/wide/graphlabel-store-of-products"
    good.write_text(f'[[jobs]]\nname = "products-nightly"\ndataset = "products"\ncron = "0 3 * * *"\n'
                    f'solver = "mincut"\nsolver_params = {{ alpha = 0.1 }}\nk = 15\nholdout = 0.1\n'
                    f'keep_runs = 30\nscale = "robust"\nstore = "{store}"\n')
    result = runner.invoke(app, ["serve", "--config", str(good), "--check"], env={"COLUMNS": "80"})
    assert result.exit_code == 1  # the table is shown, and then that the store is not there
    assert f"error: job 'products-nightly' cannot run now: no store at {store}" in result.output
    lines = [line for line in result.output.splitlines() if not line.startswith("error:")]  # one line, for grep
    assert max(len(line) for line in lines) <= 80
    text = " ".join(result.output.split())
    for field, value in (("dataset", "products"), ("schedule", "cron 0 3 * * * (UTC)"), ("solver", "mincut"),
                         ("solver params", '{"alpha": 0.1}'), ("graph", "knn"), ("k", "15"), ("runs", "full"),
                         ("holdout", "10% of each class's given labels, rounded down"), ("keep runs", "30"),
                         ("scale", "robust"), ("search", "auto")):  # scale and search were not shown
        assert f" {field} │ {value} " in text, field
    # the store path is wrapped, never cut with an ellipsis
    assert "…" not in result.output
    assert store.replace("/", "") in "".join(result.output.split()).replace("/", "").replace("│", "")


def test_query_formats_table_csv_and_json_show_every_value_and_nulls(store_with_runs):
    cypher = ("MATCH (e:Entity) WHERE e.dataset = 'toy' RETURN e.key AS key, e.given_label AS given,"
              " e.label_confidence AS confidence, e.label_noise AS noise ORDER BY e.key")
    long_key = "a-key-much-longer-than-any-column-of-an-eighty-column-table-could-show-at-once"
    with open_store(store_with_runs) as store:
        store.write_nodes("toy", pa.table({"key": [long_key], "features": [[3.0]], "label": ["y"]}).cast(NODE_SCHEMA))
    result = runner.invoke(app, ["query", cypher, "--store", store_with_runs], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert "None" not in result.output
    assert "nan" not in result.output
    assert long_key in "".join(line.split("│")[0].strip() for line in result.output.splitlines())
    assert "4 rows" in result.output
    assert " — " in result.output# a's given label is null
    result = invoke("query", cypher, "--format", "csv", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.output), keep_default_na=False)
    assert frame.columns.tolist() == ["key", "given", "confidence", "noise"]
    assert frame.loc[0].tolist() == ["a", "", "0.6", ""]  # nulls are empty cells
    result = invoke("query", cypher, "--format", "json", "--store", store_with_runs)
    rows = json.loads(result.output)
    assert rows[0] == {"key": "a", "given": None, "confidence": 0.6, "noise": None}
    assert rows[1] == {"key": long_key, "given": "y", "confidence": None, "noise": None}
    result = invoke("query", cypher, "--format", "xml", "--store", store_with_runs)
    assert result.exit_code == 2  # a bad option, as export's --format
    assert "--format must be table, csv or json" in result.output


def test_query_writes_lists_and_nodes_as_json_in_csv_and_json(store_with_runs):
    """On the embedded store a list cell printed as numpy's "['a' 'b']" in CSV and a table,
    and --format json raised "can only convert an array of size 1" (a traceback)."""
    cypher = "MATCH (e:Entity) WHERE e.dataset = 'toy' AND e.key = 'a' RETURN e.features AS f, e AS node"
    result = invoke("query", cypher, "--format", "json", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.output)
    assert isinstance(row["f"], list)
    assert row["node"]["features"] == row["f"]
    assert row["node"]["key"] == "a"
    result = invoke("query", cypher, "--format", "csv", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(io.StringIO(result.output), keep_default_na=False)
    assert json.loads(frame.loc[0, "f"]) == row["f"]  # JSON text other programs parse
    assert json.loads(frame.loc[0, "node"])["key"] == "a"
    result = runner.invoke(app, ["query", cypher, "--store", store_with_runs], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert json.dumps(row["f"]) in result.output


def test_a_decision_without_reviewer_or_user_variable_names_the_login(store_with_runs):
    """Where no $USER is set (cron, a container, a Prefect worker) every decision was
    recorded as made by "unknown"."""
    import pwd

    login = pwd.getpwuid(os.getuid()).pw_name
    unset = {name: None for name in ("LOGNAME", "USER", "LNAME", "USERNAME")}
    result = runner.invoke(app, ["accept", "b", "--dataset", "toy", "--store", store_with_runs],
                           env={"COLUMNS": "200", **unset})
    assert result.exit_code == 0, result.output
    assert result.output.strip() == (f"accepted the given label 'x' of 'b' (by {login}); the latest run had not"
                                     " flagged it")
    with open_store(store_with_runs) as store:
        reviewers = store.query("MATCH (d:LabelDecision) WHERE d.dataset = 'toy' RETURN d.reviewer AS r")["r"]
    assert reviewers.tolist() == [login]


def test_an_accept_twice_records_one_decision_and_a_correction_of_no_label_says_so(store_with_runs):
    """A second accept said "accepted" again and stored a second, identical decision; a
    correction of a node without a given label said "None → 'x'" (a newcomer's walk)."""
    def decide(*args: str) -> str:
        result = runner.invoke(app, [*args, "--dataset", "toy", "--reviewer", "ann", "--store", store_with_runs],
                               env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        return result.output.strip()

    def explained(key: str) -> str:
        result = invoke("explain", key, "--dataset", "toy", "--store", store_with_runs)
        assert result.exit_code == 0, result.output
        return " ".join(result.output.split())

    assert " reviewed │ no " in explained("c")
    assert decide("accept", "c") == "accepted the given label 'y' of 'c' (by ann); the latest run had not flagged it"
    assert decide("accept", "c") == "the given label 'y' of 'c' is already accepted: nothing recorded"
    assert " given label │ — " in explained("a")
    assert "reviewed" not in explained("a")  # a given label's rows
    assert decide("correct", "a", "--label", "x") == ("corrected 'a' (by ann): it had no given label, now 'x';"
                                                      " the next label run relabels around it")
    assert decide("correct", "a", "--label", "y") == ("corrected 'a' (by ann): 'x' → 'y'; the next label run"
                                                      " relabels around it")

    # explain says whether a reviewer vouched for a given label, and how strongly the run doubts it
    assert " noise score │ — reviewed │ yes: a reviewer vouched for it " in explained("c")
    assert " reviewed │ no " in explained("b")
    with open_store(store_with_runs) as store:
        decisions = store.query("MATCH (d:LabelDecision) WHERE d.dataset = 'toy' RETURN d.key AS key,"
                                " d.decision AS decision ORDER BY key")
    assert decisions.values.tolist() == [["a", "correct"], ["a", "correct"], ["c", "accept"]]


@pytest.mark.parametrize("args, says", [
    (["query", "RETURN 1", "--param", "x"], "--param takes NAME=VALUE, got 'x'"),
    (["query", "RETURN 1", "--format", "xml"], "--format must be table, csv or json, got 'xml'"),
    (["export", "--dataset", "toy", "--format", "xml"], "--format must be one of parquet, csv, got 'xml'"),
    (["report"], "give --run ID for one run's summary, or --dataset NAME to list its runs"),
    (["label", "--dataset", "toy", "--params", "{"], "--params is not valid JSON"),
    (["label", "--dataset", "toy", "--solver", "nope"], "unknown solver 'nope'"),
    (["label", "--dataset", "toy", "--holdout", "1.5"], "--holdout must lie in [0, 1), got 1.5"),
    (["label", "--dataset", "toy", "--k", "0"], "k must be a positive integer, got 0"),
    (["build-graph", "--dataset", "toy", "--scale", "minmax"], "scale must be one of"),
    (["build-graph", "--dataset", "toy", "--graph", "nope"], "graph must be one of"),
    (["ingest", "any.csv", "--dataset", "toy", "--key", "id"], "ingest needs --features"),
    (["predict", "any.csv", "--dataset", "toy", "--key", "id", "--features", "f*", "--output", "x.json"],
     "--output must end in"),
    # a file where a folder of the output should be: said before the store opens, not as Python's errno
    (["export", "--dataset", "toy", "--output", f"{__file__}/x.csv"],
     f"--output '{__file__}/x.csv': '{__file__}' is a file, not a folder"),
    (["predict", "any.csv", "--dataset", "toy", "--key", "id", "--output", f"{__file__}/x.csv"],
     f"--output '{__file__}/x.csv': '{__file__}' is a file, not a folder"),
])
def test_a_bad_option_is_one_line_and_exit_2_before_the_store_opens(tmp_path, args, says):
    """README: "exit code 1 (2 for a bad option)"; query's --format said 1 where export's said 2."""
    store = tmp_path / "never.kuzu"
    result = invoke(*args, "--store", str(store))
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {says}"), result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not store.exists()


@pytest.mark.parametrize("command", ["demo", "ingest", "build-graph", "label", "query", "report", "prune-runs",
                                     "explain", "serve", "export", "review", "accept", "correct",
                                     "drop-dataset"])
def test_help_reads_plainly_in_80_columns(command):
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80


def test_query_runs_an_example_by_name_or_file_from_any_folder(store_with_runs, tmp_path, monkeypatch):
    """The README's examples ran only from the repository root (``"$(cat cypher/examples/...)"``)."""
    monkeypatch.chdir(tmp_path)  # not the repository
    by_name = invoke("query", "low_confidence", "-p", "dataset=toy", "-p", "max_confidence=0.7", "-p", "max_rows=5",
                     "--format", "json", "--store", store_with_runs)
    assert by_name.exit_code == 0, by_name.output
    assert [row["key"] for row in json.loads(by_name.output)] == ["a"]  # confidence 0.6, the others 1.0
    by_path = invoke("query", "cypher/examples/low_confidence.cypher", "-p", "dataset=toy", "-p", "max_confidence=0.7",
                     "-p", "max_rows=5", "--format", "json", "--store", store_with_runs)
    assert by_path.output == by_name.output
    own = tmp_path / "mine.cypher"
    own.write_text("// a user's file\nMATCH (e:Entity) WHERE e.dataset = $dataset RETURN count(e) AS n\n")
    result = invoke("query", str(own), "-p", "dataset=toy", "--format", "json", "--store", store_with_runs)
    assert json.loads(result.output) == [{"n": 3}], result.output
    neo4j_only = invoke("query", "changed_between_runs", "--store", store_with_runs)
    assert neo4j_only.exit_code == 1
    assert "the example 'changed_between_runs' is for neo4j only, not this store (ladybug)" in neo4j_only.output
    checkpoint = invoke("query", "CHECKPOINT", "--write", "--store", store_with_runs)
    assert checkpoint.exit_code == 0, checkpoint.output  # a one-word statement is still one
    unknown = invoke("query", "low_confidense", "--store", store_with_runs)
    assert unknown.exit_code == 1
    assert "'low_confidense' is not a Cypher statement, a file or an example; the examples:" in unknown.output
    assert "low_confidence" in unknown.output
    assert "changed_between_runs" not in unknown.output


def test_query_table_shows_floats_to_six_digits_and_csv_in_full(store_with_runs):
    cypher = "RETURN 0.45077830653490863 AS confidence"
    table = invoke("query", cypher, "--store", store_with_runs)
    assert "0.450778" in table.output, table.output
    assert "0.4507783" not in table.output
    csv = invoke("query", cypher, "--format", "csv", "--store", store_with_runs)
    assert "0.45077830653490863" in csv.output
