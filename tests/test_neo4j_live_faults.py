"""Faults on a live Neo4j, through the `graphlabel` command as a user meets them: the server
killed during write back and restarted, a wrong password, a server without GDS, a server
that is gone, hostile names. The tests that kill or stop a server start servers of their
own (tests/live_neo4j.py), so the session's server is never disturbed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from live_neo4j import LiveNeo4j, server_module
from test_neo4j_live_product import GRAPHLABEL, cli, digits_frame, run_id_of

pytestmark = [pytest.mark.neo4j, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def own_server(monkeypatch):
    """A server of this test's own, which it may kill; the environment points at it."""
    server = LiveNeo4j.start()
    for name, value in server.environment().items():
        monkeypatch.setenv(name, value)
    yield server
    server.stop()


def ingest_digits(uri: str, dataset: str, tmp_path, n: int = 1797, **frame_options) -> tuple[pd.DataFrame, np.ndarray]:
    frame, X, y = digits_frame(n, **frame_options)
    csv = tmp_path / f"{dataset}.csv"
    frame.to_csv(csv, index=False)
    cli("ingest", csv, "--dataset", dataset, "--key", "id", "--features", "p*", "--label", "label", "--store", uri)
    return frame, y


def test_a_server_killed_during_write_back_never_leaves_a_completed_run(own_server, tmp_path, monkeypatch):
    """kill -9 of the Java process while the predictions are being written, then a restart:
    the run is not `completed`, and running the command again ends with the labels of one
    clean run on every node."""
    import solvers
    from graphstore import open_store
    from labelling.problems import label_problem

    uri, dataset, n = own_server.uri, "killed", 600
    ingest_digits(uri, dataset, tmp_path, n=n)
    cli("build-graph", "--dataset", dataset, "--k", "8", "--store", uri)
    monkeypatch.setenv("GRAPHLABEL_NEO4J_BATCH_SIZE", "4")  # 150 write-back transactions
    from prefect.settings import PREFECT_API_URL


    run = subprocess.Popen([str(GRAPHLABEL), "label", "--dataset", dataset, "--full", "--store", uri],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "COLUMNS": "200", "PREFECT_API_URL": PREFECT_API_URL.value()})
    written = 0
    with own_server.driver() as driver:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and run.poll() is None:
            written = driver.execute_query(
                "MATCH (e:Entity {dataset: $ds}) WHERE e.label_run_id IS NOT NULL RETURN count(e) AS n",
                parameters_={"ds": dataset}).records[0]["n"]
            if written:
                # the command waits while the server is killed: on a loaded machine it could
                # write its last batches between this count and the kill
                os.kill(run.pid, signal.SIGSTOP)
                break
            time.sleep(0.02)
    try:
        assert 0 < written < n, f"write back not caught mid-way ({written} nodes written)"
        own_server.kill()
        killed = time.monotonic()
    finally:
        os.kill(run.pid, signal.SIGCONT)
    output, _ = run.communicate(timeout=300)
    # bounded waits: 37 s measured (5 s of driver retries per attempt, 4 task attempts);
    # with the driver's default 30 s it was 128 s (the bound leaves room for a loaded machine)
    assert time.monotonic() - killed < 110, f"the command took {time.monotonic() - killed:.0f} s to give up"
    assert run.returncode == 1, output
    tail = " ".join(output[output.rindex("\nerror: ") + 1:].split())
    assert tail.startswith("error: the store stopped answering")
    assert "Traceback" not in tail

    own_server.restart()
    with open_store(uri) as store:
        runs = store.read_runs(dataset)
        assert len(runs) == 1
        assert runs.iloc[0]["status"] != "completed"
        half = store.query("MATCH (e:Entity {dataset: $ds}) WHERE e.label_run_id IS NOT NULL RETURN count(e) AS n",
                           {"ds": dataset})["n"].item()
        assert 0 < half < n  # the write back really stopped half way
    monkeypatch.delenv("GRAPHLABEL_NEO4J_BATCH_SIZE")
    again = cli("label", "--dataset", dataset, "--full", "--store", uri).output
    run_id = run_id_of(again)
    with open_store(uri) as store:
        exported = label_problem(store.read_subgraph(dataset), dataset)
        clean = dict(zip(exported.keys, exported.classes[solvers.solve(exported.problem, "harmonic").labels]))
        now = store.query("MATCH (e:Entity {dataset: $ds}) RETURN e.key AS key, e.predicted_label AS p,"
                          " e.label_run_id AS run", {"ds": dataset})
        assert set(now["run"]) == {run_id}
        assert dict(zip(now["key"], now["p"])) == clean
        assert store.read_runs(run_id=run_id).iloc[0]["status"] == "completed"


