"""Memory measured in a new interpreter, beside nothing else of the test session."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any


def _traced(prepare: Callable[..., tuple], measure: Callable[..., Any], args: tuple) -> tuple[Any, int]:
    inputs = prepare(*args)
    tracemalloc.start()
    try:
        result = measure(*inputs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, peak


def traced_peak(prepare: Callable[..., tuple], measure: Callable[..., Any], *args: Any) -> tuple[Any, int]:
    """``measure(*prepare(*args))`` in a new interpreter: its result, and the peak bytes
    tracemalloc counted during ``measure`` (what ``prepare`` allocates is not counted).

    Why a new interpreter: tracemalloc counts the allocations of every thread, and a test
    session runs others (Prefect's services, the stores' readers) that allocate on their own
    schedule; one such run added 9 MB to a 43 MB peak of ``test_nmf.py``'s and failed it.
    ``prepare`` and ``measure`` are module-level functions (they travel by name), and what
    ``measure`` returns travels back pickled.
    """
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_traced, prepare, measure, args).result()
