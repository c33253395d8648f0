"""The flows' one stage timer: ``with clock("solve"): ...`` adds the block's wall time to
the stage's seconds, in the order the stages ran."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class StageClock:
    """Wall time of each stage; ``after_stage(stage)`` is called when a stage has run
    without error (the labelling flow writes its run's heartbeat there)."""

    def __init__(self, after_stage: Callable[[str], None] | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self.after_stage = after_stage

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = round(self.seconds.get(stage, 0.0) + time.perf_counter() - start, 4)
        if self.after_stage is not None:
            self.after_stage(stage)

    def rename(self, stage: str, name: str) -> None:
        """Report the last stage, ``stage``, as ``name``: a stage named by what it turned
        out to be."""
        self.seconds[name] = self.seconds.pop(stage)

    def split(self, stage: str, parts: dict[str, float]) -> None:
        """Report stage ``stage`` as the ``parts`` it was made of, in its place: a stage
        timed whole by its caller and in parts inside."""
        self.seconds = {name: seconds for old, total in self.seconds.items()
                        for name, seconds in (parts.items() if old == stage else [(old, total)])}
