"""A real Prefect server for tests: ``prefect server start`` from this venv on a free
loopback port, with its own PREFECT_HOME (and so its own SQLite database) in a temporary
folder, its scheduler services on as a user's server has them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prefect_env(home: Path, api_url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a process that uses the server at ``api_url`` (or none)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT="false")
    if api_url:
        env["PREFECT_API_URL"] = api_url
    env.update(extra)
    return env


class PrefectServer:
    """``with PrefectServer(folder) as server:`` runs a server until the block ends;
    ``server.api_url`` is its API, ``server.env()`` the environment of its clients."""

    def __init__(self, folder: Path, startup_seconds: float = 120.0) -> None:
        self.folder = Path(folder)
        self.home = self.folder / "prefect-home"
        self.port = free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self.ui_url = f"http://127.0.0.1:{self.port}"
        self.startup_seconds = startup_seconds
        self.process: subprocess.Popen | None = None
        self.log = self.folder / "prefect-server.log"

    def env(self, **extra: str) -> dict[str, str]:
        return prefect_env(self.home, self.api_url, **extra)

    def __enter__(self) -> PrefectServer:
        self.home.mkdir(parents=True, exist_ok=True)
        prefect = Path(sys.executable).with_name("prefect")
        server_env = prefect_env(self.home, None, PREFECT_SERVER_UI_API_URL=self.api_url)
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
                env=server_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.startup_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prefect server exited with {self.process.returncode}:\n{self.log_text()}")
            try:
                if httpx.get(f"{self.api_url}/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.__exit__(None, None, None)
        raise RuntimeError(f"prefect server not healthy after {self.startup_seconds} s:\n{self.log_text()}")

    def __exit__(self, *exc) -> None:
        stop(self.process)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-5000:] if self.log.exists() else ""

    def post(self, path: str, body: dict | None = None):
        return self.request("POST", path, json=body or {})

    def get(self, path: str):
        return self.request("GET", path)

    def request(self, method: str, path: str, **kwargs):
        """One API call, retried as Prefect's own client retries it (``PrefectHttpxAsyncClient``):
        on the statuses the server sends for errors a client may retry (503 for a busy SQLite
        database, the one CI met while a serve process registered its deployment), up to
        ``CLIENT_RETRIES`` times with exponential backoff, honouring ``Retry-After``."""
        for attempt in range(CLIENT_RETRIES + 1):
            response = httpx.request(method, f"{self.api_url}{path}", timeout=10, **kwargs)
            if response.status_code not in RETRY_STATUSES or attempt == CLIENT_RETRIES:
                break
            time.sleep(retry_seconds(response, attempt))
        response.raise_for_status()
        return response.json()

    def deployment_runs(self, name: str) -> list[dict]:
        """The flow runs of the deployment called ``name``, by expected start (none before
        it is registered)."""
        found = self.post("/deployments/filter", {"deployments": {"name": {"any_": [name]}}})
        if not found:
            return []
        return self.post("/flow_runs/filter", {"flow_runs": {"deployment_id": {"any_": [found[0]["id"]]}},
                                               "sort": "EXPECTED_START_TIME_ASC", "limit": 200})


#: Prefect's client retries these statuses (``prefect.client.base``: 408, 429, 502, 503) ...
RETRY_STATUSES = frozenset({408, 429, 502, 503})
#: ... this many times (``PREFECT_CLIENT_MAX_RETRIES``'s default).
CLIENT_RETRIES = 5


def retry_seconds(response: httpx.Response, attempt: int) -> float:
    """The wait before the next try: the server's ``Retry-After`` in seconds if it sent one,
    else 2**attempt seconds, as Prefect's client waits (without its jitter)."""
    header = response.headers.get("Retry-After", "")
    return float(header) if header.replace(".", "", 1).isdigit() else float(2**attempt)


def stop(process: subprocess.Popen | None, grace: float = 15.0) -> None:
    """Stop a process started with its own session, and its children."""
    if process is None or process.poll() is not None:
        return
    import signal

    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)
