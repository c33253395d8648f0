"""Secrets: where the Neo4j password comes from, and that it never shows.

The password is looked for in a traceback, an exception's text, the captured logs
(graphlabel's, the neo4j driver's at DEBUG, Prefect's), the flow run as Prefect's server
records it (parameters, state message, logs) and the CLI's output. Connections go to a
closed localhost port (the real driver, refused at once) or to a fake driver factory; no
test reaches the network.
"""

from __future__ import annotations

import logging
import socket
import time
import traceback

import neo4j
import pandas as pd
import pytest
from prefect_runs import flow_runs_tagged
from typer.testing import CliRunner

import flows.labelling  # noqa: F401 - see below
from graphlabel.cli import app
from graphstore import StoreConnectionError, open_store, redact, redact_uri
from graphstore.neo4j_store import Neo4jStore
from graphstore.secrets import PASSWORD_BLOCK_ENV, neo4j_credentials

# Prefect sets up logging when its flow API is first imported, replacing the root logger's
# handlers (caplog's among them): importing the flows above does that at collection time,
# before caplog attaches its handlers to a test.

PASSWORD = "hunter2-Zq9"  # distinctive, so that a leak anywhere is found by substring
runner = CliRunner()


def closed_port() -> int:
    """A localhost port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def every_text(error: BaseException) -> str:
    """The exception as it can be seen: message, repr, full traceback with chained ones."""
    return "\n".join([str(error), repr(error), "".join(traceback.format_exception(error))])


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE", PASSWORD_BLOCK_ENV, "GRAPHLABEL_STORE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


class LeakyDriver:
    """A driver whose connection check fails with an error quoting the credentials, the
    way a driver's error may quote the URI or the auth it was given."""

    def __init__(self, uri, auth):
        self.uri, self.auth, self.closed = uri, auth, False

    def verify_connectivity(self):
        user, password = self.auth
        raise neo4j.exceptions.AuthError(f"cannot log in to {self.uri} as {user}/{password}:"
                                         f" see bolt://{user}:{password}@db")

    def close(self):
        self.closed = True


@pytest.fixture
def leaky_driver(clean_env):
    made = []

    def factory(uri, auth=None, **options):
        made.append(LeakyDriver(uri, auth))
        return made[-1]

    clean_env.setattr(neo4j.GraphDatabase, "driver", factory)
    return made


# -- redaction ----------------------------------------------------------------------------


@pytest.mark.parametrize("uri, redacted", [
    ("neo4j://alice:hunter2@db:7687", "neo4j://alice:***@db:7687"),
    ("bolt+s://alice:p%40ss@db:7687/x", "bolt+s://alice:***@db:7687/x"),
    ("neo4j://alice:pa/ss@word@db:7687", "neo4j://alice:***@db:7687"),   # '/' and '@' unencoded
    ("neo4j://token-hunter2@db", "neo4j://***@db"),                      # no ':': may be a token
    ("neo4j://db:7687", "neo4j://db:7687"),
    ("see 'bolt://u:pw@h:1' and neo4j://v:pw2@k", "see 'bolt://u:***@h:1' and neo4j://v:***@k"),
    ("/data/store@2024", "/data/store@2024"),                             # a folder, not a URI
])
def test_redact_uri_hides_the_userinfo_password(uri, redacted):
    assert redact_uri(uri) == redacted


def test_redact_hides_each_secret_wherever_it_appears():
    text = f"login {PASSWORD} failed (neo4j://bob:{PASSWORD}@h), short: {PASSWORD[:4]}"
    assert redact(text, PASSWORD, None, "") == "login *** failed (neo4j://bob:***@h), short: hunt"


# -- where the password comes from --------------------------------------------------------


def test_password_precedence_and_ambiguity(clean_env):
    env = {"NEO4J_USER": "alice", "NEO4J_PASSWORD": "from-env"}
    assert neo4j_credentials(environ=env) == ("alice", "from-env")
    assert neo4j_credentials("bob", "given", environ=env) == ("bob", "given")
    assert neo4j_credentials(environ={}) == ("neo4j", None)
    with pytest.raises(ValueError, match=f"both NEO4J_PASSWORD and {PASSWORD_BLOCK_ENV}") as caught:
        neo4j_credentials(environ={**env, PASSWORD_BLOCK_ENV: "prod-password"})
    assert "from-env" not in str(caught.value)


