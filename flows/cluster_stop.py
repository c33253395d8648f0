"""Stopping a run's solver batches on a Dask cluster when the run is interrupted or one
of its batches fails.

On threads a run asks its solves to stop through an event of its own process
(``solvers.stop_when``, ``flows.solving``). A batch on a Dask worker runs in another
process, and Dask cannot interrupt a task in progress: it ran to its end (harmonic has no
time limit; a 10M-node solve stage took 180 s) after its run had failed, holding a worker
of a cluster others may share.

Here the request is a named ``distributed.Event`` on the cluster's scheduler, one per run:

- the ``solve`` task runs its solver inside ``stoppable_on_worker()``: on a Dask worker the
  solver's budget reads the run's event (``ClusterStopRequest``), asking the scheduler at
  most every ``POLL_SECONDS`` (the budget checks between steps; one question is a round
  trip to the scheduler);
- the process that submitted the batches (``flows.direct.Task.map_named``) calls
  ``stop_batches``: it cancels the batches no worker has started, sets the event, waits up to
  ``STOP_WAIT_SECONDS`` for those in progress to stop, and clears the event (the scheduler
  keeps an event that is set until it is cleared).

The event is named ``graphlabel-stop-`` and the flow run's id inside a flow run (a task run
on a worker knows its flow run); a run without a server names it once and sends the name
with its tasks (``with_stop_name``).
"""

from __future__ import annotations

import math
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError  # what a cancelled distributed.Future raises
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from solvers import stop_when

#: Seconds between two questions of one solve to the scheduler: a stop takes up to this
#: much longer than on threads.
POLL_SECONDS = 0.5
#: How long ``stop_batches`` waits for the batches in progress to stop before it lets the
#: run end anyway (a step that cannot be interrupted, such as one max-flow, ends first).
STOP_WAIT_SECONDS = 60.0
PREFIX = "graphlabel-stop-"
#: The stop name a run without a server gave its tasks (``with_stop_name``, on the worker).
_STOP_NAME: ContextVar[str | None] = ContextVar("graphlabel_cluster_stop_name", default=None)


class ClusterStopRequest:
    """The run's stop event on the Dask scheduler, read as a ``solvers.StopRequest``.

    Once seen set it stays set; otherwise it asks the scheduler again after ``POLL_SECONDS``.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._event: Any = None  # distributed.Event, made on the first question (on the worker)
        self._asked_at = -math.inf
        self._set = False

    def is_set(self) -> bool:
        if not self._set and time.monotonic() - self._asked_at >= POLL_SECONDS:
            if self._event is None:
                from distributed import Event

                self._event = Event(self.name)  # the worker's client: the scheduler it serves
            self._asked_at = time.monotonic()
            self._set = bool(self._event.is_set())
        return self._set


def flow_run_stop_name() -> str | None:
    """The stop event's name of the flow run this code runs in (or a task run of), else None."""
    if "prefect.context" not in sys.modules:  # Prefect not even imported: no run
        return None
    from prefect.context import FlowRunContext, TaskRunContext

    task_run = TaskRunContext.get()
    if task_run is not None and task_run.task_run.flow_run_id is not None:
        return f"{PREFIX}{task_run.task_run.flow_run_id}"
    flow_run = FlowRunContext.get()
    if flow_run is not None and flow_run.flow_run is not None:
        return f"{PREFIX}{flow_run.flow_run.id}"
    return None


def new_stop_name() -> str:
    """A stop event's name for a run without a server."""
    return f"{PREFIX}{uuid.uuid4().hex}"


def _on_a_worker() -> bool:
    if "distributed" not in sys.modules:  # a Dask worker has imported it
        return False
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return False
    return True


@contextmanager
def stoppable_on_worker() -> Iterator[None]:
    """On a Dask worker, the solves made inside the block stop at their next step once their
    run sets its stop event; elsewhere (threads: ``flows.solving``'s own request) nothing."""
    name = (_STOP_NAME.get() or flow_run_stop_name()) if _on_a_worker() else None
    if name is None:
        yield
        return
    with stop_when(ClusterStopRequest(name)):
        yield


def with_stop_name(name: str, fn: Callable[..., Any], item: Any, *args: Any) -> Any:
    """``fn(item, *args)`` with ``name`` as its run's stop event (a run without a server)."""
    token = _STOP_NAME.set(name)
    try:
        return fn(item, *args)
    finally:
        _STOP_NAME.reset(token)


def stop_batches(futures: list[Any], name: str, before_waiting: Callable[[int], None] | None = None) -> list[Any]:
    """Stop a run's batches on the cluster (their ``distributed.Future`` objects): cancel those
    no worker has started, ask those in progress to stop and wait for them (up to
    ``STOP_WAIT_SECONDS``; ``before_waiting`` is told how many). Returns the cancelled futures."""
    from distributed import Event

    unfinished = [future for future in futures if not future.done()]
    if not unfinished:
        return []
    client = unfinished[0].client
    processing = {key for keys in client.processing().values() for key in keys}
    started = [future for future in unfinished if future.key in processing]
    cancelled = [future for future in unfinished if future.key not in processing]
    if cancelled:
        client.cancel(cancelled)
    if started:
        if before_waiting is not None:
            before_waiting(len(started))
        event = Event(name, client=client)
        event.set()
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        for future in started:  # each on its own client (distributed.wait takes the default client's)
            try:
                future.exception(timeout=max(deadline - time.monotonic(), 0.0))
            except TimeoutError:  # left set, as after an interrupted wait: they stop when their step ends
                return cancelled
            except CancelledError:  # released by another of the run's clients: ended for this run
                pass
        event.clear()
    return cancelled
