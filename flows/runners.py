"""Task runners for the solve stage: threads on this machine by default, Dask to spread
the component batches over several processes or a cluster.

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
from typing import Any

from prefect_dask import DaskTaskRunner

from .direct import DIRECT_CLIENT

#: Environment variable naming the Dask scheduler the CLI sends solve tasks to.
DASK_ADDRESS_ENV = "GRAPHLABEL_DASK_ADDRESS"


def _cluster_kwargs(n_workers: int | None) -> dict[str, Any]:
    if n_workers is not None and n_workers < 1:
        raise ValueError(f"n_workers must be >= 1, got {n_workers}")
    # one thread per worker: the solvers' numpy/scipy kernels are the parallelism
    return {"n_workers": n_workers or os.cpu_count() or 1, "threads_per_worker": 1, "dashboard_address": None}


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
    else on a temporary local cluster of ``n_workers`` processes (default: one per core)."""
    address = address or os.environ.get(DASK_ADDRESS_ENV)
    if address:
        return DaskTaskRunner(address=address)
    return DaskTaskRunner(cluster_kwargs=_cluster_kwargs(n_workers))
