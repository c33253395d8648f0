"""Independent runs of a compiled library that keeps its state in globals, on worker processes.

libhpf (Hochbaum's parametric pseudoflow, ``solvers._parametric_cut``) keeps its network in
C globals (``nm`` lists ``numNodes``, ``arcList``, ``reset_globals``), so two of its runs
cannot share a process, and threads cannot split them as they split the sparse products
(``solvers._row_split_product``). lcsnc's tuning makes cv × settings × classes of them, each
independent of the others: processes can.

Why joblib's loky executor: it is what scikit-learn's ``n_jobs`` runs on (joblib is in the
lock through scikit-learn), its workers are reused from one call to the next, and it does not
re-run a script's ``__main__`` in them, so a script without an ``if __name__ == "__main__"``
guard works. Starting the workers costs their imports (numpy, scipy, scikit-learn and the
solver: 2.5 s for two on the 2-core VM, measured), so the first task always runs here and
the rest go to workers only when, at its pace, they would take ``MIN_SECONDS`` or more.
The workers outlive the call by ``IDLE_SECONDS``: loky ends a worker that long after its
last task, so the final cut reuses the tuning's workers, and a worker whose parent was
killed does not stay long (each held about 300 MB resident in lcsnc on 20,000 nodes: its
imports and the graphs it was sent). With loky's default of 300 s, workers of a bench
child that was terminated were still there 7 minutes later; with 10 s, the workers of a
parent killed with SIGKILL ended 40 s after their last task (loky's worker then waits up
to 30 s for its parent's word; ``tests/test_worker_processes.py``).
"""

from __future__ import annotations

import multiprocessing
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ._row_split_product import product_threads

__all__ = ["MIN_SECONDS", "in_order", "worker_count"]

#: The first task's time × the tasks left, in seconds, from which the rest go to workers.
#: Starting two workers took 2.5 s on the 2-core VM, and two processes ran lcsnc's
#: parametric paths 1.6× faster than one (20,000 nodes; memory bandwidth is shared): below
#: about this much work the start costs what the second process saves.
MIN_SECONDS = 8.0
#: Seconds a worker waits for its next task before it ends (loky's ``timeout``).
IDLE_SECONDS = 10.0


def worker_count(n_jobs: int | None) -> int:
    """Processes to use: ``n_jobs``, or by default the CPUs this process may use
    (``product_threads()``: ``OMP_NUM_THREADS`` if set, at most 8); 1 in a daemonic process
    (a Dask worker's, a multiprocessing pool's), which may not start children."""
    if multiprocessing.current_process().daemon:
        return 1
    return product_threads() if n_jobs is None else int(n_jobs)


def in_order(local: Callable[..., Any], worker: Callable[..., Any], tasks: Iterable[tuple], count: int,
             processes: int, check: Callable[[int], None],
             project: Callable[[float], None] | None = None) -> Iterator[Any]:
    """``local(*args)`` or, on a worker process, ``worker(*args)`` for each ``args`` of ``tasks``
    (``count`` of them), their results in the tasks' order. The two compute the same; ``worker``
    must pickle (a module-level function, or a ``functools.partial`` of one), and ``local`` may
    hold what does not (a time budget that reads the caller's stop request).

    ``check(i)`` runs before task ``i`` is started here or handed to a worker: a time budget
    raises there, and the tasks queued are dropped (a worker finishes the one it has; at most
    two a worker are handed out ahead). ``tasks`` is read as the workers' queue needs it, not
    all at once: a task's arrays are built when a worker is about to need them.

    ``project(seconds)``, when given, runs once after the first task with the seconds the rest
    would take at its pace (on the processes they will run on, each as fast as this one): a
    time budget can stop there, at once, rather than when it is spent. The pace leaves out
    the work of building the tasks and a slower second process, so it errs short.
    """
    tasks = iter(tasks)
    first = next(tasks, None)
    if first is None:
        return
    check(0)
    start = time.perf_counter()
    yield local(*first)
    rest = count - 1
    one = time.perf_counter() - start
    shared = processes > 1 and rest > 0 and one * rest >= MIN_SECONDS  # the rest go to workers
    if project is not None and rest:
        project(one * rest / (min(processes, rest) if shared else 1))
    if not shared:
        for i, args in enumerate(tasks, start=1):
            check(i)
            yield local(*args)
        return
    from joblib.externals.loky import get_reusable_executor

    executor = get_reusable_executor(max_workers=min(processes, rest), timeout=IDLE_SECONDS)
    pending: deque = deque()
    try:
        for i, args in enumerate(tasks, start=1):
            while len(pending) >= 2 * processes:  # a task queued behind each worker's
                yield pending.popleft().result()
            check(i)
            pending.append(executor.submit(worker, *args))
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
