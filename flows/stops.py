"""A stop that Python could not raise, raised again at the run's next task.

A Ctrl-C (``KeyboardInterrupt``) and, in a flow run, a SIGTERM (Prefect's bridge raises
``TerminationSignal``: how serve's stop and the UI's Cancel end a served run) are raised
wherever the main thread is when the signal comes. When that is inside a finaliser or a
weakref callback, which the garbage collector runs between any two steps of the run,
Python cannot raise it: it prints "Exception ignored in ..." with a traceback and the stop
is lost. Seen once in 24 stops of ``tests/test_serve_stop.py``'s SIGTERM, landing in a
``WeakValueDictionary`` callback: the run went on to complete while its flow run was
being cancelled, and serve's output had the traceback.

``keep_lost_stops`` installs a ``sys.unraisablehook`` that keeps such a stop and says so in
one line; ``raise_lost_stop``, called as each task starts, raises it again on the main
thread, where the signal would have. Other unraisable errors go to the hook that was
there before.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

LOGGER = logging.getLogger("graphlabel")

#: The stops Python could not raise, oldest first (raised again one at a time).
_LOST: list[BaseException] = []


def is_stop(error: BaseException | None) -> bool:
    """A signal's exception: a ``KeyboardInterrupt`` or another ``BaseException`` that is
    no ``Exception`` (Prefect's ``TerminationSignal``), not the interpreter's own
    ``SystemExit`` or ``GeneratorExit``."""
    return isinstance(error, BaseException) and not isinstance(error, Exception | SystemExit | GeneratorExit)


class _KeepLostStops:
    """The ``sys.unraisablehook`` that keeps a stop and passes anything else on."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def __call__(self, unraisable: Any) -> None:
        if not is_stop(unraisable.exc_value):
            self.previous(unraisable)
            return
        _LOST.append(unraisable.exc_value)
        LOGGER.warning("a stop (%s) came while Python ran %r, where it cannot be raised: it is raised again as"
                       " the run's next task starts", type(unraisable.exc_value).__name__, unraisable.object)


def keep_lost_stops() -> None:
    """Keep the stops Python cannot raise, for ``raise_lost_stop``, in this process from
    now on. Idempotent."""
    if not isinstance(sys.unraisablehook, _KeepLostStops):
        sys.unraisablehook = _KeepLostStops(sys.unraisablehook)


def raise_lost_stop() -> None:
    """Raise the oldest stop Python could not raise, on the main thread (where the signal's
    exception belongs); nothing when there is none."""
    if _LOST and threading.current_thread() is threading.main_thread():
        raise _LOST.pop(0)
