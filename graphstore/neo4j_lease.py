"""A dataset's lease on a shared Neo4j: one run at a time changes a dataset's graph.

Why
---
Two ``build-graph`` runs of one dataset (20,000 nodes, k 5 and k 10, Neo4j 5.26.30 + GDS
2.13.9) started three seconds apart left the dataset with both graphs: each deleted the
relationships, then each wrote its own, so every node had 15 relationships out and 67,502
pairs had two, and the ``GraphBuild`` record said 5-NN. Two label runs that found a build
unfinished both rebuilt, and two incremental runs would add the same new nodes' edges twice.
The embedded store never meets this (one process at a time opens it); a Neo4j server
serves every host's runs.

The rule
--------
- A ``GraphlabelLease`` node per dataset (``dataset`` unique) names its holder: an owner
  token, what holds it (``build-graph``, ``label run ID``), the process
  (``graphstore.processes``), since when and until when (``expires_at``, on the server's
  clock, so no two hosts' clocks are compared).
- Taking it (``take_lease.neo4j.cypher``) writes the node before it reads the holder: a
  ``SET`` whose right-hand side reads the property being set takes the node's write lock
  before the read, so two runs cannot both find it free (Neo4j Operations Manual,
  "Concurrent data access", Lost updates: under read-committed isolation a write lock on
  a common node serializes the transactions that take it). It is
  free when nobody holds it, its time ran out, or its holder is a process of this host that
  is gone (``kill -9``: the next run takes it at once instead of after the lease's time).
- A thread renews it every ``RENEW_SECONDS`` for ``LEASE_SECONDS``: a holder on another
  host that died lets go at most ``LEASE_SECONDS`` later. The thread shares the store's
  driver (drivers are thread-safe; each renewal is a transaction of its own).
- Letting go deletes the node while this owner still holds it. A run that cannot (the
  server went away) leaves a lease that runs out.
- A run that finds the lease held waits, saying once for whom, for
  ``$GRAPHLABEL_LOCK_TIMEOUT`` (the embedded store's wait for its folder, default 60 s),
  then ends with ``StoreLocked``, which names the holder (``graphstore.waiting``).

Left open: a holder frozen for longer than ``LEASE_SECONDS`` (a suspended process) loses
the lease to the next run and is not stopped; its renewal says so in the log.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .errors import StoreConnectionError
from .processes import gone_from_this_host, this_process
from .waiting import wait_until_free

#: How long a lease lasts without renewal, and how often its holder renews it.
LEASE_SECONDS = 60
RENEW_SECONDS = 15

logger = logging.getLogger("graphstore")

#: Runs query ``name`` of ``cypher/`` with parameters in a managed transaction and returns
#: its first row (``Neo4jStore._single``).
Query = Callable[[str, dict[str, Any]], Any]


def _holder_text(row: Any) -> str:
    since = str(row["since"])[:19].replace("T", " ")  # the server's ISO text, to the second
    return f"{row['holder']} (pid {row['pid']} on {row['host']}, since {since} UTC)"


def _take(query: Query, dataset: str, owner: str, holder: str, timeout: float) -> None:
    process = this_process()
    parameters = {"dataset": dataset, "owner": owner, "holder": holder, "host": process["host"],
                  "pid": process["pid"], "started": process["started"], "seconds": LEASE_SECONDS, "gone": None}
    seen: dict[str, Any] = {}

    def attempt() -> bool | None:
        row = query("take_lease", parameters)
        if row["owner"] != owner and gone_from_this_host({key: row[key] for key in ("host", "pid", "started")}):
            logger.warning("the graph of dataset %r was held by %s, whose process is gone: taken over", dataset,
                           _holder_text(row))
            parameters["gone"] = row["owner"]
            row = query("take_lease", parameters)
        if row["owner"] == owner:
            return True
        seen.update(row)
        return None

    wait_until_free(attempt, timeout, lambda: _holder_text(seen), f"the graph of dataset {dataset!r}",
                    note=" (one run at a time changes a dataset's graph)")


def _renew_until(stop: threading.Event, query: Query, dataset: str, owner: str) -> None:
    """Renew the lease every ``RENEW_SECONDS`` until ``stop``; says once if it was lost."""
    while not stop.wait(RENEW_SECONDS):
        try:
            renewed = query("renew_lease", {"dataset": dataset, "owner": owner, "seconds": LEASE_SECONDS})
        except StoreConnectionError as error:  # the run's own next query says what is wrong
            logger.debug("could not renew the lease of dataset %r: %s", dataset, error)
            continue
        if not renewed["renewed"]:
            logger.warning("the lease of dataset %r ran out and another run holds it now: this run was silent for"
                           " more than %d s", dataset, LEASE_SECONDS)
            return


@contextmanager
def dataset_lease(query: Query, dataset: str, holder: str, timeout: float) -> Iterator[None]:
    """Hold ``dataset``'s lease for the block (the module docstring's rule)."""
    owner = uuid.uuid4().hex
    _take(query, dataset, owner, holder, timeout)
    stop = threading.Event()
    renewer = threading.Thread(target=_renew_until, args=(stop, query, dataset, owner), daemon=True,
                               name=f"graphlabel-lease-{dataset}")
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join()
        try:
            query("release_lease", {"dataset": dataset, "owner": owner})
        except StoreConnectionError as error:
            logger.warning("could not let go of the lease of dataset %r (%s): it runs out in %d s", dataset, error,
                           LEASE_SECONDS)