@pytest.mark.usefixtures("prefect_harness")
def test_password_from_a_prefect_secret_block(clean_env):
    from prefect.blocks.system import Secret

    opened = []

    class Driver:
        def verify_connectivity(self):
            pass

        def execute_query(self, *args, **kwargs):
            return neo4j.EagerResult([], None, [])

        def close(self):
            pass

    def factory(uri, auth=None, **options):
        opened.append(auth)
        return Driver()

    clean_env.setattr(neo4j.GraphDatabase, "driver", factory)
    # "null" is the password Secret.get() would hand back as None (it json-decodes the text)
    for stored in (PASSWORD, "null"):
        Secret(value=stored).save("graphlabel-test-neo4j", overwrite=True)
        clean_env.setenv(PASSWORD_BLOCK_ENV, "graphlabel-test-neo4j")
        with open_store("bolt://db.example:7687"):
            pass
        assert opened[-1] == ("neo4j", stored)
    clean_env.setenv(PASSWORD_BLOCK_ENV, "no-such-block")
    with pytest.raises(ValueError, match=f"{PASSWORD_BLOCK_ENV}='no-such-block': could not load"):
        open_store("bolt://db.example:7687")
    assert len(opened) == 2  # the missing block stopped it before a driver was made


# -- failures never show it ---------------------------------------------------------------


def test_a_real_driver_on_a_closed_port_fails_fast_and_quietly(clean_env, caplog):
    clean_env.setenv("NEO4J_PASSWORD", PASSWORD)
    caplog.set_level(logging.DEBUG)  # the driver logs every connection step at DEBUG
    for scheme in ("bolt", "neo4j"):
        start = time.perf_counter()
        with pytest.raises(StoreConnectionError, match="could not open the Neo4j store") as caught:
            open_store(f"{scheme}://127.0.0.1:{closed_port()}")
        assert time.perf_counter() - start < 10
        assert "ServiceUnavailable" in str(caught.value)
        assert PASSWORD not in every_text(caught.value)
    assert "neo4j" in caplog.text  # the driver did log ...
    assert PASSWORD not in caplog.text  # ... but not the password


