"""What the terminal shows of Prefect's work after a command's flow: its background
workers let finish before the command's last line (``settle_prefect``). What it shows of a
flow's expected failure is ``flows.direct.run_flow``'s: one line, the command's.
"""

from __future__ import annotations

import sys


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
