#!/usr/bin/env python3
"""A local Neo4j 5.26 Community server with the GDS 2.13 plugin, from Maven Central.

    python3 neo4j-server/neo4j_server.py up      # resolve, configure, start, wait until GDS answers
    python3 neo4j-server/neo4j_server.py status
    python3 neo4j-server/neo4j_server.py down

(``make neo4j-up`` / ``make neo4j-down``.) It needs Java 17+ and Maven on the PATH, and
nothing of graphlabel: the standard library only, so the tests import it to start their
own server and people run it with any Python 3.

How the server is put together (each step verified against Neo4j 5.26.30 and GDS 2.13.9):

- ``pom.xml`` pins the versions; its module ``server`` depends on ``org.neo4j:neo4j``,
  whose runtime dependencies are a server's ``lib/``, and its module ``gds`` on the open
  GDS modules, whose runtime dependencies are ``plugins/``. ``mvn dependency:copy-
  dependencies`` puts them in ``target/lib`` and ``target/plugins``, once: later starts,
  and every server home (the tests start several), use those folders as they are.
- A third-party library in both sets (jackson, slf4j, caffeine, eclipse-collections,
  commons-lang3 and -text, javassist) is left out of ``plugins/`` (``excludeArtifactIds``
  in gds/pom.xml): Neo4j's version wins, as in a server with the plugin jar dropped in.
  After each copy the script checks, by the Maven coordinates inside the jars, that no
  library is in both folders. Artifacts that merely share a name
  (``org.neo4j.gds:annotations`` and ``org.neo4j:annotations``) are different and both stay.
- Neo4j finds procedures by scanning the jars in ``plugins/`` and extensions through the
  classpath, so ``plugins/*`` is on the classpath too (as the ``neo4j`` launcher does).
- The password is set before the first start by ``Neo4jAdminCommand dbms
  set-initial-password`` with ``NEO4J_HOME`` and ``NEO4J_CONF`` in its environment
  (without them it guesses the home from the jar's path and writes elsewhere).
- The server is ``org.neo4j.server.CommunityEntryPoint --console-mode``, with the JVM
  flags the launcher adds, listening on 127.0.0.1 only, with a heap and page cache small
  enough for a 2-core machine (``--heap``, ``--pagecache``).
- Ready means ``RETURN gds.version()`` answers over HTTP (``RETURN 1`` with ``--no-gds``,
  a server without the plugin, which the tests use to check graphlabel's error).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_HOME = HERE / "target" / "home"
DEFAULT_PASSWORD = "graphlabel-dev"  # docker-compose.yml's development password too
JAVA_FLAGS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
)
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_COMMAND = "org.neo4j.server.startup.Neo4jAdminCommand"
MIN_JAVA = 17


class CannotStart(RuntimeError):
    """This machine cannot run the server (no Java or Maven, a failed resolve or start);
    the message is one line saying why."""


@dataclass(frozen=True)
class Settings:
    home: Path = DEFAULT_HOME
    bolt_port: int = 7687
    http_port: int = 7474
    password: str = DEFAULT_PASSWORD
    gds: bool = True
    heap: str = "1g"
    pagecache: str = "256m"

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"


# -- prerequisites and jars --------------------------------------------------------------

def java_version(java: str = "java") -> int:
    """The major version of ``java`` on the PATH; CannotStart when there is none."""
    if shutil.which(java) is None:
        raise CannotStart(f"no `{java}` on the PATH (Neo4j 5.26 needs Java {MIN_JAVA} or 21)")
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise CannotStart(f"could not read the Java version from `{java} -version`: {out.strip()[:120]!r}")
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 else major  # "1.8.0" is Java 8


def check_prerequisites() -> None:
    """Java 17+ and Maven, or CannotStart saying which is missing."""
    major = java_version()
    if major < MIN_JAVA:
        raise CannotStart(f"Java {major} found; Neo4j 5.26 needs Java {MIN_JAVA} or 21")
    if shutil.which("mvn") is None:
        raise CannotStart("no `mvn` on the PATH (Maven resolves Neo4j and GDS from Maven Central)")


LIB = HERE / "target" / "lib"
PLUGINS = HERE / "target" / "plugins"
COPIED = HERE / "target" / ".copied"


def copy_jars() -> None:
    """Copy the runtime jars of the ``server`` and ``gds`` modules to target/lib and
    target/plugins (``mvn dependency:copy-dependencies``), unless they are already there
    and newer than every pom; then check that no library is in both."""
    poms = [HERE / "pom.xml", HERE / "server" / "pom.xml", HERE / "gds" / "pom.xml"]
    if COPIED.exists() and COPIED.stat().st_mtime > max(pom.stat().st_mtime for pom in poms) \
            and any(LIB.glob("*.jar")) and any(PLUGINS.glob("*.jar")):
        return
    for folder in (LIB, PLUGINS):  # a version bump must not leave the old jars behind
        if folder.exists():
            shutil.rmtree(folder)
    done = subprocess.run(["mvn", "-B", "-q", "-f", str(HERE / "pom.xml"), "dependency:copy-dependencies"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        tail = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()][-3:]
        raise CannotStart("Maven could not resolve Neo4j and GDS: " + " | ".join(tail))
    shared = sorted(_artifacts(LIB) & _artifacts(PLUGINS))
    if shared:
        raise CannotStart(f"libraries in both lib/ and plugins/: {', '.join(shared)}; add them to"
                          " excludeArtifactIds in neo4j-server/gds/pom.xml")
    COPIED.touch()


def _artifacts(folder: Path) -> set[str]:
    """group:artifact of every jar in ``folder``, from the pom.properties Maven puts in it."""
    found = set()
    for jar in folder.glob("*.jar"):
        with zipfile.ZipFile(jar) as archive:
            for name in archive.namelist():
                if name.startswith("META-INF/maven/") and name.endswith("/pom.properties"):
                    _, _, group, artifact, _ = name.split("/")
                    found.add(f"{group}:{artifact}")
    return found


# -- the home folder ---------------------------------------------------------------------

def configuration(settings: Settings) -> str:
    home = settings.home
    lines = [
        "# written by neo4j-server/neo4j_server.py on each start: edit the script, not this file",
        "server.default_listen_address=127.0.0.1",
        "server.default_advertised_address=127.0.0.1",
        f"server.bolt.listen_address=127.0.0.1:{settings.bolt_port}",
        f"server.http.listen_address=127.0.0.1:{settings.http_port}",
        "server.https.enabled=false",
        f"server.memory.heap.initial_size={settings.heap}",
        f"server.memory.heap.max_size={settings.heap}",
        f"server.memory.pagecache.size={settings.pagecache}",
        f"server.directories.plugins={_plugins(settings)}",
        f"server.directories.data={home / 'data'}",
        f"server.directories.logs={home / 'logs'}",
        f"server.directories.run={home / 'run'}",
        f"server.directories.import={home / 'import'}",
        "dbms.usage_report.enabled=false",  # otherwise it reports usage to Neo4j over the network
        # GDS's procedures need these; nothing else is let through
        "dbms.security.procedures.unrestricted=gds.*",
        "dbms.security.procedures.allowlist=gds.*",
        # a 2-core machine: keep the transaction log small
        "db.tx_log.rotation.retention_policy=2 files",
    ]
    return "\n".join(lines) + "\n"


def _plugins(settings: Settings) -> Path:
    return PLUGINS if settings.gds else settings.home / "no-plugins"


def assemble(settings: Settings) -> None:
    """Copy the jars if needed, create the home folder with conf/neo4j.conf, and set the
    initial password on a home that has no database yet."""
    check_prerequisites()
    copy_jars()
    home = settings.home
    for name in ("conf", "data", "logs", "run", "import", *(() if settings.gds else ("no-plugins",))):
        (home / name).mkdir(parents=True, exist_ok=True)
    (home / "conf" / "neo4j.conf").write_text(configuration(settings))
    if not (home / "data" / "dbms" / "auth.ini").exists():
        done = subprocess.run(
            ["java", "-cp", _classpath(settings), ADMIN_COMMAND, "dbms", "set-initial-password", "--",
             settings.password],  # "--": a password may start with "-"
            env=_environment(home), capture_output=True, text=True)
        if done.returncode != 0:
            raise CannotStart("could not set the initial password: " + (done.stdout + done.stderr).strip()[-300:])


def _classpath(settings: Settings) -> str:
    # plugins first, as the neo4j launcher orders them: extensions are found on the classpath
    parts = [_plugins(settings) / "*", settings.home / "conf" / "*", LIB / "*"]
    return os.pathsep.join(str(part) for part in parts)


def _environment(home: Path) -> dict[str, str]:
    return {**os.environ, "NEO4J_HOME": str(home), "NEO4J_CONF": str(home / "conf")}


# -- running -----------------------------------------------------------------------------

def pid_file(home: Path) -> Path:
    return home / "run" / "graphlabel-neo4j.pid"


def running_pid(home: Path) -> int | None:
    try:
        pid = int(pid_file(home).read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def start(settings: Settings) -> int:
    """Start the server in the background (its console goes to logs/console.log); returns
    its process id. A server already running on this home is left as it is."""
    pid = running_pid(settings.home)
    if pid is not None:
        running = configured_ports(settings.home)
        if running not in (None, (settings.bolt_port, settings.http_port)):
            # else the wait below polls ports nothing listens on until its timeout (a newcomer's walk)
            raise CannotStart(f"a Neo4j of {settings.home} already runs (pid {pid}) on bolt port {running[0]} and"
                              f" http port {running[1]}: use those (--bolt-port {running[0]} --http-port"
                              f" {running[1]}), or stop it first (down)")
        return pid
    for port in (settings.bolt_port, settings.http_port):
        if port_in_use(port):  # else the wait below would take another server's answer for ours
            raise CannotStart(f"port {port} on 127.0.0.1 is in use (another Neo4j?): stop it or choose"
                              " other ports (--bolt-port, --http-port)")
    assemble(settings)
    home = settings.home
    log = open(home / "logs" / "console.log", "ab")
    process = subprocess.Popen(
        ["java", *JAVA_FLAGS, "-cp", _classpath(settings), ENTRY_POINT, f"--home-dir={home}",
         f"--config-dir={home / 'conf'}", "--console-mode"],
        cwd=home, env=_environment(home), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,  # not killed with the shell or test run that started it
    )
    pid_file(home).write_text(str(process.pid))
    return process.pid


def configured_ports(home: Path) -> tuple[int, int] | None:
    """The bolt and http ports the home's conf/neo4j.conf names (its running server's, as
    ``configuration`` wrote them at its start); None without a readable conf."""
    try:
        text = (home / "conf" / "neo4j.conf").read_text()
    except OSError:
        return None
    ports = dict(re.findall(r"^server\.(bolt|http)\.listen_address=[^:\n]*:(\d+)$", text, re.MULTILINE))
    return (int(ports["bolt"]), int(ports["http"])) if {"bolt", "http"} <= ports.keys() else None


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the tests' servers use these)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def query(settings: Settings, statement: str, timeout: float = 5.0) -> list:
    """The rows of one Cypher statement over the HTTP API (no driver needed)."""
    body = json.dumps({"statements": [{"statement": statement}]}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{settings.http_port}/db/neo4j/tx/commit", data=body, method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json",
                 "Authorization": "Basic " + base64.b64encode(f"neo4j:{settings.password}".encode()).decode()})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = json.load(response)
    if answer.get("errors"):
        raise RuntimeError(answer["errors"][0].get("message", answer["errors"]))
    return [row["row"] for row in answer["results"][0]["data"]]


def wait_ready(settings: Settings, pid: int, timeout: float) -> str:
    """Poll until the server answers (``gds.version()`` with GDS); returns the version
    string. CannotStart when the process dies or the time runs out, with the log's tail."""
    statement = "RETURN gds.version()" if settings.gds else "CALL dbms.components() YIELD versions RETURN versions[0]"
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            raise CannotStart(f"the Neo4j process exited during start-up; {log_tail(settings.home)}") from None
        try:
            return str(query(settings, statement)[0][0])
        except urllib.error.HTTPError as exc:
            if exc.code == 401:  # up and answering: the password is wrong, and waiting will not change it
                raise CannotStart(
                    f"Neo4j at http://127.0.0.1:{settings.http_port} refused the password: a server folder keeps"
                    f" the password it was first started with ({settings.home / 'data' / 'dbms' / 'auth.ini'});"
                    " give that one (NEO4J_PASSWORD or --password), or another --home for a new server") from None
            last = str(exc)
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, RuntimeError) as exc:
            last = str(exc)
        time.sleep(0.5)
    raise CannotStart(f"Neo4j did not answer within {timeout:.0f} s ({last}); {log_tail(settings.home)}")