def test_a_closed_routing_address_is_one_line_of_the_command(clean_env):
    """On neo4j:// the driver logs "Unable to retrieve routing information" before raising it;
    with no log handler of the command's, Python printed it on a line of its own above the
    error (the command as a person runs it: its own process)."""
    import subprocess
    import sys
    from pathlib import Path

    clean_env.setenv("NEO4J_PASSWORD", PASSWORD)
    graphlabel = Path(sys.executable).parent / "graphlabel"
    done = subprocess.run([str(graphlabel), "query", "MATCH (n) RETURN count(n)", "--store",
                           f"neo4j://127.0.0.1:{closed_port()}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: could not open the Neo4j store at neo4j://127.0.0.1:"), line
    assert "Unable to retrieve routing information" in line


def test_driver_errors_quoting_the_password_are_redacted_and_not_chained(leaky_driver, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(StoreConnectionError) as caught:
        Neo4jStore.from_uri("bolt://db.example:7687", user="alice", password=PASSWORD)
    error = caught.value
    # graphlabel's hint first, then what the server said (redacted)
    assert str(error).startswith("could not open the Neo4j store at bolt://db.example:7687: the server refused"
                                 " user 'alice' with the password given")
    assert "(the server said AuthError: cannot log in" in str(error)
    assert "alice/***" in str(error)
    assert "bolt://alice:***@" in str(error)
    # neither the cause nor the context: a traceback would print the original text
    assert error.__cause__ is None
    assert error.__context__ is None
    assert PASSWORD not in every_text(error)
    assert PASSWORD not in caplog.text
    assert leaky_driver[0].auth == ("alice", PASSWORD)
    assert leaky_driver[0].closed


def test_schema_errors_on_opening_are_redacted_too(clean_env):
    class Driver:
        closed = False

        def verify_connectivity(self):
            pass

        def execute_query(self, *args, **kwargs):
            raise neo4j.exceptions.ClientError(f"denied for password {PASSWORD}")

        def close(self):
            self.closed = True

    made = []
    clean_env.setattr(neo4j.GraphDatabase, "driver", lambda uri, auth=None, **o: made.append(Driver()) or made[-1])
    clean_env.setenv("NEO4J_PASSWORD", PASSWORD)
    with pytest.raises(StoreConnectionError, match="ClientError: denied for password \\*\\*\\*") as caught:
        open_store("neo4j://db.example:7687")
    assert PASSWORD not in every_text(caught.value)
    assert made[0].closed


# -- the command line ---------------------------------------------------------------------


def test_cli_refuses_a_uri_with_credentials_without_echoing_it(clean_env):
    assert app.pretty_exceptions_show_locals is False  # tracebacks never list local variables
    port = closed_port()
    uri = f"neo4j://alice:{PASSWORD}@127.0.0.1:{port}"
    result = runner.invoke(app, ["query", "RETURN 1", "--store", uri])
    assert result.exit_code == 2
    assert f"neo4j://alice:***@127.0.0.1:{port}" in result.output
    assert "holds credentials" in result.output
    assert PASSWORD not in result.output
    clean_env.setenv("GRAPHLABEL_STORE", uri)  # the same check for the environment variable
    result = runner.invoke(app, ["query", "RETURN 1"])
    assert result.exit_code == 2
    assert PASSWORD not in result.output
    assert "holds credentials" in result.output


def test_cli_connection_failure_shows_a_redacted_line(clean_env):
    clean_env.setenv("NEO4J_PASSWORD", PASSWORD)
    result = runner.invoke(app, ["query", "RETURN 1", "--store", f"bolt://127.0.0.1:{closed_port()}"])
    assert result.exit_code == 1, result.output
    assert "could not open the Neo4j store" in result.output
    assert PASSWORD not in result.output


@pytest.fixture
def prefect_logging():
    """Prefect's logging set up before the test's call: its first set-up replaces the root
    logger's handlers, pytest's log capture among them, so that run alone the test read an
    empty caplog (and its "nothing leaked" checks passed on nothing)."""
    from prefect.logging.configuration import setup_logging

    setup_logging()


@pytest.mark.usefixtures("prefect_harness", "prefect_logging")
def test_cli_ingest_failing_to_connect_leaks_nothing_to_output_logs_or_prefect(tmp_path, clean_env,
                                                                               leaky_driver, caplog):
    from prefect import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogHandler

    caplog.set_level(logging.DEBUG)
    clean_env.setenv("NEO4J_PASSWORD", PASSWORD)
    csv = tmp_path / "in.csv"
    pd.DataFrame({"id": ["a", "b"], "x": [1.0, 2.0]}).to_csv(csv, index=False)
    result = runner.invoke(app, ["ingest", str(csv), "--dataset", "secretive", "--key", "id", "--features",
                                 "x", "--store", "bolt://db.example:7687"])
    assert result.exit_code == 1, result.output
    assert "could not open the Neo4j store at bolt://db.example:7687: the server refused" in " ".join(
        result.output.split())
    assert "AuthError" in result.output
    assert leaky_driver[0].auth == ("neo4j", PASSWORD)  # it was used, and ...
    assert PASSWORD not in result.output  # ... it shows nowhere
    assert PASSWORD not in caplog.text
    assert "Finished in state Failed" in caplog.text  # Prefect did log the failure
    APILogHandler().flush()  # send the queued logs to the server before reading them
    with get_client(sync_client=True) as client:
        runs = flow_runs_tagged(client, "secretive")
        assert len(runs) == 1
        recorded = [str(runs[0].parameters), str(runs[0].state.message), str(runs[0].state)]
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[runs[0].id])))
        recorded += [log.message for log in logs]
    # the server has the failure in the state message and in the run's logs ...
    assert "could not open the Neo4j store" in runs[0].state.message
    assert any("could not open the Neo4j store" in log.message for log in logs)
    # ... and the password nowhere
    assert not any(PASSWORD in text for text in recorded)
