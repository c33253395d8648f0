"""Run reports: the summary of a LabelRun, its markdown (the flow's Prefect artifact) and
its terminal rendering, which must say the same things."""

import re
from html import escape

import pandas as pd
import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from graphstore import LabelRunRecord
from graphstore.errors import NotFound
from labelling.reporting import (
    headline_text,
    metrics_rows,
    report_sections,
    run_report_markdown,
    run_report_renderables,
    run_summary,
    runs_table,
    short_run_id,
    statistics_warnings,
    summarise_run,
)

STARTED = pd.Timestamp("2026-02-03 04:05:06", tz="UTC")


def record(**changes):
    values = dict(
        run_id="run-7", dataset="digits", solver="harmonic",
        parameters={"solver_params": {"gamma_g": 1e-05}, "k": 10, "graph": "knn"},
        metrics={"class_counts": {"a": 30, "b": 60, "c": 10}, "mean_confidence": 0.875,
                 "holdout_accuracy": 0.9125, "n_unreachable": 2, "n_edges": 512},
        timings={"export": 0.25, "solve": 1.5}, started_at=STARTED,
        finished_at=STARTED + pd.Timedelta(seconds=90), n_nodes=102, n_labeled=12, n_flagged=3,
        versions={"numpy": "2.4.6", "kuzu": "0.11.3"})
    values.update(changes)
    return LabelRunRecord(**values)


def test_summary_derives_counts_shares_and_duration():
    s = summarise_run(record())
    assert s["n_unlabeled"] == 90
    assert s["noise_share"] == pytest.approx(0.25)
    assert s["duration_seconds"] == 90.0
    assert s["started_at"] == pd.Timestamp("2026-02-03 04:05:06")
    assert s["class_distribution"] == [("b", 60, 0.6), ("a", 30, 0.3), ("c", 10, 0.1)]
    assert s["holdout_accuracy"] == 0.9125
    assert s["mean_confidence"] == 0.875
    assert s["n_unreachable"] == 2
    assert s["other_metrics"] == {"n_edges": 512}
    assert summarise_run(s) == s  # a summary summarises to itself


def test_markdown_report_has_every_section_and_escapes_cells():
    text = run_report_markdown(record(status="failed", error="bad | value\nsecond line"))
    assert text.startswith("# digits · harmonic, failed (run `run-7`)")
    lines = text.splitlines()
    # a failed run's error in a paragraph (a table cell ran off the UI's page), shown as it is
    assert lines[2] == "> bad | value second line"
    assert lines[4] == "## Headline"  # the headline table first (the one-line headline is the description)
    for line in ("| status | failed |", "| error | in full above |", "| b | 60 | 60.0% |",
                 "| solve | 1.500 |", "| solver_params.gamma_g | 1e-05 |", "| numpy | 2.4.6 |",
                 "| node pairs joined (edges solved over) | 512 |", "| k | 10 |", "| duration | 90.0 s |",
                 "## Class distribution (predicted)", "## Versions", "## Graph used"):
        assert line in lines, line
    # a failed run's headline is its status and error, not numbers it never finished
    assert "| labels flagged as noisy |" not in text
    assert "| given labels | — |" in lines
    assert "| given labels | 12 of 102 nodes (11.8%) |" in run_report_markdown(record()).splitlines()
    # a run without a held-out slice or timings has no such row or section
    bare = run_report_markdown(record(metrics={}, timings={}))
    assert "held-out" not in bare
    assert "## Time per stage" not in bare
    assert "| mean confidence | — |" in bare


def test_markdown_cells_render_as_written():
    # class names are the user's data: emphasis, HTML or a link in one must show as written
    classes = {"*rare*": 3, "<none>": 5, "my_class": 4, "__other__": 2, "[x](y)": 1, "a|b": 1}
    text = run_report_markdown(record(metrics={"class_counts": classes}))
    assert "| my_class | 4 | 25.0% |" in text.splitlines()  # a word's own underscore stays as it is
    html = MarkdownIt("commonmark").enable("table").render(text)  # CommonMark with GFM's tables
    for name in classes:
        assert f"<td>{escape(name, quote=False)}</td>" in html, name
    for element in ("<em>", "<strong>", "<a "):
        assert element not in html, element


