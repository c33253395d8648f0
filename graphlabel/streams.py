"""Standard output and error that the reader may close: ``graphlabel label ... | head -3``.

Why: a command's work (labels written to the store, its run recorded, a flow run on the
Prefect server) must not depend on whether anyone still reads what it prints. Python ignores
SIGPIPE, so the first write after the reader has gone raises ``BrokenPipeError``, wherever
it happens: a progress line inside a task, Prefect's log handler, the closing table. That
failed the run (``label ... 2>&1 | head -2`` recorded "failed: BrokenPipeError: [Errno 32]
Broken pipe" and wrote no labels; with a Prefect server the flow run ended failed).

Decisions
---------
- At the first broken write the stream's file descriptor is pointed at ``os.devnull`` (what
  Python's documentation advises for SIGPIPE): later writes, and the interpreter's last flush,
  succeed and go nowhere, so no "Exception ignored ... BrokenPipeError" is printed either.
- The command then goes on, and its exit status is its work's: 0 when the run completed.
  Not 1 (the documentation's example) nor 141 (a shell's status for a process killed by
  SIGPIPE): a script that ran ``set -o pipefail`` to catch failed runs must not see a
  completed run as one because its reader stopped early.
- Only the command-line entry point (``graphlabel.cli.main``) wraps the streams; code that
  imports the project's packages keeps the streams it had.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any, TextIO


class ReaderMayClose:
    """A text stream whose writes and flushes survive the reader closing the pipe."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)
        try:  # what the stream still buffers goes to devnull now
            self._stream.flush()
        except OSError:
            pass

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...: the stream's
        return getattr(self._stream, name)


def let_readers_close() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` (before Prefect configures its log handler, which
    keeps the stream it finds)."""
    if not isinstance(sys.stdout, ReaderMayClose) and sys.stdout is not None:
        sys.stdout = ReaderMayClose(sys.stdout)  # type: ignore[assignment]
    if not isinstance(sys.stderr, ReaderMayClose) and sys.stderr is not None:
        sys.stderr = ReaderMayClose(sys.stderr)  # type: ignore[assignment]
