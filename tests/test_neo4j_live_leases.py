"""Runs of one dataset that meet on a live Neo4j 5.26 + GDS 2.13 (graphstore/neo4j_lease.py):
one run at a time changes a dataset's graph, the next waits and says for whom, a run that
waits too long ends with one line, and a holder that is gone lets go.

Before the lease, two `build-graph` runs of one dataset started a few seconds apart left
both graphs in the store, recorded as one of them."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_neo4j_live_product import GRAPHLABEL, cli, digits_frame

pytestmark = [pytest.mark.neo4j, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def digits(neo4j_env, dataset, tmp_path):
    frame, _, _ = digits_frame(1797, every=10)
    csv = tmp_path / "digits.csv"
    frame.to_csv(csv, index=False)
    cli("ingest", csv, "--dataset", dataset, "--key", "id", "--features", "p*", "--label", "label",
        "--store", neo4j_env)
    return dataset


def lease_of(store, dataset: str) -> dict | None:
    rows = store.query("MATCH (l:GraphlabelLease {dataset: $ds}) RETURN l.holder AS holder, l.pid AS pid",
                       {"ds": dataset})
    return rows.iloc[0].to_dict() if len(rows) else None


def test_two_builds_at_once_leave_one_graph(neo4j_env, digits, tmp_path):
    """A build started while another builds waits for it, then replaces its graph: every
    node ends with the second build's 10 relationships, no pair has two, and the record is
    the second build's. (Before: 5 + 10 per node, the pairs both found twice, recorded 5-NN.)
    The first build's process is stopped (SIGSTOP) once its build has begun and let go on
    when the second says that it waits, so that the two meet on any machine."""
    from prefect.settings import PREFECT_API_URL

    from graphstore import open_store

    env = {**os.environ, "COLUMNS": "200", "PREFECT_API_URL": PREFECT_API_URL.value()}

    def build(k: int, log: Path) -> subprocess.Popen:
        with log.open("w") as out:
            return subprocess.Popen([str(GRAPHLABEL), "build-graph", "--dataset", digits, "--k", str(k), "--scale",
                                     "none", "--store", neo4j_env], env=env, stdout=out, stderr=subprocess.STDOUT)

    first = build(5, tmp_path / "first.log")
    with open_store(neo4j_env) as store:
        deadline = time.monotonic() + 120
        while not (store.read_graph_build(digits) or {}).get("unfinished"):  # the first is building
            assert first.poll() is None, (tmp_path / "first.log").read_text()
            assert time.monotonic() < deadline
            time.sleep(0.02)
    os.kill(first.pid, signal.SIGSTOP)
    try:
        second = build(10, tmp_path / "second.log")
        deadline = time.monotonic() + 120
        while "is in use by" not in (tmp_path / "second.log").read_text():
            assert second.poll() is None, (tmp_path / "second.log").read_text()  # it did not wait
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert first.wait(300) == 0, (tmp_path / "first.log").read_text()
    assert second.wait(300) == 0, (tmp_path / "second.log").read_text()
    with open_store(neo4j_env) as store:
        per_pair = store.query("MATCH (a:Entity {dataset: $ds})-[r:SIMILAR]->(b) WITH a, b, count(r) AS n"
                               " RETURN max(n) AS most", {"ds": digits})
        degrees = store.query("MATCH (a:Entity {dataset: $ds}) OPTIONAL MATCH (a)-[r:SIMILAR]->()"
                              " WITH a, count(r) AS out RETURN min(out) AS least, max(out) AS most", {"ds": digits})
        build_record = store.read_graph_build(digits)
        assert lease_of(store, digits) is None  # both let go
    assert per_pair["most"].tolist() == [1]
    assert degrees[["least", "most"]].values.tolist() == [[10, 10]]
    assert build_record["k"] == 10
    assert "unfinished" not in build_record
    said = " ".join((tmp_path / "second.log").read_text().split())
    assert f"the graph of dataset '{digits}' is in use by build-graph (pid {first.pid} on" in said, said
    assert "(one run at a time changes a dataset's graph): waiting up to 60 s (GRAPHLABEL_LOCK_TIMEOUT)" in said


def test_a_run_that_waits_too_long_ends_with_one_line(neo4j_env, digits, monkeypatch):
    """A label run (or drop-dataset) that finds the dataset held for longer than
    GRAPHLABEL_LOCK_TIMEOUT ends with one line naming the holder, exit 1, and changes
    nothing; once the holder lets go the same command runs."""
    from graphstore import open_store

    monkeypatch.setenv("GRAPHLABEL_LOCK_TIMEOUT", "2")
    with open_store(neo4j_env) as store:
        with store.dataset_lease(digits, "a person's maintenance script"):
            assert lease_of(store, digits) == {"holder": "a person's maintenance script", "pid": os.getpid()}
            started = time.monotonic()
            refused = cli("label", "--dataset", digits, "--store", neo4j_env, ok=False).output
            waited = time.monotonic() - started
            labelled = store.query("MATCH (e:Entity {dataset: $ds}) WHERE e.predicted_label IS NOT NULL"
                                   " RETURN count(e) AS n", {"ds": digits})
            not_dropped = cli("drop-dataset", digits, "--yes", "--store", neo4j_env, ok=False).output
            assert store.count_nodes(digits) == 1797
        assert lease_of(store, digits) is None
    assert refused.startswith(f"error: the graph of dataset '{digits}' is still in use by a person's maintenance"
                              f" script (pid {os.getpid()} on "), refused
    assert refused.endswith("after 2 s: let that finish, or wait longer with GRAPHLABEL_LOCK_TIMEOUT=SECONDS"), refused
    assert waited >= 2
    assert not_dropped.startswith(f"error: the graph of dataset '{digits}' is still in use by a person's"), not_dropped
    assert labelled["n"].tolist() == [0]
    cli("label", "--dataset", digits, "--store", neo4j_env)
    with open_store(neo4j_env) as store:  # the refused run took nothing: no run of it in the store
        assert store.read_runs(dataset=digits)["status"].tolist() == ["completed"]


def test_a_lease_whose_holder_is_gone_or_ran_out_is_taken(neo4j_env, dataset, monkeypatch):
    """A lease held by a process of this host that is gone (kill -9) is taken at once; one of
    another host is taken once its time has run out (the server's clock), and until then a
    run waits for it."""
    import socket

    from graphstore import StoreLocked, open_store

    monkeypatch.setenv("GRAPHLABEL_LOCK_TIMEOUT", "1")
    dead = subprocess.Popen(["sleep", "0"])
    dead.wait()
    leases = {
        "gone": (socket.gethostname(), dead.pid, "PT10M"),  # expires in 10 minutes, but its process is gone
        "elsewhere, out of time": ("another-host", 4242, "-PT1S"),
        "elsewhere, in time": ("another-host", 4242, "PT10M"),
    }
    with open_store(neo4j_env) as store:
        for holder, (host, pid, expires) in leases.items():
            store.query("MERGE (l:GraphlabelLease {dataset: $ds}) SET l.owner = $holder, l.holder = $holder,"
                        " l.host = $host, l.pid = $pid, l.process_started = 0.0, l.since = datetime(),"
                        " l.expires_at = datetime() + duration($expires)",
                        {"ds": dataset, "holder": holder, "host": host, "pid": pid, "expires": expires}, write=True)
            if holder == "elsewhere, in time":
                with pytest.raises(StoreLocked, match=r"is still in use by elsewhere, in time \(pid 4242 on"
                                                      r" another-host, since .* UTC\) after 1 s"):
                    with store.dataset_lease(dataset, "a test"):
                        pass
                assert lease_of(store, dataset) == {"holder": "elsewhere, in time", "pid": 4242}
            else:
                with store.dataset_lease(dataset, "a test"):
                    assert lease_of(store, dataset) == {"holder": "a test", "pid": os.getpid()}
                assert lease_of(store, dataset) is None


def test_a_holder_renews_its_lease(neo4j_env, dataset, monkeypatch):
    """A lease held past its time stays held while its holder renews it (here 4 s leases
    renewed every 0.5 s, held for 6 s): another run still finds it in use. (2 s leases left
    a renewal delayed by a loaded machine 1.5 s to lose the lease.)"""
    from graphstore import StoreLocked, neo4j_lease, open_store

    monkeypatch.setattr(neo4j_lease, "LEASE_SECONDS", 4)
    monkeypatch.setattr(neo4j_lease, "RENEW_SECONDS", 0.5)
    monkeypatch.setenv("GRAPHLABEL_LOCK_TIMEOUT", "0")
    with open_store(neo4j_env) as store, open_store(neo4j_env) as other:
        with store.dataset_lease(dataset, "a long run"):
            time.sleep(6)  # past the first lease's end: held only if renewed
            with pytest.raises(StoreLocked, match="is still in use by a long run"):
                with other.dataset_lease(dataset, "a test"):
                    pass
        with other.dataset_lease(dataset, "a test"):  # let go: taken at once
            assert lease_of(other, dataset)["holder"] == "a test"


def test_a_running_label_run_of_another_host_without_its_lease_is_interrupted(neo4j_env, dataset):
    """A label run on another host that died (its LabelRun says running, its process
    cannot be checked from here) is marked interrupted as soon as it no longer holds its
    dataset's lease, instead of after GRAPHLABEL_RUN_STALE_HOURS (6 h): while the lease is
    held in its name it stays running, and `graphlabel report` shows it failed once the
    lease is gone."""
    import uuid

    import pandas as pd

    from graphstore import LabelRunRecord, open_store
    from labelling.liveness import label_run_holder, mark_interrupted_runs

    now = pd.Timestamp.now(tz="UTC")
    run = LabelRunRecord(str(uuid.uuid4()), dataset, "harmonic", {}, {}, {}, now, None, 0, 0, 0, status="running",
                         process={"host": "another-host", "pid": 4242, "started": 0.0}, heartbeat_at=now)
    with open_store(neo4j_env) as store:
        store.write_run(run)
        with store.dataset_lease(dataset, label_run_holder(run.run_id)):
            assert store.lease_holder(dataset) == label_run_holder(run.run_id)
            assert mark_interrupted_runs(store, dataset) == []  # it holds its dataset: it may be running
        assert store.lease_holder(dataset) is None
    shown = cli("report", "--dataset", dataset, "--store", neo4j_env)
    assert " failed " in shown.output
    assert "it no longer holds the lease of its dataset" in " ".join(shown.output.split())
    with open_store(neo4j_env) as store:
        row = store.read_runs(dataset=dataset, run_id=run.run_id).iloc[0]
    assert row["status"] == "failed"
    assert row["error"].startswith("interrupted: it no longer holds the lease of its dataset")
    assert "(pid 4242 on another-host)" in row["error"]
