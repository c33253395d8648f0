"""Progress on stderr (flows/progress.py, graphlabel/progress_display.py): what a meter
says, how the displays say it, and the real CLI's stage lines on a pipe, none with
--quiet, stdout's results the same either way. No Prefect server here
(tests/test_progress_server.py has the artifacts)."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from prefect_server import prefect_env
from rich.console import Console

from flows.progress import Meter, progress, showing, stage_progress
from graphlabel.progress_display import LineDisplay, shown

REPO = Path(__file__).resolve().parents[1]
ROWS = 3_000


def meter(stage: str, total: int | None, unit: str, done: int, seconds: float) -> Meter:
    """A meter ``seconds`` into its stage, its clock stopped there (no timing in the text)."""
    return Meter(stage, total, unit, done=done, started=0.0, ended=seconds)


# -- what a meter says ---------------------------------------------------------------------


def test_a_stage_of_known_length_says_its_share_count_rate_and_time_left():
    assert meter("kNN search", 1_000_000, "nodes", 400_000, 80.0).describe() == \
        "kNN search: 40%, 400,000 of 1,000,000 nodes, 5,000 nodes/s, about 2 min left"
    assert meter("write back", 1_000, "nodes", 250, 10.0).describe() == \
        "write back: 25%, 250 of 1,000 nodes, 25 nodes/s, about 30 s left"
    assert meter("write back", 10_000_000, "nodes", 1_000, 10.0).describe() == \
        "write back: 0%, 1,000 of 10,000,000 nodes, 100 nodes/s, about 27.8 h left"


def test_a_stage_says_no_rate_before_its_first_unit_and_no_time_left_at_its_end():
    assert meter("kNN search", 3_000, "nodes", 0, 5.0).describe() == "kNN search: 0%, 0 of 3,000 nodes"
    assert meter("kNN search", 3_000, "nodes", 3_000, 2.0).describe() == \
        "kNN search: 100%, 3,000 of 3,000 nodes, 1,500 nodes/s"


def test_a_stage_of_unknown_length_says_its_count_and_time():
    assert meter("store", None, "nodes", 3_000, 12.0).describe() == "store: 3,000 nodes, 12 s"
    assert meter("export", None, "nodes", 0, 0.0).describe() == "export: started"  # not "0 nodes, 0 s"
    assert meter("store", None, "nodes", 3_000, 12.0).seconds_left is None


def test_a_finished_stage_says_how_long_it_took_and_a_stopped_one_where_it_stopped():
    done = meter("kNN search", 3_000, "nodes", 3_000, 1.5)
    assert done.summary() == "kNN search: 3,000 nodes in 1.5 s (2,000 nodes/s)"
    stopped = meter("write back", 1_000_000, "nodes", 200_000, 4.1)
    stopped.stopped = True
    assert stopped.summary() == "write back: stopped at 200,000 of 1,000,000 nodes (20%) after 4.1 s"
    unknown = meter("store", None, "nodes", 500, 2.0)
    unknown.stopped = True
    assert unknown.summary() == "store: stopped after 500 nodes, 2.0 s"
    one = meter("store", 1, "nodes", 1, 0.5)  # a file of one record said "1 nodes"
    assert one.summary() == "store: 1 node in 0.5 s (2 nodes/s)"


# -- the stages' meters and the displays ---------------------------------------------------


class Recorder:
    """A display that keeps what it was told: (event, stage, done, summary at the end)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int, str | None]] = []

    def start(self, meter: Meter) -> None:
        self.events.append(("start", meter.stage, meter.done, None))

    def update(self, meter: Meter) -> None:
        self.events.append(("update", meter.stage, meter.done, None))

    def finish(self, meter: Meter) -> None:
        self.events.append(("finish", meter.stage, meter.done, meter.summary()))


def test_a_stage_ends_whole_and_a_failed_one_where_it_was():
    shown_on = Recorder()
    with showing(shown_on):
        with progress("write back", 10, "nodes") as write:
            write.to(4)  # the last slice's count is not reported: the stage's end says it
        with pytest.raises(RuntimeError), progress("export", 10, "nodes") as export:
            export.advance(3)
            raise RuntimeError("the store went away")
    assert [event[:3] for event in shown_on.events] == [
        ("start", "write back", 0), ("update", "write back", 4), ("finish", "write back", 10),
        ("start", "export", 0), ("update", "export", 3), ("finish", "export", 3)]
    assert write.stopped is False
    assert export.stopped is True
    assert shown_on.events[2][3].startswith("write back: 10 nodes in ")
    assert shown_on.events[5][3].startswith("export: stopped at 3 of 10 nodes (30%) after ")


