"""The labeller's image (docker/Dockerfile), built without Docker: no image can be pulled on
the project's machines, so the test follows the file itself. A fresh venv of this Python
stands for ``python:3.11-slim``; each ``COPY`` copies into a folder that stands for the
image's ``/app``; each ``RUN pip ...`` runs there with the venv's pip (the ``RUN`` that adds
a user is left out). Then every module of the installed wheel is imported from the venv,
and the ``CMD`` is started: with a bad setting it must end in one line, and with a schedule
it must serve a real Prefect server until a run completes, and stop on SIGTERM as ``docker
stop`` sends it.

The image did not hold the ``labelling`` package (its ``COPY`` lines predated it), so its
flows could not be imported, and it installed the test tools and the text extra's PyTorch
CUDA wheels (3 GB to download) with them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from prefect_server import PrefectServer, stop
from test_schedule_server import ingest_moons

from graphstore import open_store

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "docker" / "Dockerfile"
SERVE_SECONDS = 240


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (keyword, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines
            if line and not line.startswith("#")]


def pyproject_contents() -> set[str]:
    """What pyproject.toml says the wheel holds: its packages and the folders forced in."""
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    return set(wheel["packages"]) | set(wheel.get("force-include", {}))


def test_the_image_copies_every_package_pyproject_lists_and_installs_the_run_lock():
    copied = {source.rstrip("/") for keyword, arguments in instructions() if keyword == "COPY"
              for source in shlex.split(arguments)[:-1]}
    assert pyproject_contents() <= copied, sorted(pyproject_contents() - copied)
    runs = [arguments for keyword, arguments in instructions() if keyword == "RUN"]
    assert "pip install -r requirements-run.lock" in runs
    assert "pip install --no-deps ." in runs


def pins(lock: str) -> dict[str, set[str]]:
    """A lock file's versions by package (a package may have one per Python marker)."""
    found: dict[str, set[str]] = {}
    for line in (ROOT / lock).read_text().splitlines():
        if match := re.match(r"([A-Za-z0-9_.-]+)==([^\s;]+)", line):
            found.setdefault(match[1].lower(), set()).add(match[2])
    return found


def test_the_run_lock_is_the_full_locks_pins_without_the_extras():
    run, full = pins("requirements-run.lock"), pins("requirements.lock")
    assert {name: versions for name, versions in run.items() if not versions <= full.get(name, set())} == {}
    assert {"prefect", "ladybug", "neo4j", "scipy"} <= run.keys()
    assert not {"torch", "sentence-transformers", "pytest", "scikit-network"} & run.keys()


def build(image: Path, venv: Path) -> None:
    """Follow the Dockerfile: COPY into ``image``, RUN pip with ``venv``'s pip there."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    for keyword, arguments in instructions():
        words = shlex.split(arguments)
        if keyword == "COPY":
            *sources, destination = words
            for source in sources:
                target = image / destination
                if destination.endswith("/"):
                    target = target / Path(source).name
                target.parent.mkdir(parents=True, exist_ok=True)
                if (ROOT / source).is_dir():
                    shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy2(ROOT / source, target)
        elif keyword == "RUN" and words[0] == "pip":
            done = subprocess.run([str(venv / "bin" / "pip"), "--quiet", *words[1:]], cwd=image,
                                  capture_output=True, text=True, timeout=1800)
            assert done.returncode == 0, f"RUN {arguments}:\n{done.stdout}{done.stderr}"


IMPORT_EVERY_MODULE = """
import importlib, pkgutil, sys
site, packages = sys.argv[1], sys.argv[2:]
failed, elsewhere, imported = [], [], 0
for package in packages:
    module = importlib.import_module(package)
    names = [package] + [info.name for info in pkgutil.walk_packages(module.__path__, package + ".")
                         if not info.name.endswith(".__main__")]  # a command, run on import
    for name in names:
        try:
            loaded = importlib.import_module(name)
        except Exception as error:
            failed.append(f"{name}: {type(error).__name__}: {error}")
            continue
        imported += 1
        if not loaded.__file__.startswith(site):
            elsewhere.append(f"{name}: {loaded.__file__}")
