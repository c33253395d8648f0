"""What a graph build found that its caller should hear (low kNN recall, weights that say
nothing): a Python warning by default, or collected as data by ``collected_findings``.

Why not ``warnings.catch_warnings(record=True)`` around the build: before Python 3.14 its
state is the process's, not the thread's. A run builds its graph in a task's thread while
other threads enter and leave ``catch_warnings`` too (Prefect's, a library's import); one
that leaves inside the build's window restores the state it saw, and the build's findings
go to stderr instead of the run's warnings (the same race once lost a solver's warning:
``flows.artifacts.plot_png``). A ``ContextVar`` belongs to the thread (and asyncio task)
that set it, which is what Python 3.14's ``context_aware_warnings`` flag later gave
``catch_warnings`` itself.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_COLLECTED: ContextVar[list[Warning] | None] = ContextVar("similarity_findings", default=None)


@contextmanager
def collected_findings() -> Iterator[list[Warning]]:
    """Inside, the findings of this thread's builds are appended to the yielded list
    instead of being warned (each a ``Warning`` instance: its class says what it is,
    ``str()`` says it)."""
    found: list[Warning] = []
    token = _COLLECTED.set(found)
    try:
        yield found
    finally:
        _COLLECTED.reset(token)


def say(finding: Warning, stacklevel: int = 1) -> None:
    """Warn ``finding`` (``stacklevel`` as ``warnings.warn``'s, counted from the caller),
    or add it to the list of the ``collected_findings`` this thread is inside."""
    found = _COLLECTED.get()
    if found is None:
        warnings.warn(finding, stacklevel=stacklevel + 1)
    else:
        found.append(finding)
