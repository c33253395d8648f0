"""Waiting for what another process holds: an embedded store's folder (one process at a
time opens it) or a dataset's lease on Neo4j (one run at a time changes its graph). Both
wait the same time, ``$GRAPHLABEL_LOCK_TIMEOUT`` (default 60 s), say once that they wait,
and then end with ``StoreLocked``."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TypeVar

from .errors import StoreLocked

LOCK_TIMEOUT_ENV = "GRAPHLABEL_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 60.0
#: The longest sleep between two tries: the delay doubles from 0.25 s up to it.
MAX_DELAY = 2.0

logger = logging.getLogger("graphstore")
T = TypeVar("T")


def lock_timeout_from_env(environ=None) -> float:
    """Seconds to wait for what another process holds: ``$GRAPHLABEL_LOCK_TIMEOUT``, else
    ``DEFAULT_LOCK_TIMEOUT``."""
    raw = (os.environ if environ is None else environ).get(LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LOCK_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(f"{LOCK_TIMEOUT_ENV} must be a number of seconds >= 0, got {raw!r}")
    return seconds


def wait_until_free(attempt: Callable[[], T | None], timeout: float, held_by: Callable[[], str],
                    what: str, note: str = "") -> T:
    """``attempt()`` until it returns something other than None (``what`` is free), for up
    to ``timeout`` seconds; says once that it waits, for whom (``held_by()``) and why
    (``note``), and raises ``StoreLocked`` after."""
    deadline, delay = None, 0.25
    while True:
        taken = attempt()
        if taken is not None:
            return taken
        now = time.monotonic()
        if deadline is None:
            deadline = now + timeout
            logger.warning("%s is in use by %s%s: waiting up to %g s (%s)", what, held_by(), note, timeout,
                           LOCK_TIMEOUT_ENV)
        if now >= deadline:
            raise StoreLocked(f"{what} is still in use by {held_by()} after {timeout:g} s: let that finish, or wait"
                              f" longer with {LOCK_TIMEOUT_ENV}=SECONDS")
        time.sleep(min(delay, deadline - now))
        delay = min(2 * delay, MAX_DELAY)
