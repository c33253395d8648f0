"""What the terminal shows of a flow's failure: one line for an expected condition.

Prefect's console handler prints the traceback of every exception a flow or task raised
("Encountered exception during execution", "Task run failed with exception"), 40 to 150
lines before the command's own one-line error. For the errors that are the input's fault
(the CLI's ``_user_errors``: no labels, a hostile name, a missing store...) the command
says what to do in its last line, so the traceback only buries it; for anything else (a
bug) it stays. Only the console loses it: Prefect's API handler, which feeds the run's
logs in the UI, formats its own copy of the record.
"""

from __future__ import annotations

import logging
import sys


class _WithoutExpectedTracebacks(logging.Formatter):
    """Formats like ``inner``, leaving out the traceback of ``expected`` exceptions."""

    def __init__(self, inner: logging.Formatter, expected: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.inner, self.expected = inner, expected

    def format(self, record: logging.LogRecord) -> str:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, self.expected):
            return self.inner.format(record)
        saved = record.exc_info, record.exc_text
        record.exc_info, record.exc_text = None, None
        try:
            return self.inner.format(record)
        finally:  # the other handlers (Prefect's API log) still see the traceback
            record.exc_info, record.exc_text = saved


def hide_expected_tracebacks(expected: tuple[type[BaseException], ...]) -> None:
    """Make Prefect's console handlers (on the root logger once Prefect has set up its
    logging) print ``expected`` exceptions without their traceback. Idempotent."""
    from prefect.logging.handlers import PrefectConsoleHandler

    loggers = [logging.getLogger()] + [logger for logger in logging.Logger.manager.loggerDict.values()
                                       if isinstance(logger, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler, PrefectConsoleHandler) and not isinstance(handler.formatter,
                                                                            _WithoutExpectedTracebacks):
                handler.setFormatter(_WithoutExpectedTracebacks(handler.formatter or logging.Formatter(),
                                                                expected))


def settle_prefect(timeout: float = 5.0) -> None:
    """Let Prefect's background workers (the run's events and API logs) finish now, if a
    flow ran: draining them at interpreter exit prints "Still processing items" after the
    command's own last line, which then no longer ends the output."""
    if "prefect.events.worker" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (EventsWorker, APILogWorker):
        worker.drain_all(timeout=timeout)