def test_headline_comes_first_with_counts_and_shares():
    run = record(n_flagged=2, metrics={"class_counts": {"a": 30, "b": 70}, "mean_confidence": 0.875,
                                       "holdout_accuracy": 0.9125,
                          "n_holdout": 80, "holdout_ece": 0.0412, "n_unreachable": 2, "incremental": False,
                          "full_run_reason": "no node was labelled before (first run)"})
    sections = report_sections(summarise_run(run))
    assert [title for title, _, _ in sections][:3] == ["headline", "warnings", "run"]
    assert sections[1][2] == [("2 nodes (2.0%) are reached by no label and have no prediction",)]
    assert sections[0][2] == [
        ("status", "completed"), ("accuracy on held-out labels", "0.912 on 80 labels (ECE 0.041)"),
        ("labels flagged as noisy", "2 of 12 given (16.7%)"), ("unlabelled nodes reached", "88 of 90 (97.8%)"),
        ("coverage", "100 of 102 nodes labelled (98.0%)"), ("mean confidence", "0.875"),
        ("run", "full: no node was labelled before (first run)")]
    rows = metrics_rows(summarise_run(run))
    assert [row["metric"] for row in rows[:7]] == [name for name, _ in sections[0][2]]
    assert {"metric": "predicted b", "value": "70 (70.0%)"} in rows
    assert headline_text(run) == ("digits · harmonic: accuracy 0.912 on 80 held-out labels; 2 labels flagged"
                                  " (16.7%); 98.0% of 102 nodes labelled")


def test_small_holdouts_and_many_flags_are_said_plainly():
    run = record(n_flagged=3, n_labeled=12, metrics={"holdout_accuracy": 0.9, "n_holdout": 10,
                                                      "n_unreachable": 0})
    warnings = statistics_warnings(run)
    assert len(warnings) == 2
    assert warnings[0].startswith("the accuracy rests on only 10 held-out labels: it is uncertain by about ±0.19")
    assert warnings[1].startswith("25% of the given labels are flagged as noisy (more than 20%)")
    assert ("warning",) == report_sections(summarise_run(run))[1][1]
    assert statistics_warnings(record(n_flagged=2, metrics={"holdout_accuracy": 0.9, "n_holdout": 30})) == []


def test_terminal_and_markdown_show_the_same_cells():
    # an error that looks like rich markup must be shown as written
    run = record(status="failed", error="row [bold]3[/bold] has no [red]key")
    console = Console(record=True, width=200)
    for renderable in run_report_renderables(run):
        console.print(renderable)
    terminal = console.export_text()
    markdown = run_report_markdown(run)
    assert "row [bold]3[/bold] has no [red]key" in terminal
    shown = re.sub(r"\\([\\`*_<>\[\]#|])", r"\1", markdown)  # as rendered: the markdown's escapes undone
    assert "> row [bold]3[/bold] has no [red]key" in shown  # the error's paragraph
    for _, _, rows in report_sections(summarise_run(run)):
        for row in rows:
            for cell in row:
                assert cell in terminal, cell
                assert cell in shown, cell


def test_run_summary_reads_the_run_from_a_store(embedded_store):
    embedded_store.write_run(record())
    embedded_store.write_run(record(run_id="run-8", status="running", finished_at=None))
    summary = run_summary(embedded_store, "run-7")
    assert summary == summarise_run(record())
    running = run_summary(embedded_store, "run-8")
    assert running["status"] == "running"
    assert running["duration_seconds"] is None
    with pytest.raises(NotFound, match="no run 'nope'"):
        run_summary(embedded_store, "nope")


def test_run_ids_are_shown_by_their_random_end_and_found_by_either_end(embedded_store):
    # Prefect's scheduler gives its runs UUID 7 ids: the first 8 digits are the creation
    # time, the same for runs created together
    ids = ["01a20f3e-9e75-7fca-8a9c-1b344d4c4a17", "01a20f3e-9e75-721a-97e4-36eb783bafce"]
    for i, run_id in enumerate(ids):
        embedded_store.write_run(record(run_id=run_id, started_at=STARTED + pd.Timedelta(minutes=i)))
    assert short_run_id(ids[0]) == "…4d4c4a17"
    assert short_run_id("run-7") == "run-7"
    table = runs_table(embedded_store.read_runs("digits"))
    console = Console(record=True, width=80)
    console.print(table)
    text = console.export_text()
    assert "…783bafce" in text
    assert "…4d4c4a17" in text
    assert "01a20f3e" not in text
    assert run_summary(embedded_store, "4d4c4a17")["run_id"] == ids[0]
    assert run_summary(embedded_store, "…4d4c4a17")["run_id"] == ids[0]
    assert run_summary(embedded_store, "01a20f3e-9e75-721")["run_id"] == ids[1]
    with pytest.raises(NotFound, match="is the start or end of 2 runs") as error:
        run_summary(embedded_store, "01a20f3e")
    # both runs named (newest first), so no '...' that would hint at more
    assert f"({ids[1]}, {ids[0]}): give more of it" in str(error.value)
    assert run_report_markdown(record(run_id=ids[0])).startswith("# digits · harmonic, completed (run `…4d4c4a17`)")