def test_a_layer_below_the_flows_reports_stages_that_end_when_the_next_begins():
    shown_on = Recorder()
    with showing(shown_on), stage_progress() as report:
        report("read features", 0, None, "nodes")
        report("read features", 50, None, "nodes")
        report("kNN search", 0, 50, "nodes")
        report("kNN search", 50, 50, "nodes")
    assert [event[:3] for event in shown_on.events] == [
        ("start", "read features", 0), ("update", "read features", 0), ("update", "read features", 50),
        ("finish", "read features", 50),
        ("start", "kNN search", 0), ("update", "kNN search", 0), ("update", "kNN search", 50),
        ("finish", "kNN search", 50)]


def test_without_a_display_a_stage_shows_nothing_and_still_counts():
    with progress("write back", 5, "nodes") as write:
        write.advance(2)
    assert write.done == 5


def test_the_line_display_says_a_stage_when_it_starts_every_so_often_and_when_it_ends():
    every_time, never = io.StringIO(), io.StringIO()
    with showing(LineDisplay(every_time, every=0.0)), progress("kNN search", 4, "nodes") as search:
        search.to(2)
    with showing(LineDisplay(never, every=3600.0)), progress("kNN search", 4, "nodes") as search:
        search.to(2)
    lines = every_time.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0] == "kNN search: 0%, 0 of 4 nodes"
    assert lines[1].startswith("kNN search: 50%, 2 of 4 nodes, ")
    assert re.fullmatch(r"kNN search: 4 nodes in \d+\.\d s( \([\d,]+ nodes/s\))?", lines[2]), lines[2]
    throttled = never.getvalue().splitlines()  # the start and the end only
    assert len(throttled) == 2
    assert throttled[0] == "kNN search: 0%, 0 of 4 nodes"
    assert throttled[1].startswith("kNN search: 4 nodes in ")


def test_a_terminal_shows_the_headline_and_each_stage_and_quiet_shows_nothing():
    terminal = Console(file=io.StringIO(), force_terminal=True, width=160)
    with shown(terminal, "labelling 'toy' with harmonic..."), progress("write back", 3_000, "nodes") as write:
        write.to(1_500)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.file.getvalue())
    assert "labelling 'toy' with harmonic..." in text
    assert re.search(r"write back: 3,000 nodes in \d+\.\d s", text), text
    quiet = Console(file=io.StringIO(), force_terminal=True, width=160)
    with shown(quiet, "labelling 'toy' with harmonic...", quiet=True), progress("write back", 10, "nodes"):
        pass
    assert quiet.file.getvalue() == ""


# -- the real CLI, stderr a pipe -----------------------------------------------------------


