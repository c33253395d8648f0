"""Shared fixtures: a real Prefect (test harness: a temporary server and database for the
session), a fresh real embedded store per test, and the live Neo4j + GDS server of the
``neo4j`` tests (started here for the session when they are selected; tests/live_neo4j.py)."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# the suite's stores are the default engine's, or in a process that runs a file on the
# other engine (tests/engines.py), that engine's: a user's GRAPHLABEL_ENGINE must not
# turn them into another
os.environ.pop("GRAPHLABEL_ENGINE", None)
if os.environ.get("GRAPHLABEL_TEST_ENGINE"):
    os.environ["GRAPHLABEL_ENGINE"] = os.environ["GRAPHLABEL_TEST_ENGINE"]

# Prefect's logging set up now, on this process's own stderr: set up by the first flow run
# of the session (Prefect is imported on first use), its console handler kept the stream
# of that moment, and when the run went through typer's CliRunner that was the runner's
# buffer, closed when the command ended; a later run's log lines then printed "--- Logging
# error ---" and a traceback (a selection that started with tests/test_feature_columns.py
# failed test_neo4j_live's check that a flow run prints no traceback).
import prefect.main  # noqa: E402, F401


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def store_path(tmp_path):
    return str(tmp_path / "store")


@pytest.fixture
def embedded_store(store_path):
    from graphstore import open_store

    with open_store(store_path, create=True) as store:
        yield store


@pytest.fixture(scope="session")
def digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X, y


@pytest.fixture
def executors(monkeypatch):
    """The worker counts of the executors ``in_order`` asked for (the real loky executor)."""
    from joblib.externals import loky

    asked: list[int] = []
    real = loky.get_reusable_executor

    def spy(max_workers=None, **kwargs):
        asked.append(max_workers)
        return real(max_workers=max_workers, **kwargs)

    monkeypatch.setattr(loky, "get_reusable_executor", spy)
    return asked


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def flipped_digits(digits):
    """Digits on a 10-NN graph with 10 given labels per class, 10% of them flipped (seed 3):
    the problem, the true classes and the mask of the given labels."""
    from labelling.sampling import flip_labels, keep_per_class
    from similarity import knn_graph
    from solvers import LabelProblem

    X, y_true = digits
    rng = np.random.default_rng(3)
    given = keep_per_class(y_true, 10, rng)
    noisy, _ = flip_labels(y_true, given, 0.1, 10, rng)
    return LabelProblem(knn_graph(X, k=10), np.where(given, noisy, -1)), y_true, given


# -- the live Neo4j + GDS server (tests/live_neo4j.py) -------------------------------------

NEO4J_SUITE = "neo4j"


BROWSER_SUITE = "browser"


def _without_browser(config, items) -> None:
    """The Prefect UI tests need Debian's Chromium (``make test`` installs it as root):
    without it they are deselected and the run says so in one line; in CI, a failure."""
    from live_neo4j import in_ci
    from test_prefect_ui import chromium

    browser = [item for item in items if item.get_closest_marker(BROWSER_SUITE)]
    if not browser or chromium():
        return
    line = (f"Prefect UI browser tests NOT RUN ({len(browser)} tests): no chromium on PATH (Debian's chromium:"
            " make test installs it when run as root)")
    if in_ci():
        pytest.exit(f"{line} (CI=true: they must run)", returncode=1)
    config.stash[_NOT_RUN] = [*config.stash.get(_NOT_RUN, []), line]
    config.hook.pytest_deselected(items=browser)
    items[:] = [item for item in items if not item.get_closest_marker(BROWSER_SUITE)]


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: start the server only when needed
def pytest_collection_modifyitems(session, config, items):
    from live_neo4j import LiveNeo4j, in_ci, server_module

    _without_browser(config, items)
    live = [item for item in items if item.get_closest_marker(NEO4J_SUITE)]
    config.stash[_LIVE] = None
    if not live:
        return
    if os.environ.get("NEO4J_URI"):
        config.stash[_LIVE] = LiveNeo4j.external()
        return
    module = server_module()
    # SIGTERM (a CI job cancelled or timed out, a kill) ends the run as Ctrl-C does: pytest then
    # runs pytest_unconfigure, which stops this run's server and removes its home. By default
    # SIGTERM ended the interpreter at once and left the Java process and its 500 MB home behind
    # (the server runs in a session of its own, so that the shell's signals do not reach it).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        started = time.monotonic()
        server = LiveNeo4j.start()
    except module.CannotStart as why:
        line = f"Neo4j live suite NOT RUN ({len(live)} tests): {why}"
        if in_ci():
            pytest.exit(f"{line} (CI=true: the live suite must run)", returncode=1)
        config.stash[_NOT_RUN] = [*config.stash.get(_NOT_RUN, []), line]
        config.hook.pytest_deselected(items=live)
        items[:] = [item for item in items if not item.get_closest_marker(NEO4J_SUITE)]
        return
    config.stash[_STARTED] = time.monotonic() - started
    config.stash[_LIVE] = server


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for line in config.stash.get(_NOT_RUN, []):
        terminalreporter.write_line(line, yellow=True, bold=True)
    server = config.stash.get(_LIVE, None)
    if server is None:
        return
    counts = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        counts[outcome] = sum(1 for report in terminalreporter.stats.get(outcome, [])
                              if NEO4J_SUITE in getattr(report, "keywords", {}) and report.when in ("call", "setup"))
    where = f"{server.version} at {server.uri}"
    if server.controllable:
        where += f" (started by this run in {config.stash.get(_STARTED, 0):.0f} s)"
    terminalreporter.write_line(
        f"Neo4j live suite: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors,"
        f" {counts['skipped']} skipped, against {where}", green=not (counts["failed"] or counts["error"]),
        bold=True)


def pytest_unconfigure(config):
    server = config.stash.get(_LIVE, None)
    if server is not None:
        server.stop()


_LIVE = pytest.StashKey()
_NOT_RUN = pytest.StashKey()
_STARTED = pytest.StashKey()


@pytest.fixture(scope="session")
def neo4j_live(request):
    """The session's live Neo4j + GDS server (tests marked ``neo4j`` only)."""
    server = request.config.stash.get(_LIVE, None)
    assert server is not None, "the neo4j fixture is for tests marked neo4j"
    return server


@pytest.fixture
def dataset(neo4j_env):
    """A dataset name of its own on the live server (tests marked ``neo4j``), deleted after
    the test with everything of it (``test_neo4j_live.delete_dataset``)."""
    import uuid

    from test_neo4j_live import delete_dataset

    from graphstore import open_store

    name = f"it-{uuid.uuid4().hex[:10]}"
    yield name
    with open_store(neo4j_env) as store:
        delete_dataset(store._driver, name, store.database)


@pytest.fixture
def neo4j_env(neo4j_live, monkeypatch):
    """The environment a user sets for the CLI and the flows: credentials, no leftover
    GRAPHLABEL_NEO4J_* settings; returns the store URI."""
    for name in list(os.environ):
        if name.startswith("GRAPHLABEL_NEO4J_") or name in ("NEO4J_DATABASE", "GRAPHLABEL_STORE"):
            monkeypatch.delenv(name)
    for name, value in neo4j_live.environment().items():
        monkeypatch.setenv(name, value)
    return neo4j_live.uri