def test_the_runs_table_fits_80_columns_with_its_widest_row(embedded_store):
    # a 200,000-node run of 49.3 s was shown as "49.3…" in a pipe's 80 columns
    embedded_store.write_run(record(run_id="01a20f3e-9e75-7fca-8a9c-1b344d4c4a17", solver="maxmargin",
                                metrics={"incremental": True, "holdout_accuracy": 0.934}, n_nodes=1_000_000,
                                n_flagged=12_345, finished_at=STARTED + pd.Timedelta(seconds=1234.5)))
    console = Console(record=True, width=80)
    console.print(runs_table(embedded_store.read_runs("digits")))
    row = console.export_text().splitlines()[-1]
    assert row.split() == ["…4d4c4a17", "02-03", "04:05", "completed", "maxmargin", "incr.", "1,000,000", "12,345",
                           "0.934", "1234.5", "s"]


def test_a_run_whose_process_was_found_gone_lasted_at_least_to_its_last_sign_of_life(embedded_store):
    """Killed during its first stage, such a run showed "0.0 s": its finished_at is its last
    sign of life (labelling.liveness), so its duration is a lower bound."""
    from labelling.liveness import why_interrupted

    gone = why_interrupted({"process": {"host": "h", "pid": 2 ** 22 + 7, "started": 0.0}, "started_at": STARTED},
                           STARTED, pd.Timedelta(hours=6), host="h")
    killed = record(run_id="run-gone", status="failed", error=gone, finished_at=STARTED + pd.Timedelta(seconds=3))
    stopped = record(run_id="run-ctrl-c", status="failed", error="interrupted (Ctrl-C, or SIGINT from another process)")
    assert summarise_run(killed)["duration_at_least"] is True
    assert summarise_run(stopped)["duration_at_least"] is False  # stopped by itself: its end was seen
    embedded_store.write_run(killed)
    embedded_store.write_run(stopped)
    console = Console(record=True, width=80)
    console.print(runs_table(embedded_store.read_runs("digits")))
    times = {line.split()[0].lstrip("…"): line.split()[-2] for line in console.export_text().splitlines()[-2:]}
    assert times == {"run-gone": "≥3.0", "n-ctrl-c": "90.0"}
    console = Console(record=True, width=200)
    console.print(*run_report_renderables(killed))
    assert "at least 3.0 s (to its last sign of life: its end was not seen)" in console.export_text()


def test_graph_and_other_metrics_are_named_and_rounded():
    run = record(parameters={"graph": "knn+edges:BOUGHT_WITH", "k": 8, "sigma": 27.46446977460151, "scale": "robust",
                             "edges_type": "BOUGHT_WITH", "edges_weight": 0.5, "solver_params": {"gamma_g": 0.1},
                             "graph_built_at": "2026-11-24 20:25:43.863347"},
                 metrics={"n_components": 5, "n_solver_batches": 2, "unreached_share": 0.005463,
                          "incremental_solve_seconds": 0.0752, "solver_temperature": 0.40771234})
    sections = {title: rows for title, _, rows in report_sections(summarise_run(run))}
    # the scale and the user's edges are the graph's, as used (they were among the parameters "as asked")
    assert sections["graph used"] == [("graph", "knn+edges:BOUGHT_WITH"), ("k", "8"), ("scale", "robust"),
                                      ("sigma", "27.46"), ("edges_type", "BOUGHT_WITH"), ("edges_weight", "0.5"),
                                      ("built at", "2026-11-24 20:25:43 UTC")]
    assert dict(sections["parameters (as asked)"]) == {"solver_params.gamma_g": "0.1"}
    other = dict(sections["other metrics"])
    assert other == {"connected components": "5", "solver batches": "2", "incremental solve time": "0.075 s",
                     "solver: temperature": "0.4077"}  # unreached_share is the headline's coverage


