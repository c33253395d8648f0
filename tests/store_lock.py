"""Another process holding an embedded store's lock, for the tests of waiting on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HOLD_LOCK = """
import sys, time, kuzu
db = kuzu.Database(sys.argv[1])
conn = kuzu.Connection(db)
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


def hold_lock(store: str, seconds: float) -> subprocess.Popen:
    """Another process holding the store's Kùzu file for ``seconds``."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(Path(store) / "graph.kuzu"), str(seconds)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder
