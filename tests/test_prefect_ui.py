"""What a person sees in the Prefect UI, in a real browser: a label run of the CLI on a real
Prefect server (tests/prefect_server.py), its pages opened in Debian's headless Chromium
after the UI's scripts ran, and read as text.

- the flow run's page: its name, state, tags and the stages its log names;
- a store task's page: its retry settings ("Retry Delay: NaNs" when a task declared a
  list of delays);
- the report artifact's page: the markdown rendered as tables, and the tags of the run's
  kind (a full run's report showed its task run tagged "incremental");
- a schedule's deployment page, as ``graphlabel serve`` registers it: its schedule, its
  next run, and one run at a time.

Each page's screenshot is kept beside the test's files for a person to look at. Without
Chromium (``make test`` installs it as root) these tests are not run, and the run says so
in one line; in CI (``CI=true``) that is a failure (conftest.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest
from prefect_server import PrefectServer, stop
from test_progress_server import cli, flow_run, run_cli

pytestmark = pytest.mark.browser

#: Chromium as the machine probe ran it: without the background-networking flags it tries
#: Google's hosts at every start, refused on a closed network.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1400,1600")
#: Milliseconds of virtual time the page's scripts get before the DOM is read: the UI's
#: requests to the server's API finish inside it (about 1 s of wall time here).
SCRIPT_MILLISECONDS = 20_000


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Text(HTMLParser):
    """The visible text of a DOM: text nodes outside script and style, one per line."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._hidden -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._hidden and data.strip():
            self.lines.append(" ".join(data.split()))


def _chromium(url: str, *what: str) -> str:
    """Headless Chromium on ``url`` with a new empty profile, once the page's scripts ran
    (``SCRIPT_MILLISECONDS``): ``what`` is ``--dump-dom`` (the DOM is returned) or
    ``--screenshot=FILE``."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                               f"--virtual-time-budget={SCRIPT_MILLISECONDS}", *what, url],
                              capture_output=True, text=True, timeout=120).stdout


def rendered(url: str, screenshot: Path, expect: str) -> tuple[str, str]:
    """The page at ``url`` once its scripts ran, as (DOM, visible text one line per node),
    and its screenshot; read again (up to 3 times) while ``expect`` is not on it yet (a
    loaded machine)."""
    for _ in range(3):
        dom = _chromium(url, "--dump-dom")
        if expect in dom:
            break
    _chromium(url, f"--screenshot={screenshot}")
    text = _Text()
    text.feed(dom)
    return dom, "\n".join(text.lines)


def tags_on(lines: list[str]) -> list[list[str]]:
    """The tag lists a page shows: the lines after each "Tags" heading that are tags of
    these runs (a tag list ends where the next heading begins)."""
    known = {"full", "incremental", "graphlabel", "harmonic", "wine"}
    found = []
    for at in (i for i, line in enumerate(lines) if line == "Tags"):
        tags = []
        for line in lines[at + 1:]:
            if line not in known:
                break
            tags.append(line)
        found.append(tags)
    return found


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A Prefect server, and the wine data ingested and labelled through the CLI reporting
    to it (the dataset's first run: full)."""
    from sklearn.datasets import load_wine

    folder = tmp_path_factory.mktemp("prefect-ui")
    frame = load_wine(as_frame=True).frame
    frame.insert(0, "id", [f"w{i}" for i in range(len(frame))])
    frame["target"] = [str(label) if i % 5 == 0 else "" for i, label in enumerate(frame["target"])]
    frame.to_csv(folder / "wine.csv", index=False)
    with PrefectServer(folder) as server:
        store = str(folder / "store")
        run_cli(server, "ingest", "wine.csv", "--dataset", "wine", "--key", "id", "--features", "*", "--label",
                "target", "--store", store, cwd=folder)
        run_cli(server, "label", "--dataset", "wine", "--store", store, cwd=folder)
        yield server, flow_run(server, "wine", "harmonic"), folder


def test_the_flow_run_page_shows_the_run_its_stages_and_artifacts(labelled):
    server, run, folder = labelled
    _, text = rendered(f"{server.ui_url}/runs/flow-run/{run['id']}", folder / "flow-run.png", "write-predictions")
    lines = text.splitlines()
    assert "wine · harmonic · full" in lines, text
    assert "Completed" in lines, text
    name = lines.index("wine · harmonic · full")
    assert lines[name + 1:name + 5] == ["full", "graphlabel", "harmonic", "wine"], text  # its tags
    # the timeline is drawn on a canvas; the log below it names each stage's task run
    for stage in ("record-run: running", "export", "write-predictions", "record-run: completed",
                  "publish-artifacts"):
        assert stage in lines, (stage, text)
    assert "full run: no node was labelled before (first run)" in lines, text
    # the graph is built before the one export (the export read every node to find no
    # relationship, then the graph was built and exported again)
    exports = server.post("/task_runs/filter", {"flow_runs": {"id": {"any_": [run["id"]]}},
                                                "task_runs": {"name": {"any_": ["export", "build-edges"]}},
                                                "sort": "EXPECTED_START_TIME_ASC"})
    assert [task["name"] for task in exports] == ["build-edges", "export"]


