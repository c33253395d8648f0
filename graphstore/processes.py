"""Which process holds something: what a run or a dataset lease records of its process,
and whether that process still runs. ``labelling.liveness`` marks runs whose process is
gone; ``graphstore.neo4j_lease`` takes over a lease whose holder is gone."""

from __future__ import annotations

import os
import socket
from typing import Any


def this_process() -> dict[str, Any]:
    """The host, pid and start time of this process: the three identify it even after its
    pid is reused."""
    import psutil  # here and in is_gone: report and explain open no process table (0.03 s)

    return {"host": socket.gethostname(), "pid": os.getpid(), "started": psutil.Process().create_time()}


def is_gone(process: dict[str, Any]) -> bool:
    """Whether the recorded process (of this host) no longer runs: no process has its pid,
    the process with that pid started at another time (the pid was reused), or it is a
    zombie. Another user's live process counts as running."""
    import psutil

    try:
        found = psutil.Process(int(process["pid"]))
        if found.status() == psutil.STATUS_ZOMBIE:
            return True
        return abs(found.create_time() - float(process["started"])) > 1.0  # the pid was reused
    except psutil.NoSuchProcess:
        return True
    except psutil.AccessDenied:  # someone else's live process
        return False


def gone_from_this_host(process: dict[str, Any] | None, host: str | None = None) -> bool:
    """Whether ``process`` (as ``this_process`` recorded it) ran on this host (``host``,
    default this machine's name) and is gone; False for another host's process, whose state
    cannot be seen from here."""
    process = process or {}
    host = socket.gethostname() if host is None else host
    return process.get("host") == host and {"pid", "started"} <= set(process) and is_gone(process)