print(imported)
assert not failed, failed
assert not elsewhere, elsewhere
"""


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    folder = tmp_path_factory.mktemp("image")
    app, venv = folder / "app", folder / "venv"
    app.mkdir()
    build(app, venv)
    return app, venv


def cmd(app: Path, venv: Path) -> list[str]:
    (command,) = [arguments for keyword, arguments in instructions() if keyword == "CMD"]
    program, *arguments = eval(command)  # a JSON list, as the exec form is written  # noqa: S307
    assert program == "python"
    return [str(venv / "bin" / "python"), *arguments]


def start(app: Path, venv: Path, env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """The image's CMD in its WORKDIR, its output in ``log_path``."""
    with log_path.open("wb") as log:
        return subprocess.Popen(cmd(app, venv), cwd=app, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def wait_for(found, labeller: subprocess.Popen, log_path: Path, deadline: float):
    """What ``found()`` returns once it returns something, while the labeller keeps running."""
    while time.monotonic() < deadline:
        assert labeller.poll() is None, log_path.read_text()
        if result := found():
            return result
        time.sleep(2)
    raise AssertionError(f"not in time; the labeller said:\n{log_path.read_text()[-3000:]}")


def test_every_module_of_the_image_imports_from_what_it_installed(image, tmp_path):
    app, venv = image
    script = tmp_path / "import_every_module.py"  # not in /app: a script's folder leads sys.path
    script.write_text(IMPORT_EVERY_MODULE)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip()
    packages = sorted(pyproject_contents() - {"cypher"})
    done = subprocess.run([str(venv / "bin" / "python"), str(script), site, *packages], cwd=app,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    in_the_repository = [path for package in packages for path in (ROOT / package).rglob("*.py")
                         if path.name != "__main__.py" and "__pycache__" not in path.parts]
    assert int(done.stdout.split()[-1]) == len(in_the_repository)  # each module, none left out
    assert (Path(site) / "cypher" / "read_edges.neo4j.cypher").is_file()


def test_the_images_command_ends_bad_settings_in_one_line(image):
    app, venv = image
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "LABEL_", "GRAPHLABEL_"))}
    done = subprocess.run(cmd(app, venv), cwd=app, env={**env, "LABEL_K": "ten"}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip() == "error: environment: LABEL_K must be an integer, got 'ten'"
    assert done.stdout == ""


def test_the_images_command_serves_a_prefect_server_and_stops_on_docker_stop(image, tmp_path):
    app, venv = image
    store = str(tmp_path / "store")
    ingest_moons(tmp_path, store)
    schedule = tmp_path / "schedule.toml"
    schedule.write_text(f'store = "{store}"\n\n[[jobs]]\nname = "moons-in-image"\ndataset = "moons"\n'
                        'interval = 5\nk = 6\n')
    with PrefectServer(tmp_path / "prefect") as server:
        log_path = tmp_path / "labeller.log"
        labeller = start(app, venv, server.env(GRAPHLABEL_SCHEDULE=str(schedule), PREFECT_RUNNER_POLL_FREQUENCY="2"),
                         log_path)
        try:
            wait_for(lambda: [run for run in server.deployment_runs("moons-in-image")
                              if run["state_type"] == "COMPLETED"], labeller, log_path,
                     time.monotonic() + SERVE_SECONDS)
            os.kill(labeller.pid, signal.SIGTERM)  # docker stop: SIGTERM to the CMD's process
            assert labeller.wait(60) == 0, log_path.read_text()[-3000:]
        finally:
            stop(labeller)
    said = log_path.read_text()
    assert "stopped (SIGTERM)" in said.splitlines()[-1], said[-2000:]
    assert "Traceback" not in said, said
    with open_store(store) as opened:
        assert "completed" in set(opened.read_runs("moons")["status"])


@pytest.mark.neo4j
def test_the_images_command_labels_the_live_neo4j_as_compose_configures_it(image, neo4j_live, dataset, tmp_path):
    """The compose file's labeller: its environment (docker-compose.yml's ``labeller``), the
    session's live Neo4j + GDS for its ``neo4j`` service, a run started from the UI's
    button (the API call behind it), predictions written back into Neo4j."""
    from test_neo4j_live_schedule import ingest_digits

    app, venv = image
    with PrefectServer(tmp_path / "prefect") as server:
        env = server.env(GRAPHLABEL_STORE=neo4j_live.uri, **neo4j_live.environment(), LABEL_DATASET=dataset,
                         LABEL_SOLVER="harmonic", LABEL_K="6", LABEL_CRON="0 3 * * *",
                         PREFECT_RUNNER_POLL_FREQUENCY="2")
        ingest_digits(tmp_path, env, neo4j_live.uri, dataset)
        log_path = tmp_path / "labeller.log"
        labeller = start(app, venv, env, log_path)
        try:
            deadline = time.monotonic() + SERVE_SECONDS
            deployment = wait_for(lambda: server.post("/deployments/filter", {"deployments": {"name": {
                "any_": ["scheduled-labelling"]}}}), labeller, log_path, deadline)
            server.post(f"/deployments/{deployment[0]['id']}/create_flow_run", {})  # the UI's "Run" button

            def completed() -> list[dict]:
                runs = server.deployment_runs("scheduled-labelling")
                assert not [run for run in runs if run["state_type"] in ("FAILED", "CRASHED")], \
                    log_path.read_text()[-3000:]
                return [run for run in runs if run["state_type"] == "COMPLETED"]

            wait_for(completed, labeller, log_path, deadline)
            os.kill(labeller.pid, signal.SIGTERM)
            assert labeller.wait(60) == 0, log_path.read_text()[-3000:]
        finally:
            stop(labeller)
    said = log_path.read_text()
    assert "Traceback" not in said, said
    assert neo4j_live.password not in said
    with neo4j_live.driver() as driver:
        labelled = driver.execute_query("MATCH (n:Entity {dataset: $dataset}) WHERE n.predicted_label IS NOT NULL"
                                        " RETURN count(n) AS labelled", dataset=dataset).records[0]["labelled"]
    assert labelled == 600
