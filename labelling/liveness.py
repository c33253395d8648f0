"""Runs that will never finish: a labelling run whose process was killed (``kill -9``, an
out-of-memory kill, a machine that went down) stays ``running`` in the store, where
``report`` would list it as running and retention would keep it for ever.

The rule
--------
A ``running`` run is *interrupted* when

1. it ran on this host (``process.host``) and its process is gone: no process has its
   ``pid``, or the process with that pid started at another time (the pid was reused), or
   it is a zombie. This is exact and immediate, and it is the embedded store's case
   (one process at a time opens a Kùzu store, on this machine); or
2. on a store with leases (Neo4j), it does not hold its dataset's lease: a label run
   takes the lease (``graphstore.neo4j_lease``, holder ``label_run_holder(run_id)``)
   before it records itself as running and lets go after its last write, and renews it
   every 15 s, so a running run without it is dead, or was silent for longer than the
   lease's 60 s (a suspended process, which has lost the dataset to other runs anyway).
   This covers runs of other hosts against a shared Neo4j within a minute; before it, such
   a run stayed ``running`` for the 6 hours of rule 3, and a job served on another host
   waited as long (``graphlabel.serving``); or
3. its last sign of life (``heartbeat_at``: the run writes one when it starts and after
   each stage; ``started_at`` for runs written before heartbeats) is older than
   ``GRAPHLABEL_RUN_STALE_HOURS`` (default 6): for stores without leases, where no
   process of another host can be checked, a run silent for longer than any stage takes
   (the longest measured, the 1M-node kNN search, takes about 2 minutes; exact noise
   flags on 100k nodes 6.5 minutes) is taken for dead.

An interrupted run is marked ``failed`` with an ``error`` starting "interrupted:", and
its ``finished_at`` is its last sign of life. The mark is conditional (``interrupt_run``):
a run that wrote a new heartbeat, or finished, between the check and the mark is left
alone. The next labelling run of the dataset marks them before it starts, and so do
``report`` and ``prune-runs``.
"""

from __future__ import annotations

import os
import socket
from typing import Any

import pandas as pd

from graphstore import GraphStore
from graphstore.neo4j_lease import LEASE_SECONDS, RENEW_SECONDS
from graphstore.processes import gone_from_this_host
from graphstore.runs import run_record

#: How the error of a run marked here begins.
INTERRUPTED_PREFIX = "interrupted:"
STALE_HOURS_ENV = "GRAPHLABEL_RUN_STALE_HOURS"
DEFAULT_STALE_HOURS = 6.0
#: At most this many running runs are checked at once (more would be a store of runaway
#: schedules: the rest are checked by the next run).
MAX_RUNNING_CHECKED = 10_000


def stale_after(environ=None) -> pd.Timedelta:
    """Silence after which a run of another host counts as interrupted."""
    raw = (os.environ if environ is None else environ).get(STALE_HOURS_ENV, "").strip()
    try:
        hours = float(raw) if raw else DEFAULT_STALE_HOURS
    except ValueError:
        hours = -1.0
    if not hours > 0:
        raise ValueError(f"{STALE_HOURS_ENV} must be a positive number of hours, got {raw!r}")
    return pd.Timedelta(hours=hours)


def label_run_holder(run_id: str) -> str:
    """The holder a label run names when it takes its dataset's lease (rule 2)."""
    return f"label run {run_id}"


#: ``why_interrupted``'s ``lease_holder`` for a store without leases.
NO_LEASES = object()


def why_interrupted(run: dict[str, Any], now: pd.Timestamp, silence: pd.Timedelta,
                    host: str | None = None, lease_holder: Any = NO_LEASES) -> str | None:
    """Why the ``running`` run ``run`` (a row of ``read_runs``) is interrupted, or None
    while it may still be running (the rule of the module docstring). ``lease_holder``
    is what holds the run's dataset's lease now (``GraphStore.lease_holder``: None when
    nothing does), or ``NO_LEASES`` on a store without them."""
    process = run.get("process") or {}
    seen = run.get("heartbeat_at")
    seen = run.get("started_at") if seen is None or pd.isna(seen) else seen
    host = socket.gethostname() if host is None else host
    if gone_from_this_host(process, host):
        return (f"{INTERRUPTED_PREFIX} its process (pid {process['pid']} on {host}) is gone; last sign of life"
                f" {pd.Timestamp(seen):%Y-%m-%d %H:%M:%S} UTC")
    if lease_holder is not NO_LEASES and lease_holder != label_run_holder(str(run["run_id"])):
        where = f" (pid {process['pid']} on {process['host']})" if {"pid", "host"} <= set(process) else ""
        return (f"{INTERRUPTED_PREFIX} it no longer holds the lease of its dataset, which a running label run"
                f" renews every {RENEW_SECONDS} s: its process{where} is gone, or was silent for more than"
                f" {LEASE_SECONDS} s; last sign of life {pd.Timestamp(seen):%Y-%m-%d %H:%M:%S} UTC")
    if seen is not None and not pd.isna(seen) and now - pd.Timestamp(seen) > silence:
        where = f" on {process['host']}" if process.get("host") else ""
        return (f"{INTERRUPTED_PREFIX} no sign of life{where} since {pd.Timestamp(seen):%Y-%m-%d %H:%M:%S} UTC,"
                f" more than {silence.total_seconds() / 3600:g} h ({STALE_HOURS_ENV})")
    return None


def end_unseen(error: str | None) -> bool:
    """Whether a failed run's ``error`` says it was marked interrupted here: its
    ``finished_at`` is then its last sign of life, so its duration is only a lower bound (a
    run killed during its first stage showed 0.0 s)."""
    return bool(error) and str(error).startswith(INTERRUPTED_PREFIX)


def mark_interrupted_runs(store: GraphStore, dataset: str | None = None,
                          now: pd.Timestamp | None = None) -> list[str]:
    """Mark the ``running`` runs (of ``dataset``, or of every dataset) that are interrupted
    as ``failed``; returns their run ids."""
    now = pd.Timestamp.now(tz="UTC").tz_localize(None) if now is None else now
    silence = stale_after()
    marked = []
    holders: dict[str, Any] = {}
    for row in store.read_runs(dataset=dataset, status="running", limit=MAX_RUNNING_CHECKED).to_dict("records"):
        if store.has_leases and row["dataset"] not in holders:
            holders[row["dataset"]] = store.lease_holder(row["dataset"])
        reason = why_interrupted(row, now, silence, lease_holder=holders.get(row["dataset"], NO_LEASES))
        if reason is None:
            continue
        run = run_record(row)
        if store.interrupt_run(run.run_id, run.heartbeat_at or run.started_at, reason):
            marked.append(run.run_id)
    return marked