def test_a_wrong_password_is_one_clear_line_and_never_shown(neo4j_env, monkeypatch, tmp_path):
    from prefect.client.orchestration import get_client

    password = os.environ["NEO4J_PASSWORD"]
    monkeypatch.delenv("NEO4J_PASSWORD")  # a newcomer's first try: the driver said "missing key `scheme`"
    out = cli("query", "RETURN 1", "--store", neo4j_env, ok=False).output
    assert "no password was given: set NEO4J_PASSWORD" in out, out
    assert out.index("no password was given") < out.index("(the server said AuthError"), out  # what to do first
    secret = f"not-the-password-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("NEO4J_PASSWORD", secret)
    for command in (["report", "--dataset", "x"], ["query", "RETURN 1"], ["label", "--dataset", "x"],
                    ["build-graph", "--dataset", "x"]):
        out = cli(*command, "--store", neo4j_env, ok=False).output
        # after three failures in a row the server answers AuthenticationRateLimit instead
        assert out.startswith("error: could not open the Neo4j store at"), out
        assert "AuthError" in out or "AuthenticationRateLimit" in out, out
        if "AuthError" in out:
            assert "the server refused user 'neo4j' with the password given: check NEO4J_USER" in out, out
        assert "general processing exception" not in out, out  # the GQL fields every error shares
        assert "Traceback" not in out
        assert secret not in out
    # nor in what Prefect keeps of the runs: parameters, states, logs

    async def everything() -> str:
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags, LogFilter, LogFilterFlowRunId

        async with get_client() as client:  # the runs of dataset "x" (a session's server holds many more)
            runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=["x"])))
            logs = await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id for run in runs])))
        assert runs, "the failed label and build-graph runs of dataset x are on the Prefect server"
        return " ".join([str(run.parameters) + str(run.state) for run in runs] + [log.message for log in logs])

    import asyncio

    assert secret not in asyncio.run(everything())
    # The failures locked the user (Neo4j: 3 failed logins in a row, then AuthenticationRateLimit
    # for 5 s): the next test of the session's server started inside the lock in a fresh clone's
    # run and could not log in. Wait here until the right password is accepted again.
    monkeypatch.setenv("NEO4J_PASSWORD", password)
    _wait_for_logins(neo4j_env)


def _wait_for_logins(uri: str, timeout: float = 60.0) -> None:
    from graphstore import open_store
    from graphstore.errors import StoreConnectionError

    deadline = time.monotonic() + timeout
    while True:
        try:
            with open_store(uri):
                return
        except StoreConnectionError:  # AuthenticationRateLimit while the user is locked
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def test_a_statement_the_server_refuses_is_one_line_with_its_message(neo4j_env):
    """It was a 70-line traceback of the driver's ClientError."""
    out = cli("query", "RETURN 1 / 0", "--store", neo4j_env, ok=False).output
    assert out.strip().endswith("error: query failed: / by zero (Neo.ClientError.Statement.ArithmeticError)"), out
    out = cli("query", "MATCH (e:Entity RETURN e", "--store", neo4j_env, ok=False).output
    assert "error: query failed: Invalid input 'RETURN'" in out, out
    assert out.strip().endswith("(Neo.ClientError.Statement.SyntaxError)"), out


