"""The production path, with nothing mocked: ``graphlabel serve`` on a real Prefect server
(its scheduler on), two scheduled jobs of one dataset in a live Neo4j 5.26 + GDS 2.13, and
the Neo4j password in a Prefect ``Secret`` block on that server, not in the environment.

What it guards: that a run the scheduler starts finds its credentials through the block,
builds the graph with GDS and writes predictions back; that the first runs of two jobs,
due together on a dataset without a graph, build it once (the dataset's lease,
``graphstore.neo4j_lease``, in the served runs' processes); and that the password shows
nowhere the server keeps (deployments, flow runs, logs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from prefect_server import PrefectServer, stop

from graphstore.secrets import PASSWORD_BLOCK_ENV, PASSWORD_ENV

pytestmark = pytest.mark.neo4j
GRAPHLABEL = Path(sys.executable).with_name("graphlabel")
SERVE_SECONDS = 300
BLOCK = "graphlabel-neo4j-live"
K = 6


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    with PrefectServer(tmp_path_factory.mktemp("prefect-server")) as server:
        yield server


def served_env(server: PrefectServer, neo4j_live, **extra: str) -> dict[str, str]:
    """A scheduled worker's environment: the Prefect server, the Neo4j user, the block's
    name, and no password."""
    env = server.env(NEO4J_USER=neo4j_live.user, **{PASSWORD_BLOCK_ENV: BLOCK}, **extra)
    env.pop(PASSWORD_ENV, None)
    return env


def save_password_block(server: PrefectServer, password: str) -> None:
    # the password goes through the environment of the process that saves it: a command
    # line is visible to every user of the machine
    save = ("import os; from prefect.blocks.system import Secret; "
            f"Secret(value=os.environ['BLOCK_VALUE']).save({BLOCK!r}, overwrite=True)")
    done = subprocess.run([sys.executable, "-c", save], env=server.env(BLOCK_VALUE=password),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def ingest_digits(tmp_path: Path, env: dict[str, str], store: str, dataset: str) -> None:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    frame = pd.DataFrame(X, columns=[f"p{i:02d}" for i in range(64)])
    frame.insert(0, "id", [f"d{i}" for i in range(len(frame))])
    frame["digit"] = [str(v) if i % 6 == 0 else "" for i, v in enumerate(y)]
    frame.to_csv(tmp_path / "digits.csv", index=False)
    done = subprocess.run([str(GRAPHLABEL), "ingest", str(tmp_path / "digits.csv"), "--dataset", dataset,
                           "--key", "id", "--features", "p*", "--label", "digit", "--store", store, "-q"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_scheduled_jobs_on_neo4j_with_the_password_in_a_secret_block(prefect_server, neo4j_live, dataset,
                                                                     tmp_path):
    save_password_block(prefect_server, neo4j_live.password)
    env = served_env(prefect_server, neo4j_live, PREFECT_RUNNER_POLL_FREQUENCY="2")
    ingest_digits(tmp_path, env, neo4j_live.uri, dataset)  # the CLI reads the block too

    jobs = {"digits-harmonic": "harmonic", "digits-nmf": "nmf"}
    config = tmp_path / "schedule.toml"
    config.write_text(f'store = "{neo4j_live.uri}"\n' + "".join(
        f'\n[[jobs]]\nname = "{name}"\ndataset = "{dataset}"\ninterval = 20\nsolver = "{solver}"\n'
        f'k = {K}\nscale = "none"\n' for name, solver in jobs.items()))
    # the check opens the store as a run does (the password through the block), and finds
    # each job's dataset and labels there; a job of a dataset the server does not hold fails it
    checked = subprocess.run([str(GRAPHLABEL), "serve", "--config", str(config), "--check"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "cannot run" not in checked.stderr
    typo = tmp_path / "typo.toml"
    typo.write_text(config.read_text() + f'\n[[jobs]]\nname = "typo"\ndataset = "{dataset}x"\ninterval = 20\n')
    checked = subprocess.run([str(GRAPHLABEL), "serve", "--config", str(typo), "--check"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stderr.splitlines()[-1].startswith(
        f"error: job 'typo' cannot run now: no dataset '{dataset}x' in the store (no node belongs to it); its"
        " datasets: "), checked.stderr
    assert f"'{dataset}'" in checked.stderr.splitlines()[-1] or " more" in checked.stderr.splitlines()[-1]
    assert "digits-harmonic' cannot" not in checked.stderr
    log_path = tmp_path / "serve.log"
    log = log_path.open("wb")
    serve = subprocess.Popen([str(GRAPHLABEL), "serve", "--config", str(config)], cwd=tmp_path, env=env,
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    completed: dict[str, list[dict]] = {}
    try:
        deadline = time.monotonic() + SERVE_SECONDS
        while time.monotonic() < deadline:
            time.sleep(2)
            assert serve.poll() is None, log_path.read_text()
            for name in jobs:
                runs = prefect_server.deployment_runs(name)
                failed = [r for r in runs if r["state_type"] in ("FAILED", "CRASHED")]
                assert not failed, (name, failed[0]["state"], log_path.read_text()[-4000:])
                completed[name] = [r for r in runs if r["auto_scheduled"] and r["state_type"] == "COMPLETED"]
            if all(completed.values()):
                break
    finally:
        stop(serve)
        log.close()
    served = log_path.read_text(errors="replace")
    assert all(completed.values()), (
        f"no scheduled run completed in {SERVE_SECONDS} s: "
        f"{ {name: [(r['name'], r['state_type']) for r in prefect_server.deployment_runs(name)] for name in jobs} }\n"
        f"serve log:\n{served[-4000:]}")

    driver = neo4j_live.driver()
    try:
        def rows(query: str) -> list[dict]:
            return [dict(r) for r in driver.execute_query(query, parameters_={"dataset": dataset}).records]

        # the graph was built once, by GDS, though both jobs' first runs found none
        builds = rows("MATCH (g:GraphBuild {dataset: $dataset}) RETURN g.spec AS spec")
        assert [json.loads(b["spec"])["k"] for b in builds] == [K], builds
        degrees = rows("MATCH (e:Entity {dataset: $dataset}) "
                       "RETURN count { (e)-[:SIMILAR]->() } AS out, count(*) AS nodes")
        assert {d["out"] for d in degrees} == {K}, degrees
        twice = rows("MATCH (a:Entity {dataset: $dataset})-[r:SIMILAR]->(b) "
                     "WITH a, b, count(r) AS n WHERE n > 1 RETURN count(*) AS pairs")
        assert twice == [{"pairs": 0}]
        # every node carries a prediction of a completed scheduled run, and its solver
        scheduled = {r["id"]: name for name in jobs for r in completed[name]}
        written = rows("MATCH (e:Entity {dataset: $dataset}) "
                       "RETURN e.predicted_label AS label, e.label_run_id AS run, e.label_solver AS solver")
        assert len(written) == 600
        assert all(w["label"] is not None for w in written)
        runs = rows("MATCH (r:LabelRun {dataset: $dataset}) RETURN r.run_id AS run, r.status AS status")
        statuses = {r["run"]: r["status"] for r in runs}
        assert set(scheduled) <= set(statuses)
        assert {statuses[run] for run in scheduled} == {"completed"}
        assert {w["run"] for w in written} <= set(statuses)
        assert {w["solver"] for w in written} <= set(jobs.values())
        # no run holds the dataset any more
        assert rows("MATCH (l:GraphlabelLease {dataset: $dataset}) RETURN l.holder AS holder") == []
    finally:
        driver.close()

    # the password is nowhere the Prefect server keeps, nor in what serve printed
    ids = [run["id"] for name in jobs for run in prefect_server.deployment_runs(name)]
    kept = json.dumps([
        prefect_server.post("/deployments/filter", {}),
        prefect_server.post("/flow_runs/filter", {"flow_runs": {"id": {"any_": ids}}}),
        prefect_server.post("/logs/filter", {"logs": {"flow_run_id": {"any_": ids}}, "limit": 200}),
    ])
    assert neo4j_live.password not in kept
    assert neo4j_live.password not in served
    assert "Traceback" not in served, served[-4000:]