def test_an_incremental_run_says_what_it_relabelled_of_the_whole():
    run = record(n_nodes=108, n_labeled=48, n_flagged=2,
                 metrics={"incremental": True, "n_nodes": 177, "n_changed": 10, "n_new": 10, "n_region": 108,
                          "n_unreachable": 0})
    rows = dict({title: rows for title, _, rows in report_sections(summarise_run(run))}["run"])
    assert rows["nodes"] == "108 relabelled of 177"
    assert headline_text(run) == ("digits · harmonic: 2 labels flagged (4.2%); 108 of 177 nodes relabelled,"
                                  " 100.0% of them labelled")
    held = record(metrics={"holdout_accuracy": 0.9, "n_holdout": 40})
    assert dict({title: rows for title, _, rows in report_sections(summarise_run(held))}["run"])["given labels"] == (
        "12 of 102 nodes (11.8%); 40 more held out to score the run")


def test_counts_read_with_separators_and_in_the_singular_for_one():
    from labelling.wording import counted

    assert counted(1, "flagged given label") == "1 flagged given label"
    assert [counted(n, "row") for n in (0, 2)] == ["0 rows", "2 rows"]
    assert counted(1500, "node") == "1,500 nodes"


def test_one_flagged_label_reads_in_the_singular():
    # the headline is the run's log line and its artifact's description in Prefect's UI
    assert headline_text(record(n_flagged=1, metrics={"n_unreachable": 0})).startswith(
        "digits · harmonic: 1 label flagged (")
    assert headline_text(record(n_flagged=1500, n_labeled=3000, metrics={"n_unreachable": 0})).startswith(
        "digits · harmonic: 1,500 labels flagged (")


def test_an_artifact_description_leads_with_the_numbers():
    run = record(metrics={"holdout_accuracy": 0.9125, "n_holdout": 80, "n_unreachable": 0})
    assert headline_text(run, named=False).startswith("accuracy 0.912 on 80 held-out labels; 3 labels flagged")
    assert headline_text(record(status="failed", error="NotEnoughLabels: one class"), named=False) == (
        "failed: NotEnoughLabels: one class")


def test_the_log_can_leave_the_unreached_warning_to_the_flow():
    run = record(n_flagged=0, metrics={"n_unreachable": 2})
    assert len(statistics_warnings(run)) == 1
    assert statistics_warnings(run, unreached=False) == []


def test_section_titles_stay_on_one_line_in_80_columns():
    console = Console(record=True, width=80)
    for renderable in run_report_renderables(record()):
        console.print(renderable)
    lines = console.export_text().splitlines()
    assert "class distribution (predicted)" in lines
    assert max(len(line) for line in lines) <= 80


def test_metrics_table_rows_fit_its_value_column():
    # Prefect's table artifact cuts a long cell at the column's edge: a warning is wrapped
    # over rows, the first named "warning", the next blank
    run = record(n_flagged=0, metrics={"holdout_accuracy": 0.9, "n_holdout": 11, "n_unreachable": 0,
                          "confidence_histogram": {"0.5-0.6": 1, "0.9-1.0": 101}, "solver_amg_fallbacks": 0})
    rows = metrics_rows(summarise_run(run))
    warning = [row for row in rows if row["metric"] in ("warning", "")]
    assert len(warning) > 1
    assert warning[0]["metric"] == "warning"
    assert max(len(row["value"]) for row in warning) <= 55
    assert " ".join(row["value"] for row in warning) == statistics_warnings(run)[0]
    values = {row["metric"]: row["value"] for row in rows}
    assert values["confidence 0.5-0.6"] == "1 node (1.0%)"
    # and so is a failed run's error (cut at "needs at least two classe" in the UI)
    error = "NotEnoughLabels: dataset 'onewine' has given labels of one class only ('barolo'): a solver needs two"
    failed = metrics_rows(summarise_run(record(status="failed", error=error)))
    assert [row["metric"] for row in failed[:4]] == ["status", "error", "", "warning"]
    assert max(len(row["value"]) for row in failed[1:3]) <= 55
    assert " ".join(row["value"] for row in failed[1:3]) == error
    # and the report's warnings are a list of sentences, not a table's cells cut at the page's edge
    lines = run_report_markdown(run).splitlines()
    assert lines[lines.index("## Warnings") + 2] == f"- {statistics_warnings(run)[0]}"
    assert values["confidence 0.9-1.0"] == "101 nodes (99.0%)"
    assert values["solver: amg fallbacks"] == "0"


