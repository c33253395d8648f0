"""The live Neo4j 5.26 + GDS 2.13 server the ``neo4j`` tests run against.

``make test`` starts one for the session with ``neo4j-server/neo4j_server.py`` (Maven
Central jars, a Java process on 127.0.0.1, free ports, a fresh home in a temporary folder,
a random password) and stops it at the end. With ``NEO4J_URI`` set (and ``NEO4J_PASSWORD``),
the tests use that server instead, e.g. docker compose's; the few tests that kill or
restart the server then start servers of their own.

Without Java 17+ or Maven the suite cannot run: outside CI the ``neo4j`` tests are
deselected and the run ends with one line saying so; in CI (``CI=true``) that is a
failure, as is a server that does not start.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER_SCRIPT = ROOT / "neo4j-server" / "neo4j_server.py"


def server_module():
    """neo4j-server/neo4j_server.py, imported by path (it is a script, not a package)."""
    if "neo4j_server" not in sys.modules:
        spec = importlib.util.spec_from_file_location("neo4j_server", SERVER_SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules["neo4j_server"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["neo4j_server"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@dataclass
class LiveNeo4j:
    """One live server: where it is and, when this session started it, how to stop it."""

    uri: str
    password: str
    version: str  # "Neo4j 5.26.30 + GDS 2.13.9", as the server answers
    user: str = "neo4j"
    settings: object | None = None  # neo4j_server.Settings of a server started here
    owned_home: bool = False
    _module: object | None = field(default=None, repr=False)

    @classmethod
    def start(cls, gds: bool = True, heap: str = "1g") -> LiveNeo4j:
        """A new server on free ports with its own home; CannotStart says why not."""
        module = server_module()
        home = Path(tempfile.mkdtemp(prefix="graphlabel-neo4j-"))
        settings = module.Settings(home=home, bolt_port=module.free_port(), http_port=module.free_port(),
                                   password=secrets.token_urlsafe(12), gds=gds, heap=heap)
        try:
            gds_version = module.up(settings, timeout=240)
            neo4j_version = module.query(settings, "CALL dbms.components() YIELD versions RETURN versions[0]")[0][0]
            version = f"Neo4j {neo4j_version}" + (f" + GDS {gds_version}" if gds else " without GDS")
        except BaseException:
            module.stop(home, timeout=10)
            shutil.rmtree(home, ignore_errors=True)
            raise
        return cls(settings.bolt_uri, settings.password, version, settings=settings, owned_home=True,
                   _module=module)

    @classmethod
    def external(cls) -> LiveNeo4j:
        return cls(os.environ["NEO4J_URI"], os.environ.get("NEO4J_PASSWORD", ""), "the server of NEO4J_URI",
                   user=os.environ.get("NEO4J_USER", "neo4j"))

    @property
    def controllable(self) -> bool:
        return self.settings is not None

    @property
    def pid(self) -> int | None:
        return self._module.running_pid(self.settings.home) if self.controllable else None

    def kill(self) -> None:
        """kill -9 the Java process, as a crash or an OOM killer would."""
        pid = self.pid
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)
                os.kill(pid, 0)
            except (ChildProcessError, OSError):
                return
            time.sleep(0.1)

    def restart(self) -> None:
        """Start the server again on the same home and ports (recovering after a kill)."""
        self._module.pid_file(self.settings.home).unlink(missing_ok=True)
        self._module.up(self.settings, timeout=240)

    def stop(self) -> None:
        if self.controllable:
            self._module.stop(self.settings.home, timeout=30)
            if self.owned_home:
                shutil.rmtree(self.settings.home, ignore_errors=True)

    def environment(self) -> dict[str, str]:
        return {"NEO4J_USER": self.user, "NEO4J_PASSWORD": self.password}

    def driver(self):
        import neo4j

        return neo4j.GraphDatabase.driver(self.uri, auth=(self.user, self.password),
                                          notifications_min_severity="OFF")