def test_a_store_tasks_page_shows_its_retry_delay(labelled):
    """The store tasks retry 3 times, 2 s apart: the page says so (it said "NaNs" for the
    backoff list of 1, 2 and 4 s before)."""
    server, run, folder = labelled
    tasks = server.post("/task_runs/filter", {"flow_runs": {"id": {"any_": [run["id"]]}},
                                              "task_runs": {"name": {"like_": "write-predictions"}}})
    assert len(tasks) == 1, [task["name"] for task in tasks]
    _, text = rendered(f"{server.ui_url}/runs/task-run/{tasks[0]['id']}", folder / "task-run.png", "Retry Delay")
    settings = text.split("Task configuration", 1)[-1].splitlines()
    assert settings[settings.index("Retries") + 1] == "3", text
    assert settings[settings.index("Retry Delay") + 1] == "2s", text
    assert "NaN" not in text


def test_the_report_artifact_page_renders_the_report(labelled):
    """The report's markdown is rendered (headings and tables, not the markdown's pipes),
    with the counts of the run, and every tag on the page says the run was full."""
    server, run, folder = labelled
    found = server.post("/artifacts/filter", {"artifacts": {"key": {"any_": ["label-wine-report"]}}})
    assert len(found) == 1
    dom, text = rendered(f"{server.ui_url}/artifacts/artifact/{found[0]['id']}", folder / "report.png",
                         "Class distribution")
    lines = text.splitlines()
    assert re.search(r"<h1[^>]*>\s*wine · harmonic, completed", dom), text
    assert dom.count("<table") >= 5, text  # headline, run, classes, confidence, stages, ...
    assert "|---|" not in text
    assert lines[lines.index("given labels") + 1] == "36 of 178 nodes (20.2%)", text
    assert lines[lines.index("coverage") + 1] == "178 of 178 nodes labelled (100.0%)", text
    # the flow run's tags, then the report task's (which said "incremental" before)
    assert tags_on(lines) == [["full", "graphlabel", "harmonic", "wine"]] * 2, text
    # and the time of finding that the run had to be full is not an "incremental" stage
    assert "check_changes" in lines, text
    assert "incremental" not in lines, text


def test_a_served_jobs_deployment_page_shows_its_schedule(labelled):
    """`graphlabel serve` with one job: its deployment's page shows the job's name, "Every
    10 minutes", a next run scheduled, the status Ready and a concurrency limit of 1."""
    server, _, folder = labelled
    config = folder / "schedule.toml"
    config.write_text(f'store = "{folder / "store"}"\n\n[[jobs]]\nname = "wine-every-10"\ndataset = "wine"\n'
                      "interval = 600\n")
    log = (folder / "serve.log").open("wb")
    serve = subprocess.Popen([str(Path(sys.executable).with_name("graphlabel")), "serve", "--config", str(config)],
                             cwd=folder, env=server.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (found := server.post("/deployments/filter", {"deployments": {"name": {"any_": ["wine-every-10"]}}})):
            assert serve.poll() is None, (folder / "serve.log").read_text()
            assert time.monotonic() < deadline, (folder / "serve.log").read_text()
            time.sleep(1)
        # the next run, made by the server's scheduler a few seconds after the deployment
        query = {"flow_runs": {"deployment_id": {"any_": [found[0]["id"]]}, "state": {"type": {"any_": ["SCHEDULED"]}}}}
        while not (scheduled := server.post("/flow_runs/filter", query)):
            assert time.monotonic() < deadline, (folder / "serve.log").read_text()
            time.sleep(1)
        _, text = rendered(f"{server.ui_url}/deployments/deployment/{found[0]['id']}", folder / "deployment.png",
                           "Next Run")
    finally:
        stop(serve)
        log.close()
    lines = text.splitlines()
    assert "wine-every-10" in lines, text
    assert "Every 10 minutes" in lines, text
    # the next run, made by the server's scheduler, by its name ("Scheduled" is on the page
    # with no run scheduled: a label of the runs' filter)
    at = lines.index("Next Run") if "Next Run" in lines else len(lines)
    assert {run["name"] for run in scheduled} & set(lines[at:at + 3]), text
    assert any(line.startswith("Scheduled for ") for line in lines[at:]), text
    assert lines[lines.index("Status") + 1] == "Ready", text
    assert lines[lines.index("Concurrency Limit") + 1] == "1", text


def test_a_failed_runs_report_page_shows_its_whole_error(labelled):
    """A run a solver's time limit stopped: its report artifact gives the error in a paragraph,
    whose advice (at its end) a person can read; in the headline's table cell it ran off the
    page at its first hundred characters."""
    server, _, folder = labelled
    store = str(folder / "store")
    run_cli(server, "ingest", "wine.csv", "--dataset", "timed", "--key", "id", "--features", "*", "--label",
            "target", "--store", store, cwd=folder)
    done = subprocess.run(cli("label", "--dataset", "timed", "--solver", "mincut", "--params", '{"time_limit": 1e-9}',
                              "--store", store), cwd=folder, env=server.env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    found = server.post("/artifacts/filter", {"artifacts": {"key": {"any_": ["label-timed-report"]}}})
    assert len(found) == 1
    dom, text = rendered(f"{server.ui_url}/artifacts/artifact/{found[0]['id']}", folder / "failed-report.png",
                         "in full above")
    quoted = re.search(r"<blockquote[^>]*>(.*?)</blockquote>", dom, re.S)
    assert quoted, text
    words = " ".join(unescape(re.sub(r"<[^>]+>", " ", quoted.group(1))).split())
    assert words.startswith("SolverTimeLimit: mincut stopped itself after "), words
    assert words.endswith("Use the harmonic solver, or give the solver parameter time_limit more seconds "
                          '("none" for no limit).'), words
    lines = text.splitlines()
    assert lines[lines.index("error") + 1] == "in full above", text
