"""Task runners for the solve stage: threads on this machine by default, Dask to spread
the component batches over several processes or a cluster.

The flows' default (``thread_runner``) runs at most one task per usable CPU at a time.
Prefect's own default, ``ThreadPoolTaskRunner()``, starts every submitted task at once, and a
run's solve batches (``labelling.components``) then all hold their working memory together.
Measured (``python -m bench batch_threads --rounds 9``, ``bench/results/batch_threads.md``:
8 components of 100k nodes, harmonic with its defaults, 2 CPUs, medians): all at once raised
the peak 4.1× over one batch at a time and one per CPU 1.4×; all at once took 0.85 of one at
a time's seconds, one per CPU 0.72. ``PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS`` sets the
number when set. A run without a server runs its batches the same way (``flows.direct``).
Each solve still splits its sparse products over the CPUs (``solvers._row_split_product``),
so batches side by side share them: with each solve's products on one thread the same run
took 0.69 of one at a time's seconds, within the machine's noise of 0.72.

A flow keeps its code; only its runner changes:

    labelling_flow.with_options(task_runner=dask_runner("tcp://scheduler:8786"))(dataset=...)

``address`` names a running Dask scheduler (a cluster); without it a local cluster of
``n_workers`` single-threaded worker processes starts for the run and stops after it.
The workers must be able to import graphlabel (same image or environment as the flow).

A flow run without a Prefect server (``flows.direct``) has no task runner: ``dask_client``
gives its solve stage the same cluster through a Dask client instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .direct import DIRECT_CLIENT, usable_cpus

if TYPE_CHECKING:  # Prefect is imported where a runner is made: a run without a server never needs it
    from prefect.task_runners import ThreadPoolTaskRunner
    from prefect_dask import DaskTaskRunner

#: Environment variable naming the Dask scheduler the CLI sends solve tasks to.
DASK_ADDRESS_ENV = "GRAPHLABEL_DASK_ADDRESS"


def thread_runner() -> ThreadPoolTaskRunner:
    """The flows' task runner: threads, at most ``PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS``
    tasks at a time when that is set, else one per usable CPU (module docstring)."""
    from prefect.settings import get_current_settings
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=get_current_settings().tasks.runner.thread_pool_max_workers
                                or usable_cpus())


def _cluster_kwargs(n_workers: int | None) -> dict[str, Any]:
    if n_workers is not None and n_workers < 1:
        raise ValueError(f"n_workers must be >= 1, got {n_workers}")
    # one thread per worker: the solvers' numpy/scipy kernels are the parallelism
    return {"n_workers": n_workers or usable_cpus(), "threads_per_worker": 1, "dashboard_address": None}


@contextmanager
def dask_client(address: str | None = None, n_workers: int | None = None) -> Iterator[Any]:
    """A Dask client on the scheduler at ``address`` (or ``$GRAPHLABEL_DASK_ADDRESS``), else
    on a temporary local cluster, that a run without a Prefect server sends its solve
    batches to (``flows.direct.call_each``) until the block ends."""
    from distributed import Client, LocalCluster

    address = address or os.environ.get(DASK_ADDRESS_ENV)
    cluster = None if address else LocalCluster(**_cluster_kwargs(n_workers))
    client = Client(address or cluster)
    token = DIRECT_CLIENT.set(client)
    try:
        yield client
    finally:
        DIRECT_CLIENT.reset(token)
        client.close()
        if cluster is not None:
            cluster.close()


def dask_runner(address: str | None = None, n_workers: int | None = None) -> DaskTaskRunner:
    """A DaskTaskRunner on the scheduler at ``address`` (or ``$GRAPHLABEL_DASK_ADDRESS``),
    else on a temporary local cluster of ``n_workers`` processes (default: one per usable CPU)."""
    from prefect_dask import DaskTaskRunner

    address = address or os.environ.get(DASK_ADDRESS_ENV)
    if address:
        return DaskTaskRunner(address=address)
    return DaskTaskRunner(cluster_kwargs=_cluster_kwargs(n_workers))