def log_tail(home: Path, lines: int = 5) -> str:
    log = home / "logs" / "console.log"
    if not log.exists():
        return "no console log"
    tail = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-lines:]
    return f"last lines of {log}: " + " | ".join(tail)


def stop(home: Path, timeout: float = 60.0) -> bool:
    """Stop the server (SIGTERM, then SIGKILL after ``timeout``); False when none ran."""
    pid = running_pid(home)
    if pid is None:
        pid_file(home).unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            break
        _reap(pid)
        time.sleep(0.2)
    else:
        os.kill(pid, signal.SIGKILL)
        _reap(pid)
    pid_file(home).unlink(missing_ok=True)
    return True


def _reap(pid: int) -> None:
    """Collect the exit status when the server is our own child (tests), so it is not a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def up(settings: Settings, timeout: float = 180.0) -> str:
    """Start (or find running) and wait until ready; returns the GDS (or Neo4j) version."""
    pid = start(settings)
    return wait_ready(settings, pid, timeout)


# -- command line ------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("up", "down", "status", "check"))
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("GRAPHLABEL_NEO4J_HOME", DEFAULT_HOME)),
                        help="server folder (default neo4j-server/target/home)")
    parser.add_argument("--bolt-port", type=int, default=7687)
    parser.add_argument("--http-port", type=int, default=7474)
    parser.add_argument("--password", default=os.environ.get("NEO4J_PASSWORD") or DEFAULT_PASSWORD,
                        help="initial password (default $NEO4J_PASSWORD, else graphlabel-dev)")
    parser.add_argument("--no-gds", action="store_true", help="start without the GDS plugin")
    parser.add_argument("--heap", default="1g")
    parser.add_argument("--pagecache", default="256m")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the server")
    args = parser.parse_args(argv)
    settings = Settings(home=args.home.resolve(), bolt_port=args.bolt_port, http_port=args.http_port,
                        password=args.password, gds=not args.no_gds, heap=args.heap, pagecache=args.pagecache)
    try:
        if args.command == "check":
            check_prerequisites()
            print(f"Java {java_version()} and Maven found: the local Neo4j can run")
        elif args.command == "up":
            started = time.monotonic()
            version = up(settings, args.timeout)
            what = f"GDS {version}" if settings.gds else f"Neo4j {version} (no GDS)"
            print(f"Neo4j is up at {settings.bolt_uri} (browser http://127.0.0.1:{settings.http_port}),"
                  f" {what}, in {time.monotonic() - started:.0f} s; home {settings.home}")
            # graphlabel reads GRAPHLABEL_STORE (or --store); NEO4J_URI is only the test suite's
            # (tests/live_neo4j.py): a newcomer who exported that one alone got "no store at .graphlabel"
            print(f"  export GRAPHLABEL_STORE={settings.bolt_uri} NEO4J_PASSWORD=...  # graphlabel's store; the"
                  f" password you set (default {DEFAULT_PASSWORD})")
            print(f"  (make test-neo4j runs the live suite against this server with NEO4J_URI={settings.bolt_uri})")
        elif args.command == "down":
            print("Neo4j stopped" if stop(settings.home) else "no Neo4j was running from " + str(settings.home))
        else:
            pid = running_pid(settings.home)
            ports = configured_ports(settings.home)  # the folder's own, whatever --bolt-port says
            where = f", bolt://127.0.0.1:{ports[0]} (browser http://127.0.0.1:{ports[1]})" if ports else ""
            running = f"Neo4j running, pid {pid}{where}, home {settings.home}"
            print(running if pid else f"no Neo4j running from {settings.home}")
            return 0 if pid else 1
    except CannotStart as exc:
        print(f"neo4j-server: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
