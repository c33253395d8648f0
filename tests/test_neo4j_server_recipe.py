"""The Neo4j recipe's pins agree everywhere they are written: neo4j-server/pom.xml (what
`make test` and `make neo4j-up` run), docker-compose.yml and the GitHub workflow; and the
server it configures listens on loopback only. The recipe itself runs in every `make test`
(tests/live_neo4j.py starts the server)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
import yaml
from live_neo4j import ROOT, SERVER_SCRIPT, server_module

POM = "{http://maven.apache.org/POM/4.0.0}"


def pom_versions() -> dict[str, str]:
    properties = ET.parse(ROOT / "neo4j-server" / "pom.xml").getroot().find(f"{POM}properties")
    return {child.tag.removeprefix(POM): child.text for child in properties}


def test_the_pom_pins_neo4j_526_lts_and_gds_213():
    versions = pom_versions()
    assert re.fullmatch(r"5\.26\.\d+", versions["neo4j.version"])
    assert re.fullmatch(r"2\.13\.\d+", versions["gds.version"])


def test_docker_compose_runs_the_poms_versions():
    versions = pom_versions()
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert services["neo4j"]["image"] == f"neo4j:{versions['neo4j.version']}-community"
    assert "NEO4J_PLUGINS" not in services["neo4j"]["environment"]  # GDS from the pom, not the newest
    plugins = services["neo4j-plugins"]
    assert plugins["command"][:6] == ["mvn", "-B", "-q", "-f", "/graphlabel/neo4j-server/pom.xml", "-pl"]
    assert "gds" in plugins["command"]
    assert "neo4j-plugins:/plugins" in services["neo4j"]["volumes"]


def test_the_ci_workflow_runs_make_test_with_java_17():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "tests.yml").read_text())
    steps = workflow["jobs"]["test"]["steps"]
    java = next(step for step in steps if step.get("uses", "").startswith("actions/setup-java"))
    assert java["with"]["java-version"] == "17"
    assert any(step.get("run") == "make test" for step in steps)


def test_the_server_listens_on_loopback_only_with_gds_allowed():
    module = server_module()
    conf = module.configuration(module.Settings(bolt_port=17001, http_port=17002))
    listen = [line for line in conf.splitlines() if "listen_address" in line]
    assert listen
    assert all("=127.0.0.1" in line for line in listen)
    assert "server.https.enabled=false" in conf
    assert "dbms.usage_report.enabled=false" in conf
    assert "dbms.security.procedures.unrestricted=gds.*" in conf


@pytest.mark.neo4j
def test_up_on_the_folder_of_a_running_server_says_at_once_what_differs(neo4j_live, tmp_path):
    """`up` on the folder of a running server with another password, or other ports, waited
    out its whole timeout (180 s) and ended "did not answer" (a newcomer's walk): the folder
    keeps the password it was first started with, and one folder runs one server."""
    import subprocess
    import sys
    import time

    from live_neo4j import LiveNeo4j

    server = neo4j_live if neo4j_live.controllable else LiveNeo4j.start()
    settings = server.settings

    def up(*options: str) -> tuple[int, str, float]:
        started = time.monotonic()
        done = subprocess.run([sys.executable, str(SERVER_SCRIPT), "up", "--home", str(settings.home),
                               "--timeout", "120", *options], capture_output=True, text=True, timeout=180)
        return done.returncode, " ".join(done.stderr.split()), time.monotonic() - started

    ports = ("--bolt-port", str(settings.bolt_port), "--http-port", str(settings.http_port))
    try:
        # --password=VALUE: the session's random password may begin with "-", which argparse
        # took for an option (exit 2) when it came as a separate argument
        code, said, took = up(*ports, f"--password={settings.password}-other")
        assert code == 3
        assert f"Neo4j at http://127.0.0.1:{settings.http_port} refused the password: a server folder keeps the" \
               " password it was first started with" in said
        assert took < 60  # the defect waited the whole --timeout (120 s)
        other = server_module().free_port()
        code, said, took = up("--bolt-port", str(other), "--http-port", str(settings.http_port),
                              f"--password={settings.password}")
        assert code == 3
        assert (f"a Neo4j of {settings.home} already runs (pid {server.pid}) on bolt port {settings.bolt_port} and"
                f" http port {settings.http_port}: use those") in said
        assert took < 60
        code, said, _ = up(*ports, f"--password={settings.password}")  # the same settings: it is found, as before
        assert code == 0, said
    finally:
        if server is not neo4j_live:
            server.stop()