def held_out(accuracy: float, recall: dict[str, float]) -> LabelRunRecord:
    """A run scored on 100 held-out labels, 90 of class 'a' and 10 of 'b'."""
    return record(n_flagged=0, metrics={
        "holdout_accuracy": accuracy, "n_holdout": 100, "n_unreachable": 0,
        "holdout_balanced_accuracy": sum(recall.values()) / 2, "holdout_majority_class": "a",
        "holdout_majority_accuracy": 0.9,
        "holdout_classes": {"a": {"held_out": 90, "recall": recall["a"], "precision": 0.95},
                            "b": {"held_out": 10, "recall": recall["b"], "precision": None}}})


def test_an_accuracy_below_always_answering_the_largest_class_says_what_it_hides():
    # the run that finds no 'b' and the run that finds 8 of 10 'b' both score below 0.9
    blind, seeing = held_out(0.89, {"a": 0.99, "b": 0.0}), held_out(0.88, {"a": 0.889, "b": 0.8})
    assert statistics_warnings(blind) == [
        "the accuracy (0.890) is no better than always answering 'a', the most common given label (0.900 of the"
        " held-out labels), and it finds less than 50% of some classes' held-out labels: 'b' 0 of 10 (the held-out"
        " labels per class in graphlabel report --run)"]
    assert statistics_warnings(seeing) == [
        "the accuracy (0.880) is no better than always answering 'a', the most common given label (0.900 of the"
        " held-out labels), which never finds another class; this run finds at least 50% of every class's"
        " held-out labels: with classes this unequal, read the balanced accuracy (0.845, the mean of the"
        " classes' recall)"]
    assert statistics_warnings(held_out(0.95, {"a": 0.99, "b": 0.6})) == []
    # the most common class itself mostly missed (3 given labels of 1,554 on ReutersCorn: 0.427)
    assert statistics_warnings(held_out(0.45, {"a": 0.4, "b": 0.9}))[0].endswith(
        "and it finds less than 50% of some classes' held-out labels: 'a' 36 of 90 (the held-out labels per class in"
        " graphlabel report --run)")
    # above the baseline, yet 'b' mostly missed: the balanced accuracy says it
    assert statistics_warnings(held_out(0.92, {"a": 1.0, "b": 0.2})) == [
        "the accuracy (0.920) rests on the most common classes, and the balanced accuracy (the mean of the classes'"
        " recall) is 0.600: it finds less than 50% of some classes' held-out labels: 'b' 2 of 10 (the held-out labels"
        " per class in graphlabel report --run)"]
    sections = dict((title, rows) for title, _, rows in report_sections(summarise_run(seeing)))
    assert ("balanced accuracy (mean recall)", "0.845; always answering 'a' scores 0.900") in sections["headline"]
    assert sections["held-out labels per class"] == [("a", "90", "0.889", "0.950"), ("b", "10", "0.800", "—")]
    assert {"metric": "held-out b", "value": "recall 0.800, precision — (10 labels)"} in metrics_rows(seeing)
    one = held_out(0.88, {"a": 0.889, "b": 0.8})
    one.metrics["holdout_classes"]["b"]["held_out"] = 1
    assert {"metric": "held-out b", "value": "recall 0.800, precision — (1 label)"} in metrics_rows(one)
    assert "holdout_classes" not in summarise_run(seeing)["other_metrics"]


def test_a_parameter_the_solver_chose_shows_what_it_chose():
    """``class_mass = "auto"`` read "auto" in the parameters, what ran only under the other
    metrics ("solver: class mass")."""
    run = record(parameters={"solver_params": {"class_mass": "auto", "loo": "local", "gamma_g": 0.0}},
                 metrics={"solver_class_mass": "smoothed", "solver_loo": "local", "solver_temperature": 0.5})
    rows = dict({title: rows for title, _, rows in report_sections(summarise_run(run))}["parameters (as asked)"])
    assert rows == {"solver_params.class_mass": "auto → smoothed", "solver_params.loo": "local",
                    "solver_params.gamma_g": "0.0"}
