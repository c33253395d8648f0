"""The embedded engine a test process runs on, and the other one, run in a process of its
own: kuzu and ladybug cannot be loaded in one process (graphstore.kuzu_store.check_engine_free).

A plain ``pytest`` runs on the default engine (ladybug); the tests of engine-specific
behaviour (tests/test_kuzu_store.py, the store contract) run their own file again with
``GRAPHLABEL_TEST_ENGINE=kuzu`` (``run_on_the_other_engine``), so the stores made before
ladybug became the default keep being tested where they live."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from graphstore.kuzu_store import DEFAULT_ENGINE, ENGINES

#: Names the engine of a test process; conftest makes it the engine of its new stores.
ENGINE_VARIABLE = "GRAPHLABEL_TEST_ENGINE"
ENGINE = os.environ.get(ENGINE_VARIABLE) or DEFAULT_ENGINE
#: The engine the default process runs engine-specific files on in a process of their own.
OTHER_ENGINE = next(engine for engine in ENGINES if engine != DEFAULT_ENGINE)
#: Whether this is the default process (which starts the other engine's run).
IN_DEFAULT_PROCESS = ENGINE == DEFAULT_ENGINE
DATABASE_FILE = ENGINES[ENGINE]


def run_on_the_other_engine(test_file: str, min_passed: int) -> None:
    """Run ``test_file`` in a new Python process on ``OTHER_ENGINE``; every test it collects
    must pass, and at least ``min_passed`` of them (a file that collected nothing would pass)."""
    environment = {**os.environ, ENGINE_VARIABLE: OTHER_ENGINE}
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not neo4j",
                           "-W", "error::pytest.PytestUnraisableExceptionWarning", test_file],
                          cwd=root, env=environment, capture_output=True, text=True, timeout=900)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed, summary
    assert int(passed.group(1)) >= min_passed, summary
    assert not re.search(r"failed|error|skipped|xfail", summary), summary