def blobs(path: Path, n: int = ROWS, labelled: int = 60, seed: int = 0) -> Path:
    """``n`` rows of two separated blobs in four features, ``labelled`` of them labelled."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[n // 2:] += 3.0
    label = np.array(["a"] * (n // 2) + ["b"] * (n - n // 2), dtype=object)
    label[rng.permutation(n)[labelled:]] = ""
    frame = pd.DataFrame(X, columns=["x1", "x2", "x3", "x4"])
    frame.insert(0, "id", [f"n{i}" for i in range(n)])
    frame["label"] = label
    frame.to_parquet(path, index=False)
    return path


def graphlabel(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI as a user's script runs it, stdout and stderr pipes, no Prefect server
    (the flows run directly, flows/direct.py), this checkout's code."""
    env = prefect_env(cwd / "prefect-home", None, PYTHONPATH=str(REPO), COLUMNS="200")
    done = subprocess.run([sys.executable, "-m", "graphlabel", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


STAGE_LINE = re.compile(r"^(read and check|store|read features|kNN search|write relationships|write back): ",
                        re.MULTILINE)


def results(stdout: str) -> list[str]:
    """A command's results on stdout, less what differs from one run to the next (the run
    id, the seconds per stage)."""
    text = re.sub(r"run [0-9a-f-]{36}", "run ID", stdout)
    return [re.sub(r"\d+\.\d+", "S", line) if "│" in line else line for line in text.splitlines()]


def test_the_cli_says_each_stage_on_stderr_and_nothing_with_quiet(tmp_path):
    data = blobs(tmp_path / "blobs.parquet")
    loud, quiet = str(tmp_path / "loud"), str(tmp_path / "quiet")
    common = ("--dataset", "blobs", "--key", "id", "--features", "x*", "--label", "label")
    ingest = graphlabel("ingest", str(data), *common, "--store", loud, cwd=tmp_path)
    ingest_quiet = graphlabel("ingest", str(data), *common, "--store", quiet, "--quiet", cwd=tmp_path)
    assert ingest.stdout == ingest_quiet.stdout
    assert ingest.stdout.startswith(f"stored {ROWS:,} nodes in dataset 'blobs'\ngiven labels: ")
    lines = ingest.stderr.splitlines()
    assert f"read and check: 0%, 0 of {ROWS:,} rows" in lines
    assert any(re.fullmatch(rf"read and check: {ROWS:,} rows in \d+\.\d s \([\d,]+ rows/s\)", line)
               for line in lines), ingest.stderr
    assert any(re.fullmatch(rf"store: {ROWS:,} nodes in \d+\.\d s \([\d,]+ nodes/s\)", line)
               for line in lines), ingest.stderr
    assert STAGE_LINE.findall(ingest_quiet.stderr) == []

    label = graphlabel("label", "--dataset", "blobs", "--rebuild-graph", "--store", loud, cwd=tmp_path)
    label_quiet = graphlabel("label", "--dataset", "blobs", "--rebuild-graph", "--store", quiet, "--quiet",
                             cwd=tmp_path)
    lines = label.stderr.splitlines()
    for stage, unit in (("read features", "nodes"), ("kNN search", "nodes"), ("write back", "nodes")):
        assert any(re.fullmatch(rf"{stage}: {ROWS:,} {unit} in \d+\.\d s \([\d,]+ {unit}/s\)", line)
                   for line in lines), (stage, label.stderr)
    assert any(re.fullmatch(r"write relationships: [\d,]+ relationships in \d+\.\d s.*", line) for line in lines)
    assert f"kNN search: 0%, 0 of {ROWS:,} nodes" in lines
    assert STAGE_LINE.findall(label_quiet.stderr) == []
    assert results(label.stdout) == results(label_quiet.stdout)
    assert results(label.stdout)[0] == (f"labelled {ROWS:,} nodes of 'blobs' with harmonic (60 given labels,"
                                        " 0 flagged as noisy), run ID")


def test_an_incremental_run_says_its_stages_and_times_them_by_name(tmp_path):
    """An incremental run on Neo4j at 60,000 nodes said nothing for 18 s, and its time per
    stage was one line, "incremental": it says each stage now, and names them."""
    store = str(tmp_path / "store")
    common = ("--dataset", "blobs", "--key", "id", "--features", "x*", "--label", "label", "--store", store)
    graphlabel("ingest", str(blobs(tmp_path / "first.parquet")), *common, cwd=tmp_path)
    first = graphlabel("label", "--dataset", "blobs", "--store", store, cwd=tmp_path)
    assert "read changes" not in first.stderr  # a first run reads no changes: it is full
    more = pd.read_parquet(blobs(tmp_path / "more.parquet", n=40, labelled=4, seed=1))
    more["id"] = [f"m{i}" for i in range(40)]
    more.to_parquet(tmp_path / "more.parquet", index=False)
    graphlabel("ingest", str(tmp_path / "more.parquet"), *common, cwd=tmp_path)
    again = graphlabel("label", "--dataset", "blobs", "--store", store, cwd=tmp_path)
    lines = again.stderr.splitlines()
    for stage, count, unit in (("read changes", f"{ROWS + 40:,}", "nodes"), ("kNN search", "40", "nodes"),
                               ("write relationships", r"[\d,]+", "relationships"),
                               ("solve \\(harmonic\\)", r"[\d,]+", "nodes"), ("write back", r"[\d,]+", "nodes")):
        assert any(re.fullmatch(rf"{stage}: {count} {unit} in \d+\.\d s.*", line) for line in lines), \
            (stage, again.stderr)
    assert "incremental run: 40 changed nodes (40 new)" in again.stdout
    table = again.stdout[again.stdout.index("time per stage"):]
    stages = re.findall(r"│ (\w+)\s+│", table)
    assert stages == ["read_changes", "graph_parameters", "add_edges", "select_region", "export", "solve",
                      "write_back", "record_run"], table
