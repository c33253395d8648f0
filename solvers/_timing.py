"""Wall-clock seconds of a solver's own steps, for ``Prediction.info``::

    clock = Stopwatch()
    with clock("cuts"):
        ...
    info["timings"] = clock.seconds      # {"cuts": 1.23}

A stage timed twice adds up. The solvers report these; the benchmarks (bench/) do the
measuring that counts (repeats, medians, a peer in the same run).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Stopwatch"]


class Stopwatch:
    """Seconds per named stage, and since the stopwatch was made (``elapsed``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._started = time.perf_counter()

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - start

    @property
    def elapsed(self) -> float:
        """Seconds since the stopwatch was made."""
        return time.perf_counter() - self._started