def test_a_server_without_gds_is_named_before_anything_is_written(monkeypatch, tmp_path):
    server = LiveNeo4j.start(gds=False)
    try:
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        uri = server.uri
        ingest_digits(uri, "nogds", tmp_path, n=300)
        for command in (["build-graph", "--dataset", "nogds"], ["label", "--dataset", "nogds", "--rebuild-graph"]):
            out = cli(*command, "--store", uri, ok=False).output
            assert "the Graph Data Science (GDS) plugin is not installed" in out
            assert "GRAPHLABEL_NEO4J_EDGE_BUILDER=local" in out
        with server.driver() as driver:
            counts = driver.execute_query(
                "MATCH (n) RETURN count(n) AS nodes, sum(CASE WHEN n:Entity THEN 0 ELSE 1 END) AS others,"
                " COUNT { (c:FeatureColumns) } AS columns, COUNT { ()-[]->() } AS relationships").records[0].data()
        # no run, build or edge: the nodes and the ingest's record of their columns only
        assert counts == {"nodes": 301, "others": 1, "columns": 1, "relationships": 0}
        # the local builder needs no GDS: the whole path runs
        monkeypatch.setenv("GRAPHLABEL_NEO4J_EDGE_BUILDER", "local")
        cli("build-graph", "--dataset", "nogds", "--k", "6", "--store", uri)
        assert "labelled 300 nodes" in cli("label", "--dataset", "nogds", "--store", uri).output

        # a server that is gone: one line, soon
        server.stop()
        for command, bound in ((["report", "--dataset", "nogds"], 30), (["label", "--dataset", "nogds"], 90)):
            started = time.monotonic()
            out = cli(*command, "--store", uri, ok=False).output
            assert time.monotonic() - started < bound, (command, time.monotonic() - started)
            assert out.startswith("error: could not open the Neo4j store at")
            assert "ServiceUnavailable" in out
    finally:
        server.stop()


HOSTILE = ["Entity`) DETACH DELETE e //", "Entity` {x: 1}", "a b"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_identifiers_are_refused_before_any_query(neo4j_env, neo4j_live, monkeypatch, name):
    with neo4j_live.driver() as driver:
        before = driver.execute_query("MATCH (n) RETURN count(n) AS n").records[0]["n"]
        for variable in ("GRAPHLABEL_NEO4J_NODE_LABEL", "GRAPHLABEL_NEO4J_RELATIONSHIP", "GRAPHLABEL_NEO4J_KEY"):
            monkeypatch.setenv(variable, name)
            out = cli("report", "--dataset", "x", "--store", neo4j_env, ok=False).output
            assert variable in out
            assert "invalid" in out
            monkeypatch.delenv(variable)
        out = cli("label", "--dataset", "x' OR 1=1", "--store", neo4j_env, ok=False).output
        assert "invalid dataset name" in out
        assert driver.execute_query("MATCH (n) RETURN count(n) AS n").records[0]["n"] == before


PROBE = '''
import os, time
from pathlib import Path

import pytest


@pytest.mark.neo4j
def test_wait(neo4j_live):
    Path(os.environ["PROBE_HOME"]).write_text(str(neo4j_live.settings.home))
    time.sleep(600)
'''


def test_a_terminated_test_run_stops_its_server_and_removes_its_home(tmp_path):
    """SIGTERM to `make test`'s pytest (a CI job cancelled, a kill) stops the server the run
    started and removes its home, as Ctrl-C does: a pytest with this suite's conftest as a
    plugin starts its own server, and is terminated while a test waits on it."""
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    neo4j: live server\n")
    probe_home = tmp_path / "home.txt"
    env = {name: value for name, value in os.environ.items() if name != "NEO4J_URI"}  # a server of its own
    env.update(PROBE_HOME=str(probe_home),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "conftest", "-q", str(tmp_path / "test_probe.py")],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while not probe_home.exists() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert probe_home.exists(), run.communicate(timeout=60)[0][-2000:]
    home = Path(probe_home.read_text())
    module = server_module()
    pid = module.running_pid(home)
    try:
        assert pid is not None
        run.terminate()
        output = run.communicate(timeout=120)[0]
        assert run.returncode != 0
        assert "KeyboardInterrupt" in output
        assert not home.exists(), output[-2000:]
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:  # when the run left them behind (the failure this test is for), they go here
        if home.exists():
            module.stop(home, timeout=30)
            shutil.rmtree(home, ignore_errors=True)
