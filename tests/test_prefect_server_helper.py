"""The test helper's API calls retry what Prefect's own client retries: a server that answers
503 ("Service Unavailable", Prefect's answer to a busy SQLite database) and then 200 is
answered, and one that keeps answering 503 fails after the client's retries."""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from prefect_server import CLIENT_RETRIES, PrefectServer


@contextmanager
def serving(statuses: list[int]):
    """A loopback HTTP server answering POSTs with ``statuses`` in turn (the last one
    ever after), ``Retry-After: 0`` on each 503, while the block runs: yields the test
    helper pointed at it and the list of calls."""
    calls: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            calls.append(self.path)
            status = statuses[min(len(calls), len(statuses)) - 1]
            body = json.dumps({"path": self.path}).encode()
            self.send_response(status)
            if status == 503:
                self.send_header("Retry-After", "0")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    helper = PrefectServer.__new__(PrefectServer)  # the client side only: no server process
    helper.api_url = f"http://127.0.0.1:{server.server_address[1]}/api"
    try:
        yield helper, calls
    finally:
        server.shutdown()


def test_a_503_is_retried_until_the_server_answers():
    with serving([503, 503, 200]) as (helper, calls):
        assert helper.post("/deployments/x/create_flow_run") == {"path": "/api/deployments/x/create_flow_run"}
    assert len(calls) == 3


def test_a_server_that_stays_unavailable_fails_after_the_clients_retries():
    with serving([503]) as (helper, calls), pytest.raises(httpx.HTTPStatusError, match="503"):
        helper.post("/flow_runs/filter")
    assert len(calls) == CLIENT_RETRIES + 1


def test_other_errors_are_not_retried():
    with serving([404]) as (helper, calls), pytest.raises(httpx.HTTPStatusError, match="404"):
        helper.post("/flow_runs/filter")
    assert len(calls) == 1
