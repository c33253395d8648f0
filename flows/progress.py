"""Progress of the stages that take long, for the person who started them: how many of how
many, how fast, and how long is left.

A stage reports with ``with progress("kNN search", total=n, unit="nodes") as meter:``
then ``meter.advance(k)`` (or ``meter.to(done)``). Where that goes is set once per command
by whoever runs the flow (``showing``): the CLI gives a rich bar on a terminal, a plain
line every few seconds on a pipe or a log file, nothing with ``--quiet``; without a
display (a flow called from Python, a test) nothing is shown. Inside a Prefect flow run
each stage of known length also gets a progress artifact, updated at most every
``ARTIFACT_SECONDS``, which the run's Artifacts tab in the UI shows moving (it refreshes
while the run goes). Its key is ``label-DATASET-STAGE`` (``label-wine-knn-search``, beside
the run's ``label-wine-report``...): the UI titles an artifact by its key alone, and showed
an unkeyed one as a bare "PROGRESS" card and an unnamed dot on the run's timeline. A card
shows the first 45 characters or so of the description, hence the share first
(``Meter.describe``); the last description says how the stage ended (``Meter.summary``),
not a time left that a finished or failed stage no longer has.

The layers below the flows never import this module: a stage hands them ``meter.to`` as a
plain ``on_progress(done)`` callable (similarity's kNN search, the store's batched writes).
A stage whose length is not known beforehand (a solver's iterations) has ``total=None``:
the display shows that it runs and for how long.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from .direct import in_flow_run, run_logger

#: Seconds between two updates of a stage's progress artifact (each is a call to the API).
ARTIFACT_SECONDS = 2.0


class Display(Protocol):
    """Where a command shows its stages' progress (graphlabel/progress_display.py has the
    terminal's and the log's)."""

    def start(self, meter: Meter) -> None: ...

    def update(self, meter: Meter) -> None: ...

    def finish(self, meter: Meter) -> None: ...


#: The display of this command's flows; None shows nothing.
DISPLAY: ContextVar[Display | None] = ContextVar("graphlabel_progress_display", default=None)


@contextmanager
def showing(display: Display | None) -> Iterator[None]:
    """Show the progress of the flows run inside the block on ``display``."""
    token = DISPLAY.set(display)
    try:
        yield
    finally:
        DISPLAY.reset(token)


@dataclass
class Meter:
    """One stage's progress: ``done`` of ``total`` ``unit`` (total None: not known) since
    ``started`` (``time.monotonic``)."""

    stage: str
    total: int | None
    unit: str
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    #: the stage ended before its work was done (an error): its last words say where
    stopped: bool = False
    ended: float | None = None  # when the stage ended (``time.monotonic``): its time stops there
    _display: Display | None = None
    _artifact: Any = None  # the progress artifact's id (a UUID) in a flow run
    _artifact_at: float = 0.0

    @property
    def elapsed(self) -> float:
        return (time.monotonic() if self.ended is None else self.ended) - self.started

    @property
    def rate(self) -> float | None:
        """Units per second so far (None before any)."""
        elapsed = self.elapsed
        return self.done / elapsed if self.done and elapsed > 0 else None

    @property
    def seconds_left(self) -> float | None:
        """At the rate so far, how long the rest takes (None when unknown)."""
        rate = self.rate
        if self.total is None or rate is None:
            return None
        return max(self.total - self.done, 0) / rate

    def describe(self) -> str:
        """One line: ``kNN search: 40%, 400,000 of 1,000,000 nodes, 25,000 nodes/s, about 24 s left``
        (the share first: the UI's artifact cards show the first 45 characters or so)."""
        if self.total is None:
            if not self.done:  # "export: 0 nodes, 0 s" as a stage began read as a result of nothing (a walk)
                return f"{self.stage}: started"
            return f"{self.stage}: {self.done:,} {self.unit}, {self.elapsed:.0f} s"
        share = self.done / self.total if self.total else 1.0
        line = f"{self.stage}: {share:.0%}, {self.done:,} of {self.total:,} {self.unit}"
        if self.rate is not None:
            line += f", {self.rate:,.0f} {self.unit}/s"
        left = self.seconds_left
        if left is not None and self.done < self.total:
            line += f", about {_duration(left)} left"
        return line

    def summary(self) -> str:
        """The stage's last line: ``kNN search: 3,000 nodes in 1.0 s (2,915 nodes/s)``, or,
        stopped, ``write back: stopped at 200,000 of 1,000,000 nodes (20%) after 4.1 s``."""
        if self.stopped:
            if self.total is None:
                return f"{self.stage}: stopped after {self._amount(self.done)}, {self.elapsed:.1f} s"
            share = self.done / self.total if self.total else 1.0
            return (f"{self.stage}: stopped at {self.done:,} of {self.total:,} {self.unit} ({share:.0%})"
                    f" after {self.elapsed:.1f} s")
        line = f"{self.stage}: {self._amount(self.done)} in {self.elapsed:.1f} s"
        rate = self.rate
        return line if rate is None else f"{line} ({rate:,.0f} {self.unit}/s)"

    def _amount(self, n: int) -> str:
        """``n`` and the unit, singular for one ("store: 1 node in 0.0 s", not "1 nodes")."""
        return f"{n:,} {self.unit.removesuffix('s') if n == 1 else self.unit}"

    def advance(self, count: int = 1) -> None:
        self.to(self.done + int(count))

    def to(self, done: int) -> None:
        """The stage has done ``done`` units in all."""
        self.done = int(done)
        if self._display is not None:
            self._display.update(self)
        if self._artifact is not None and time.monotonic() - self._artifact_at >= ARTIFACT_SECONDS:
            self._update_artifact()

    def _update_artifact(self) -> None:
        from prefect.artifacts import update_progress_artifact

        self._artifact_at = time.monotonic()
        share = 100.0 * self.done / self.total if self.total else 0.0
        try:
            update_progress_artifact(self._artifact, progress=min(share, 100.0),
                                     description=self.describe() if self.ended is None else self.summary())
        except Exception as error:  # noqa: BLE001 - the UI's progress is not worth the run
            run_logger().warning("could not update the progress of %s: %s", self.stage, error)
            self._artifact = None


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def progress_key(stage: str) -> str | None:
    """The key of a stage's progress artifact in this flow run: ``label-DATASET-STAGE``
    (``flows.artifacts.artifact_key``), the dataset the run's parameters name; None (an
    unnamed artifact) for a flow without one."""
    from prefect.runtime import flow_run

    from .artifacts import artifact_key as key_of

    dataset = flow_run.parameters.get("dataset")
    return key_of(str(dataset), stage) if dataset else None


@contextmanager
def progress(stage: str, total: int | None, unit: str) -> Iterator[Meter]:
    """A stage's ``Meter``, shown on this command's display and, in a flow run, as a
    progress artifact; the stage ends shown whole (a stage that failed ends where it was)."""
    meter = Meter(stage, total, unit, _display=DISPLAY.get())
    if in_flow_run() and total:
        from prefect.artifacts import create_progress_artifact

        try:
            meter._artifact = create_progress_artifact(progress=0.0, key=progress_key(stage),
                                                       description=meter.describe())
        except Exception as error:  # noqa: BLE001 - the UI's progress is not worth the run
            run_logger().warning("could not create the progress of %s: %s", stage, error)
    if meter._display is not None:
        meter._display.start(meter)
    completed = False
    try:
        yield meter
        completed = True
    finally:
        if completed and meter.total is not None:
            meter.done = meter.total
        meter.stopped, meter.ended = not completed, time.monotonic()
        if meter._artifact is not None:
            meter._update_artifact()
        if meter._display is not None:
            meter._display.finish(meter)


class StageProgress:
    """Progress a layer below the flows reports as ``(stage, done, total, unit)`` calls
    (``graphstore.port.OnProgress``): a ``Meter`` per stage, the previous one finished when
    the next one begins, the last by ``close``."""

    def __init__(self) -> None:
        self._stage: str | None = None
        self._meter: Meter | None = None
        self._open: ExitStack | None = None

    def __call__(self, stage: str, done: int, total: int | None, unit: str) -> None:
        if stage != self._stage or self._meter is None:
            self.close()
            self._open = ExitStack()
            self._meter, self._stage = self._open.enter_context(progress(stage, total, unit)), stage
        self._meter.to(done)

    def close(self) -> None:
        if self._open is not None:
            self._open.close()
        self._stage, self._meter, self._open = None, None, None


@contextmanager
def stage_progress() -> Iterator[StageProgress]:
    """A ``StageProgress`` for the block; its last stage ends with the block."""
    stages = StageProgress()
    try:
        yield stages
    finally:
        stages.close()
