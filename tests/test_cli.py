"""The command line, run in-process with typer's runner against a real store and Prefect."""

import re
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from graphlabel.cli import app

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()


def write_csv(path, rows):
    pd.DataFrame(rows, columns=["id", "a", "b", "label"]).to_csv(path, index=False)
    return str(path)


def test_ingest_reports_rejects_and_keeps_valid_rows(tmp_path, store_path):
    rows = [[f"n{i}", i * 0.1, (i % 5) * 0.2, "p" if i < 3 else ("q" if i < 6 else "")] for i in range(40)]
    rows += [["", 1.0, 1.0, "p"], ["bad", "oops", 1.0, ""]]
    csv = write_csv(tmp_path / "in.csv", rows)
    rejects = tmp_path / "rejects.csv"
    result = runner.invoke(app, ["ingest", csv, "--dataset", "toy", "--key", "id", "--features", "a,b",
                                 "--label", "label", "--rejects", str(rejects), "--store", store_path])
    assert result.exit_code == 0, result.output
    assert "stored 40 nodes" in result.output
    reasons = pd.read_csv(rejects)["reason"].tolist()
    assert reasons == ["missing key", "non-numeric feature a='oops'"]

    result = runner.invoke(app, ["build-graph", "--dataset", "toy", "--k", "5", "--store", store_path])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["label", "--dataset", "toy", "--params", '{"gamma_g": 0.01}',
                                 "--store", store_path])
    assert result.exit_code == 0, result.output
    # one line however long (over 100 characters; a pipe's 80 columns split it before)
    assert re.search(r"^labelled 40 nodes of 'toy' with harmonic \(6 given labels, \d+ flagged as noisy\),"
                     r" run [0-9a-f-]{36}$", result.output, re.MULTILINE), result.output
    flagged = int(re.search(r"(\d+) flagged as noisy", result.output).group(1))
    review = "the labels flagged as noisy, to accept or correct: graphlabel review --dataset toy"
    assert (review in " ".join(result.output.split())) == (flagged > 0), result.output  # where to look at them
    result = runner.invoke(app, ["query", "MATCH (e:Entity) WHERE e.predicted_label IS NOT NULL RETURN count(e)",
                                 "--store", store_path])
    assert result.exit_code == 0
    assert "40" in result.output
    result = runner.invoke(app, ["query", "MATCH (e:Entity) WHERE e.key = $key AND e.label_confidence >= $lo"
                                 " RETURN e.given_label AS given", "-p", "key=n1", "-p", "lo=0", "--store", store_path])
    assert result.exit_code == 0
    assert "p" in result.output
    assert "1 row" in result.output
    # no row: the hint names a dataset no node has
    result = runner.invoke(app, ["query", "MATCH (e:Entity) WHERE e.dataset = $dataset RETURN e.key",
                                 "-p", "dataset=tyo", "--store", store_path])
    assert result.exit_code == 0
    out = " ".join(result.output.split())
    assert "0 rows" in out
    assert "note: no dataset 'tyo' in the store (no node belongs to it); its datasets: 'toy'" in out
    # a number sent where keys are text: ladybug (the default engine) casts the text keys to
    # the number and fails the query, and the note comes with the error
    result = runner.invoke(app, ["query", "MATCH (e:Entity) WHERE e.key = $key RETURN e.key", "-p", "key=1.5",
                                 "--store", store_path])
    assert result.exit_code == 1
    said = " ".join(result.output.split())
    assert said.startswith("error: query failed: "), said
    assert """; note: -p key=1.5 was sent as a number: a text value (keys are text) is -p 'key="1.5"'""" in said
    # on kuzu too (in a process of its own: one engine a process)
    from test_bad_input import cli_process

    old = f"kuzu://{tmp_path / 'old'}"
    assert cli_process("ingest", csv, "--dataset", "toy", "--key", "id", "--features", "a,b", "--store", old,
                       cwd=tmp_path).returncode == 0
    query = "MATCH (e:Entity) WHERE e.dataset = $dataset AND e.key = $key AND e.label_confidence <= $most RETURN e.key"
    done = cli_process("query", query, "-p", "dataset=tyo", "-p", "key=1.5", "-p", "most=0.6", "--store", old,
                       cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    # a dataset no node belongs to is the reason, said alone: the number notes would mislead (most=0.6)
    assert said.endswith("0 rows note: no dataset 'tyo' in the store (no node belongs to it);"
                         " its datasets: 'toy'"), said
    done = cli_process("query", query, "-p", "dataset=toy", "-p", "key=1.5", "-p", "most=0.6", "--store", old,
                       cwd=tmp_path)  # kuzu casts the text keys to the number too, and fails
    assert done.returncode == 1
    assert """note: -p key=1.5 was sent as a number: a text value (keys are text) is -p 'key="1.5"'""" in done.stderr


def test_ingest_with_nothing_valid_exits_non_zero_and_writes_rejects(tmp_path, store_path):
    csv = write_csv(tmp_path / "in.csv", [["", 1, 1, "p"], ["x", "no", 1, "q"]])
    rejects = tmp_path / "rejects.csv"
    result = runner.invoke(app, ["ingest", csv, "--dataset", "toy", "--key", "id", "--features", "a,b",
                                 "--rejects", str(rejects), "--store", store_path])
    assert result.exit_code == 1
    assert "none of the 2 records is valid" in result.output
    assert len(pd.read_csv(rejects)) == 2


def test_label_without_labels_and_bad_json_fail_clearly(tmp_path, store_path):
    csv = write_csv(tmp_path / "in.csv", [[f"n{i}", i, i, ""] for i in range(10)])
    runner.invoke(app, ["ingest", csv, "--dataset", "toy", "--key", "id", "--features", "a,b", "--label",
                        "label", "--store", store_path])
    result = runner.invoke(app, ["label", "--dataset", "toy", "--rebuild-graph", "--k", "3", "--store", store_path])
    assert result.exit_code == 1
    assert "no given label" in result.output
    result = runner.invoke(app, ["label", "--dataset", "toy", "--params", "{oops", "--store", store_path])
    assert result.exit_code == 2  # a bad option
    assert "not valid JSON" in result.output


def test_demo_with_an_unknown_solver_is_a_bad_option_and_creates_no_store(tmp_path):
    # it was a traceback (ValueError) after the demo had made a store and ingested the digits
    result = runner.invoke(app, ["demo", "--solver", "nope", "--store", str(tmp_path / "demo")])
    assert result.exit_code == 2
    assert result.output.strip() == ("error: unknown solver 'nope'; choose one of ['auto', 'harmonic', 'lcsnc',"
                                     " 'maxmargin', 'mincut', 'nmf', 'spectral']")
    assert not (tmp_path / "demo").exists()


def test_ingest_with_classes_rejects_other_labels_and_counts_each_kind(tmp_path, store_path):
    rows = [[f"n{i}", i, i % 3, ["p", "q", ""][i % 3]] for i in range(9)]
    rows += [["x1", 1, 1, "r"], ["x2", 2, 2, "P"], ["n0", 0, 0, "p"], ["", 1, 1, "p"]]
    csv = write_csv(tmp_path / "in.csv", rows)
    rejects = tmp_path / "rejects.csv"
    result = runner.invoke(app, ["ingest", csv, "--dataset", "toy", "--key", "id", "--features", "a,b",
                                 "--label", "label", "--classes", "p, q", "--rejects", str(rejects),
                                 "--store", store_path])
    assert result.exit_code == 0, result.output
    assert "stored 9 nodes" in result.output
    assert "rejected 4 rows (missing key: 1, label not in classes: 2, duplicate key: 1)" in result.output
    written = pd.read_csv(rejects, keep_default_na=False)
    assert written.columns.tolist() == ["row", "key", "kind", "reason"]
    assert written["reason"].tolist() == [
        "label 'r' not in classes ['p', 'q']", "label 'P' not in classes ['p', 'q']",
        "duplicate key 'n0': same values as row 2, which is stored", "missing key"]
    result = runner.invoke(app, ["ingest", csv, "--dataset", "toy", "--key", "id", "--features", "a,b",
                                 "--label", "label", "--classes", "p,,q", "--store", store_path])
    assert result.exit_code == 2  # a bad option (README: "2 for a bad option")
    assert "--classes takes non-empty labels" in result.output


def test_labels_pandas_reads_as_missing_are_classes_and_ingest_says_so(tmp_path, store_path):
    """"NA" is a class (a country code, a product line: only an empty cell is no label), but
    not silently: a file whose NA meant "unknown" got an NA class without a word (a files walk)."""
    rows = [["n1", 1, 1, "p"], ["n2", 2, 2, "NA"], ["n3", 3, 3, ""], ["n4", 4, 4, "NA"], ["n5", 5, 5, "null"]]
    csv = write_csv(tmp_path / "in.csv", rows)
    result = runner.invoke(app, ["ingest", csv, "--dataset", "toy", "--key", "id", "--features", "a,b",
                                 "--label", "label", "--store", store_path])
    assert result.exit_code == 0, result.output
    assert ("note: given labels 'NA' (2 rows), 'null' (1 row) are kept as classes: only an empty cell is no"
            " label; if they mean unknown, empty them in the file and ingest again") in " ".join(result.output.split())
    clean = write_csv(tmp_path / "clean.csv", [["m1", 1, 1, "p"], ["m2", 2, 2, ""]])
    result = runner.invoke(app, ["ingest", clean, "--dataset", "toy2", "--key", "id", "--features", "a,b",
                                 "--label", "label", "--store", store_path])
    assert "kept as classes" not in result.output


def test_python_dash_m_graphlabel_is_the_graphlabel_command():
    result = subprocess.run([sys.executable, "-m", "graphlabel", "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Usage: graphlabel" in result.stdout
    assert "build-graph" in result.stdout


def test_graphlabel_alone_says_what_it_does_and_its_first_run_works_as_printed(tmp_path, store_path):
    # a newcomer types `graphlabel`: the help's first run is run here as printed, with FILE,
    # D, ID and LABEL filled in (it once showed the first line of the module docstring,
    # cut mid-sentence after "report,")
    result = subprocess.run([sys.executable, "-m", "graphlabel"], capture_output=True, text=True, timeout=120)
    shown = result.stderr  # click prints the help of a bare group on stderr, exit status 2
    assert result.returncode == 2, shown
    assert shown.splitlines()[2].strip() == "Label stored entities from a few given labels and a similarity graph."
    steps = [line.split("(")[0].split() for line in shown.splitlines() if line.startswith("    graphlabel ")]
    assert [step[1] for step in steps] == ["ingest", "label", "report"]
    path = write_csv(tmp_path / "points.csv", [[i, i % 2 * 5 + i * 0.01, i % 2 * 5, ("x", "y")[i % 2] if i < 6 else ""]
                                               for i in range(40)])
    filled = {"FILE": path, "D": "points", "ID": "id", "LABEL": "label", "'*'": "*"}
    for step in steps:
        args = [filled.get(word, word) for word in step[1:]]
        ran = runner.invoke(app, [*args, "--store", store_path])
        assert ran.exit_code == 0, (step, ran.output)
    assert "completed harmonic full 40" in " ".join(ran.output.split())  # report's list: the run, 40 nodes


@pytest.mark.parametrize(("args", "said"), [
    (["--format", "parquet", "--output", "wine.csv"], "error: --format parquet but --output 'wine.csv' ends in .csv"
                                                      " (csv): drop one of them"),
    (["--output", "wine.txt"], "error: cannot tell the format of 'wine.txt' from its ending: end it in .parquet or"
                               " .csv, or give --format"),
    (["--format", "xml"], "error: --format must be one of parquet, csv, got 'xml'")])
def test_export_refuses_a_format_its_output_contradicts_or_cannot_name(tmp_path, store_path, monkeypatch, args, said):
    monkeypatch.chdir(tmp_path)
    ran = runner.invoke(app, ["export", "--dataset", "wine", *args, "--store", store_path])
    assert ran.exit_code == 2, ran.output
    assert " ".join(ran.output.split()) == said
    assert list(tmp_path.iterdir()) == []  # refused before the store is opened: nothing written


def test_export_format_follows_the_output_ending_unless_given():
    from labelling.export import export_format

    assert [export_format(None, out) for out in (None, "a.csv", "a.CSV", "a.parquet", "a.pq")] == [
        "parquet", "csv", "csv", "parquet", "parquet"]
    assert export_format("csv", "a.txt") == "csv"  # given: the ending is the user's business
    assert export_format("csv", None) == "csv"


def test_an_accuracy_on_a_few_held_out_labels_comes_with_its_uncertainty(tmp_path, store_path):
    # "accuracy on the 2 held-out labels: 1.000" alone reads as a fact; the flow logged the
    # warning on the run, but the command printed nothing of it
    path = write_csv(tmp_path / "points.csv", [[i, i % 2 * 5 + i * 0.01, i % 2 * 5, ("x", "y")[i % 2] if i < 12 else ""]
                                               for i in range(40)])
    assert runner.invoke(app, ["ingest", path, "--dataset", "points", "--key", "id", "--features", "a,b",
                               "--label", "label", "--store", store_path]).exit_code == 0
    ran = runner.invoke(app, ["label", "--dataset", "points", "--holdout", "0.25", "--store", store_path])
    assert ran.exit_code == 0, ran.output
    said = " ".join(ran.output.split())
    assert "accuracy on the 2 held-out labels: 1.000" in said, said[-1500:]  # one of each class's six
    assert ("warning: the accuracy rests on only 2 held-out labels: it is uncertain by about ±0.49 (95%); hold out 30"
            " or more before trusting it") in said


def test_version_names_graphlabel_and_its_main_parts():
    """`graphlabel --version` (it was "No such option"), from the console script as a bug
    report would quote it."""
    from importlib.metadata import version
    from pathlib import Path

    done = subprocess.run([str(Path(sys.executable).parent / "graphlabel"), "--version"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"graphlabel {version('graphlabel')} (Python {sys.version.split()[0]}; ")
    for name in ("ladybug", "kuzu", "neo4j", "prefect"):
        assert f"{name} {version(name)}" in done.stdout
    assert done.stdout.count("\n") == 1


def test_rebuild_graph_is_a_full_run(tmp_path, store_path):
    """A run with --rebuild-graph gives every node new relationships; run incrementally it
    found "0 changed nodes" and left the graph as it was."""
    path = write_csv(tmp_path / "points.csv", [[i, i % 2 * 5 + i * 0.01, i % 2 * 5, ("x", "y")[i % 2] if i < 6 else ""]
                                               for i in range(40)])
    count = ["query", "MATCH (:Entity)-[r:SIMILAR]->(:Entity) RETURN count(*) AS n", "--format", "csv",
             "--store", store_path]
    for args in (["ingest", path, "--dataset", "p", "--key", "id", "--label", "label", "--features", "*"],
                 ["label", "--dataset", "p", "--k", "5"]):
        assert runner.invoke(app, [*args, "--store", store_path]).exit_code == 0
    before = runner.invoke(app, count).output.split()[-1]
    ran = runner.invoke(app, ["label", "--dataset", "p", "--rebuild-graph", "--k", "3", "--store", store_path])
    assert ran.exit_code == 0, ran.output
    said = " ".join(ran.output.split())
    assert "full run: asked for (--rebuild-graph)" in said, said  # the flag given, not every way to ask
    assert "0 changed nodes" not in said
    full = runner.invoke(app, ["label", "--dataset", "p", "--full", "--store", store_path])
    assert "full run: asked for (--full)" in " ".join(full.output.split()), full.output
    assert int(runner.invoke(app, count).output.split()[-1]) < int(before)  # 3 neighbours each, not 5
