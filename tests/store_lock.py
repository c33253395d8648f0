"""Another process holding an embedded store's lock, for the tests of waiting on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engines import DATABASE_FILE, ENGINE

HOLD_LOCK = """
import sys, time, importlib
engine = importlib.import_module(sys.argv[1])
db = engine.Database(sys.argv[2])
conn = engine.Connection(db)
print("locked", flush=True)
time.sleep(float(sys.argv[3]))
"""


def hold_lock(store: str, seconds: float) -> subprocess.Popen:
    """Another process holding the store's database file (of this process's engine) for
    ``seconds``, as the engine itself locks it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, ENGINE, str(Path(store) / DATABASE_FILE),
                               str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder
