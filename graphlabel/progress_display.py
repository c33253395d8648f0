"""How the CLI shows a flow's progress (``flows.progress``): a rich bar per stage on a
terminal, a plain line every ``LINE_SECONDS`` when stderr is a pipe or a file (a scheduled
job's log), nothing with ``--quiet``. Both write to stderr: stdout keeps the command's
results."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from flows.progress import Display, Meter, showing

#: Seconds between two lines of the same stage when stderr is not a terminal.
LINE_SECONDS = 5.0


class TerminalDisplay:
    """A rich ``Progress``: the command's headline with a spinner and its time, then one
    bar per stage with its count, rate and time left (``Meter.describe``)."""

    def __init__(self, console: Console, headline: str) -> None:
        self.bars = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                             console=console, transient=False)
        self.headline = self.bars.add_task(headline, total=None)
        self.tasks: dict[int, TaskID] = {}

    def start(self, meter: Meter) -> None:
        self.tasks[id(meter)] = self.bars.add_task(meter.describe(), total=meter.total, completed=meter.done)

    def update(self, meter: Meter) -> None:
        self.bars.update(self.tasks[id(meter)], completed=meter.done, description=meter.describe())

    def finish(self, meter: Meter) -> None:
        task = self.tasks.pop(id(meter))
        self.bars.update(task, completed=meter.done, total=meter.total or max(meter.done, 1),
                         description=meter.summary())
        self.bars.stop_task(task)


class LineDisplay:
    """A line when a stage starts, then at most every ``every`` seconds, then when it ends."""

    def __init__(self, stream: IO[str], every: float = LINE_SECONDS) -> None:
        self.stream, self.every = stream, every
        self.said: dict[int, float] = {}

    def _say(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, meter: Meter) -> None:
        self.said[id(meter)] = time.monotonic()
        self._say(meter.describe())

    def update(self, meter: Meter) -> None:
        if time.monotonic() - self.said.get(id(meter), 0.0) >= self.every:
            self.said[id(meter)] = time.monotonic()
            self._say(meter.describe())

    def finish(self, meter: Meter) -> None:
        self.said.pop(id(meter), None)
        self._say(meter.summary())


@contextmanager
def shown(console: Console, headline: str, quiet: bool = False) -> Iterator[None]:
    """Show the progress of the flows run in the block on ``console`` (stderr): bars on a
    terminal, lines elsewhere, nothing when ``quiet``."""
    if quiet:
        with showing(None):
            yield
        return
    if not console.is_terminal:
        display: Display = LineDisplay(console.file if console.file is not None else sys.stderr)
        with showing(display):
            yield
        return
    terminal = TerminalDisplay(console, headline)
    with terminal.bars, showing(terminal):
        try:
            yield
        finally:  # the headline's spinner stops with the command
            terminal.bars.update(terminal.headline, total=1, completed=1)
            terminal.bars.stop_task(terminal.headline)
