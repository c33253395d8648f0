"""Run reports: the summary of a LabelRun, its markdown (the flow's Prefect artifact) and
its terminal rendering, which must say the same things."""

import pandas as pd
import pytest
from rich.console import Console

from graphlabel.reporting import (
    report_sections,
    run_report_markdown,
    run_report_renderables,
    run_summary,
    summarise_run,
)
from graphstore import LabelRunRecord
from graphstore.base import NotFound

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
    assert s["n_unlabeled"] == 90 and s["noise_share"] == pytest.approx(0.25)
    assert s["duration_seconds"] == 90.0 and s["started_at"] == pd.Timestamp("2026-02-03 04:05:06")
    assert s["class_distribution"] == [("b", 60, 0.6), ("a", 30, 0.3), ("c", 10, 0.1)]
    assert s["holdout_accuracy"] == 0.9125 and s["mean_confidence"] == 0.875 and s["n_unreachable"] == 2
    assert s["other_metrics"] == {"n_edges": 512}
    assert summarise_run(s) == s  # a summary summarises to itself


def test_markdown_report_has_every_section_and_escapes_cells():
    text = run_report_markdown(record(status="failed", error="bad | value\nsecond line"))
    assert text.startswith("# Labelling run `run-7`: digits, harmonic, failed")
    for line in ("| status | failed |", "| error | bad \\| value second line |",
                 "| given labels | 12 (11.8% of nodes) |", "| unlabeled | 90 (88.2% of nodes) |",
                 "| flagged as noisy | 3 (25.0% of given labels) |", "| mean confidence | 0.875 |",
                 "| accuracy on the held-out slice | 0.912 |", "| b | 60 | 60.0% |", "| solve | 1.500 |",
                 "| solver_params.gamma_g | 1e-05 |", "| numpy | 2.4.6 |", "| n_edges | 512 |",
                 "| duration | 90.0 s |", "## Class distribution (predicted)", "## Versions"):
        assert line in text.splitlines(), line
    # a run without a held-out slice or timings has no such row or section
    bare = run_report_markdown(record(metrics={}, timings={}))
    assert "held-out" not in bare and "## Time per stage" not in bare and "| mean confidence | — |" in bare


def test_terminal_and_markdown_show_the_same_cells():
    # an error that looks like rich markup must be shown as written
    run = record(status="failed", error="row [bold]3[/bold] has no [red]key")
    console = Console(record=True, width=200)
    for renderable in run_report_renderables(run):
        console.print(renderable)
    terminal = console.export_text()
    markdown = run_report_markdown(run)
    assert "row [bold]3[/bold] has no [red]key" in terminal
    for _, _, rows in report_sections(summarise_run(run)):
        for row in rows:
            for cell in row:
                assert cell in terminal and cell.replace("|", "\\|") in markdown, cell


def test_run_summary_reads_the_run_from_a_store(kuzu_store):
    kuzu_store.write_run(record())
    kuzu_store.write_run(record(run_id="run-8", status="running", finished_at=None))
    summary = run_summary(kuzu_store, "run-7")
    assert summary == summarise_run(record())
    running = run_summary(kuzu_store, "run-8")
    assert running["status"] == "running" and running["duration_seconds"] is None
    with pytest.raises(NotFound, match="no run 'nope'"):
        run_summary(kuzu_store, "nope")
