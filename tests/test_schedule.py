"""Scheduled labelling: the TOML schedule is checked field by field when loaded, and each
job becomes a Prefect RunnerDeployment of the labelling flow (no server is started)."""

import importlib.util
import inspect
import os
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from prefect.deployments.runner import RunnerDeployment

import graphlabel.schedule as schedule
import graphlabel.serving as serving
from flows.labelling import labelling_flow
from graphlabel.schedule import (
    JOB_KEYS,
    Job,
    ScheduleError,
    deployments,
    jobs_from_env,
    load_schedule,
    parse_schedule,
)

ROOT = Path(__file__).resolve().parent.parent
VALID = """
store = "neo4j://graph.example:7687"

[[jobs]]
dataset = "products"
cron = "0 3 * * *"
solver = "mincut"
solver_params = { alpha = 0.1, max_sweeps = 5 }
k = 15
graph = "knn"

[[jobs]]
name = "digits-delta"
dataset = "digits"
cron = "*/30 * * * 1-5"
graph = "delta"
delta = 0.5
store = "stores/digits"
"""


def write(tmp_path, text, name="schedule.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_valid_schedule_loads_with_defaults(tmp_path):
    first, second = load_schedule(write(tmp_path, VALID))
    assert first == Job(name="label-products-mincut", dataset="products", cron="0 3 * * *", solver="mincut",
                        solver_params={"alpha": 0.1, "max_sweeps": 5}, k=15, graph="knn", delta=None, full=None,
                        store_uri="neo4j://graph.example:7687")
    assert (second.name, second.solver, second.k, second.delta) == ("digits-delta", "harmonic", 10, 0.5)
    # a relative store folder is the one beside the file, wherever the server starts
    assert second.store_uri == str((tmp_path / "stores" / "digits").resolve())
    assert "full" not in first.parameters()
    assert "delta" not in first.parameters()


def test_a_relative_embedded_store_keeps_its_engine(tmp_path):
    text = ('[[jobs]]\ndataset = "digits"\ncron = "0 3 * * *"\nstore = "ladybug://stores/digits"\n'
            '[[jobs]]\nname = "k"\ndataset = "digits"\ncron = "0 4 * * *"\nstore = "kuzu://stores/k"\n')
    lady, kuzu = load_schedule(write(tmp_path, text))
    assert lady.store_uri == f"ladybug://{(tmp_path / 'stores' / 'digits').resolve()}"
    assert kuzu.store_uri == f"kuzu://{(tmp_path / 'stores' / 'k').resolve()}"


def test_the_example_file_loads():
    jobs = load_schedule(ROOT / "graphlabel.example.toml")
    assert [job.name for job in jobs] == ["digits-nightly", "digits-weekly-maxmargin"]
    assert jobs[0].store_uri == str((ROOT / ".graphlabel").resolve())


def job_with(**fields):
    job = {"dataset": "products", "cron": "0 3 * * *"}
    job.update(fields)
    return {"jobs": [{k: v for k, v in job.items() if v is not None}]}


@pytest.mark.parametrize("fields, message", [
    ({"dataset": "1bad name"}, r"jobs\[0\]: invalid dataset name '1bad name'"),
    ({"dataset": None}, r"jobs\[0\]: missing required field 'dataset'"),
    ({"cron": None}, r"needs a schedule: cron = .* or interval = SECONDS"),
    ({"interval": 600}, r"has both cron and interval; give one"),
    ({"cron": None, "interval": 0.5}, r"interval must be a number of seconds >= 1, got 0.5"),
    ({"cron": None, "interval": "10m"}, r"interval must be a number of seconds >= 1, got '10m'"),
    ({"cron": "every night"}, r"dataset 'products'\): cron 'every night' must have 5 fields"),
    ({"cron": "61 3 * * *"}, r"cron '61 3 \* \* \*' has '61' in its minute field, which takes 0-59"),
    # Prefect said "Invalid cron string" of these, naming no field
    ({"cron": "0 25 * * *"}, r"cron '0 25 \* \* \*' has '25' in its hour field, which takes 0-23"),
    ({"cron": "0 3 * * 8"}, r"has '8' in its weekday field, which takes 0-7 or sun-sat"),
    ({"cron": "0 3 1-40 * *"}, r"has '1-40' in its day of the month field, which takes 1-31"),
    # Prefect takes these, and its scheduler never starts a run of them
    ({"cron": "0 3 31 2 *"}, r"cron '0 3 31 2 \*' matches no date .*: Prefect's scheduler would never start"),
    ({"cron": "0 0 31 4,6,9,11 *"}, r"matches no date"),
    ({"cron": 3}, r"cron must be a string"),
    ({"solver": "magic"}, r"solver must be one of \[.*'harmonic'.*\], got 'magic'"),
    ({"solver_params": "gamma_g=0.1"}, r"solver_params must be a table"),
    # checked as the run would check them, not at 3 a.m.
    ({"solver": "mincut", "solver_params": {"gamma_g": 0.1}},
     r"solver_params: mincut has no parameter 'gamma_g'; its parameters: alpha"),
    ({"solver": "mincut", "solver_params": {"unreached": "x"}},
     r"solver_params: unreached must be one of 'none', 'paper', 'nearest', got"),
    ({"k": 0}, r"k must be a positive integer, got 0"),
    ({"k": "10"}, r"k must be a positive integer, got '10'"),
    ({"k": True}, r"k must be a positive integer, got True"),
    ({"graph": "full"}, r"graph must be one of \['knn', 'delta'"),
    ({"graph": "delta"}, r"graph \"delta\" needs delta"),
    ({"delta": -1.0}, r"delta must be a positive number, got -1.0"),
    ({"metric": "manhattan"}, r"metric must be one of \['euclidean', 'cosine'\], got 'manhattan'"),
    ({"weights": "heat"}, r"weights must be one of \['gaussian', 'cosine', 'binary'\], got 'heat'"),
    ({"sigma": 0}, r"sigma must be a positive number, got 0"),
    ({"full": "yes"}, r"full must be true or false, got 'yes'"),
    ({"keep_runs": 0}, r"keep_runs must be a positive integer, got 0"),
    ({"holdout": 1.5}, r"holdout must be a number in \[0, 1\), got 1.5"),
    ({"store": ""}, r"store must be a store URI"),
    ({"name": "has space"}, r"name must be 1-100 letters"),
    ({"solvr": "harmonic"}, r"unknown field\(s\) \['solvr'\]"),
    ({"graph": "edges:"}, r"graph 'edges:': invalid relationship type ''"),
    ({"edges_weight": 0.5}, r"edges_weight weighs the user's edges in a sum"),
    ({"graph": "knn+edges:CO", "edges_weight": -1}, r"edges_weight must be a positive number, got -1"),
    ({"search": "annoy"}, r"search must be one of \['auto', 'exact', 'hnsw'"),
    ({"graph": "sgt", "search": "hnsw"}, r"a sgt graph has none to search"),
])
def test_each_invalid_field_is_named(fields, message):
    with pytest.raises(ScheduleError, match=message):
        parse_schedule(job_with(**fields), "s.toml")


@pytest.mark.parametrize("document, message", [
    ({}, "no jobs"),
    ({"jobs": []}, "no jobs"),
    ({"jobs": ["products"]}, r"jobs\[0\]: a job must be a table"),
    ({"store": 5, **job_with()}, "store must be a store URI"),
    ({"stores": "x", **job_with()}, r"unknown top-level field\(s\) \['stores'\]"),
    ({"store": "neo4j://neo4j:s3cret@db:7687", **job_with()}, r"s.toml: the store URI \S*@db:7687 holds credentials"),
    ({"jobs": job_with()["jobs"] * 2}, r"job names must be unique, \['label-products-harmonic'\]"),
])
def test_invalid_schedules_are_refused(document, message):
    with pytest.raises(ScheduleError, match=message) as raised:
        parse_schedule(document, "s.toml")
    assert "s3cret" not in str(raised.value)


def test_every_problem_in_the_file_is_reported_not_only_the_first():
    document = {"stores": "x", "jobs": [
        {"dataset": "toy", "cron": "61 3 * * *", "k": "five", "solver": "magic"},
        {"dataset": "1bad", "interval": 0.5},
        {"dataset": "ok", "interval": 60},
        {"dataset": "params", "interval": 60, "solver_params": {"gamma_g": -1, "noise_threshold": 7, "foo": 2}},
    ]}
    with pytest.raises(ScheduleError) as raised:
        parse_schedule(document, "s.toml")
    assert raised.value.problems == [
        "s.toml: unknown top-level field(s) ['stores']; a schedule takes ['jobs', 'store']",
        "s.toml: jobs[0] (dataset 'toy'): cron '61 3 * * *' has '61' in its minute field, which takes 0-59",
        "s.toml: jobs[0] (dataset 'toy'): solver must be one of"
        " ['harmonic', 'mincut', 'lcsnc', 'spectral', 'maxmargin', 'nmf', 'auto'], got 'magic'",
        "s.toml: jobs[0] (dataset 'toy'): k must be a positive integer, got 'five'",
        "s.toml: jobs[1]: invalid dataset name '1bad': use 1-64 letters, digits, '_', '.' or '-',"
        " starting with a letter",
        "s.toml: jobs[1]: interval must be a number of seconds >= 1, got 0.5",
        # each solver parameter on its own (only the first was said)
        "s.toml: jobs[3] (dataset 'params'): solver_params: gamma_g must be a finite number >= 0 or inf, got -1",
        "s.toml: jobs[3] (dataset 'params'): solver_params: noise_threshold must be a finite number in (0, 1],"
        " got 7",
        "s.toml: jobs[3] (dataset 'params'): solver_params: harmonic has no parameter 'foo'; its parameters:"
        " gamma_g, gamma_d, class_mass, noise_threshold, loo, noisy_labels, detect_noise, calibrate, solver,"
        " direct_max_nodes, rtol, stop, resolve_hops",
    ]
    assert str(raised.value) == "\n".join(raised.value.problems)


def test_an_interval_job_becomes_an_interval_deployment():
    (job,) = parse_schedule(job_with(cron=None, interval=90), "s.toml")
    assert (job.cron, job.interval, job.schedule) == (None, 90.0, "every 90 s")
    assert parse_schedule(job_with(cron=None, interval=600), "s.toml")[0].schedule == "every 10 min"
    assert parse_schedule(job_with(), "s.toml")[0].schedule == "cron 0 3 * * * (UTC)"
    (made,) = deployments([job])
    (schedule_,) = made.schedules
    assert schedule_.schedule.interval.total_seconds() == 90
    assert schedule_.schedule.timezone == "UTC"
    assert made.tags == ["graphlabel", "products", "harmonic", "scheduled"]  # its runs tag their kind
    assert "every 90 s" in made.description
    assert "incremental" in made.description


def test_a_job_can_remove_a_solvers_time_limit():
    # TOML has no null: "none" is how a job says what --params '{"time_limit": null}' says
    (job,) = parse_schedule(tomllib.loads('[[jobs]]\ndataset = "d"\ninterval = 60\nsolver = "lcsnc"\n'
                                          'solver_params = { time_limit = "none" }\n'), "s.toml")
    assert job.solver_params == {"time_limit": "none"}


def test_a_misspelt_field_is_named_with_the_field_it_is_close_to_and_said_once():
    document = {"jobs": [{"dataset": "wine", "intervall": 60, "name": "wine-hourly"}]}
    with pytest.raises(ScheduleError) as raised:
        parse_schedule(document, "s.toml")
    # once: not again as the schedule it leaves missing ("needs a schedule"); the job by its name too
    assert raised.value.problems == [
        "s.toml: jobs[0] (name 'wine-hourly', dataset 'wine'): unknown field(s) ['intervall'] (did you mean"
        f" 'interval' for 'intervall'?); a job takes {sorted(JOB_KEYS)}"]


def test_a_misspelt_graph_does_not_hide_the_other_graph_options_problems():
    # which options apply depends on the kind: a misspelt kind was said alone, and the bad k
    # and metric only once it was mended
    document = {"jobs": [{"dataset": "wine", "interval": 60, "graph": "knnn", "k": 0, "metric": "cosin"}]}
    with pytest.raises(ScheduleError) as raised:
        parse_schedule(document, "s.toml")
    said = " ".join(raised.value.problems)
    for problem in ("graph must be one of", "got 'knnn'", "k must be a positive integer, got 0",
                    "metric must be one of ['euclidean', 'cosine', 'hamming'], got 'cosin'"):
        assert problem in said, said


def test_a_file_that_is_not_toml_is_named(tmp_path):
    path = write(tmp_path, "[[jobs]\ndataset = ")
    with pytest.raises(ScheduleError, match=r"schedule.toml: not valid TOML"):
        load_schedule(path)
    with pytest.raises(ScheduleError, match=r"^no schedule file '.*missing\.toml' \(graphlabel\.example\.toml is one"):
        load_schedule(tmp_path / "missing.toml")  # was Python's "[Errno 2] No such file or directory"
    # a file saved as latin-1 and a folder given as the file ended in tracebacks (a newcomer's walk)
    latin = tmp_path / "latin.toml"
    latin.write_bytes('store = "café"\n'.encode("latin-1"))
    with pytest.raises(ScheduleError, match=r"latin\.toml: not valid TOML: a TOML file is UTF-8 text, and byte 0xe9 at"
                                            r" position 12 is not \(save the file as UTF-8\)$"):
        load_schedule(latin)
    with pytest.raises(ScheduleError, match=r"^cannot read the schedule file '.*': Is a directory$"):
        load_schedule(tmp_path)


def test_deployments_carry_each_jobs_cron_and_parameters(tmp_path):
    jobs = load_schedule(write(tmp_path, VALID))
    made = deployments(jobs)
    assert all(isinstance(d, RunnerDeployment) for d in made)
    assert [d.name for d in made] == ["label-products-mincut", "digits-delta"]
    assert [[s.schedule.cron for s in d.schedules] for d in made] == [["0 3 * * *"], ["*/30 * * * 1-5"]]
    assert [[s.schedule.timezone for s in d.schedules] for d in made] == [["UTC"], ["UTC"]]
    assert made[0].flow_name == labelling_flow.name
    # a served run's engine imports its flow from the entrypoint: a Prefect flow must be there
    from prefect.flows import load_flow_from_entrypoint

    assert load_flow_from_entrypoint(made[0].entrypoint, use_placeholder_flow=False).name == "label-dataset"
    assert made[0].parameters == {"dataset": "products", "store_uri": "neo4j://graph.example:7687",
                                  "solver": "mincut", "solver_params": {"alpha": 0.1, "max_sweeps": 5},
                                  "graph": "knn", "k": 15, "metric": "euclidean", "weights": "gaussian"}
    assert made[1].parameters["delta"] == 0.5
    assert made[1].parameters["graph"] == "delta"
    # every parameter is one the flow takes
    accepted = set(inspect.signature(labelling_flow.fn).parameters)
    assert all(set(d.parameters) <= accepted for d in made)


def test_a_job_labels_over_the_users_edges():
    (job,) = parse_schedule(job_with(graph="knn+edges:CO_PURCHASED:count", edges_weight=0.5), "s.toml")
    parameters = job.parameters()
    assert (parameters["graph"], parameters["edges_weight"]) == ("knn+edges:CO_PURCHASED:count", 0.5)
    assert "edges_weight" in inspect.signature(labelling_flow.fn).parameters
    assert "edges_weight" not in parse_schedule(job_with(graph="edges:CO"), "s.toml")[0].parameters()


def test_full_is_passed_only_when_the_file_sets_it():
    job = parse_schedule(job_with(full=True), "s.toml")[0]
    assert job.parameters()["full"] is True
    assert "full" not in parse_schedule(job_with(), "s.toml")[0].parameters()
    if "full" in inspect.signature(labelling_flow.fn).parameters:
        assert deployments([job])[0].parameters["full"] is True
    else:  # before incremental runs: refused at start-up rather than failing every run
        with pytest.raises(ScheduleError, match=r"takes no parameter\(s\) \['full'\]"):
            deployments([job])


def test_jobs_from_the_environment(tmp_path):
    (job,) = jobs_from_env({"GRAPHLABEL_STORE": "bolt://neo4j:7687", "LABEL_DATASET": "items",
                            "LABEL_SOLVER": "nmf", "LABEL_K": "7", "LABEL_CRON": "15 2 * * *",
                            "LABEL_SOLVER_PARAMS": '{"beta": 2.0}'})
    assert job == Job(name="scheduled-labelling", dataset="items", cron="15 2 * * *", solver="nmf",
                      solver_params={"beta": 2.0}, k=7, store_uri="bolt://neo4j:7687")
    (default,) = jobs_from_env({})
    assert (default.dataset, default.solver, default.k, default.cron, default.store_uri) == \
        ("digits", "harmonic", 10, "0 3 * * *", None)
    with pytest.raises(ScheduleError, match="LABEL_K must be an integer, got 'ten'"):
        jobs_from_env({"LABEL_K": "ten"})
    with pytest.raises(ScheduleError,
                       match=r"environment: jobs\[0\] \(name 'scheduled-labelling', dataset 'digits'\): cron"):
        jobs_from_env({"LABEL_CRON": "daily"})
    path = write(tmp_path, VALID)
    assert [j.name for j in jobs_from_env({"GRAPHLABEL_SCHEDULE": str(path), "LABEL_K": "ten"})] == \
        ["label-products-mincut", "digits-delta"]


def test_the_compose_labeller_serves_through_the_same_code_path(monkeypatch, tmp_path, capsys):
    served = []
    monkeypatch.setattr(serving, "serve", served.append)
    monkeypatch.setattr(schedule, "server_problem", lambda: None)  # tests/test_docker_image.py runs it for real
    monkeypatch.setenv("LABEL_DATASET", "items")
    monkeypatch.setenv("GRAPHLABEL_STORE", str(tmp_path / "store"))
    monkeypatch.delenv("GRAPHLABEL_SCHEDULE", raising=False)
    spec = importlib.util.spec_from_file_location("serve_labelling", ROOT / "docker" / "serve_labelling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main() == 0
    (jobs,) = served
    assert [(j.name, j.dataset) for j in jobs] == [("scheduled-labelling", "items")]
    # what serve warns of, it warns of: served all the same
    assert capsys.readouterr().err == (
        f"warning: job 'scheduled-labelling' cannot run now: no store at {tmp_path}/store: ingest the dataset there"
        f" first (graphlabel ingest FILE --dataset items --store {tmp_path}/store), or check the schedule's store;"
        " served all the same, its runs fail until that changes\n")


def test_retention_and_holdout_reach_the_flow():
    job = parse_schedule(job_with(keep_runs=30, holdout=0.1), "s.toml")[0]
    made = deployments([job])[0].parameters
    assert made["keep_runs"] == 30
    assert made["holdout_fraction"] == 0.1
    assert "keep_runs" not in parse_schedule(job_with(), "s.toml")[0].parameters()


def test_graph_metric_weights_and_sigma_reach_the_flow():
    for graph in ("sgt", "mutual_knn", "mincut3"):
        job = parse_schedule(job_with(graph=graph, metric="cosine", weights="cosine", sigma=0.7), "s.toml")[0]
        assert job.parameters()["graph"] == graph
        assert (job.parameters()["metric"], job.parameters()["weights"], job.parameters()["sigma"]) == (
            "cosine", "cosine", 0.7)
        assert set(job.parameters()) <= set(inspect.signature(labelling_flow.fn).parameters)


def test_the_knn_search_reaches_the_flow_only_when_set():
    assert "search" not in parse_schedule(job_with(), "s.toml")[0].parameters()
    job = parse_schedule(job_with(search="ivf"), "s.toml")[0]
    assert job.parameters()["search"] == "ivf"
    assert set(job.parameters()) <= set(inspect.signature(labelling_flow.fn).parameters)


def test_runs_of_one_job_never_overlap():
    # a run still going when the next is due (lcsnc took 75-189 s on a */2 cron under a real
    # server) made the next one wait at the store's lock and fail; one at a time instead
    made = deployments(parse_schedule(job_with(), "s.toml") + parse_schedule(job_with(name="b"), "s.toml"))
    assert [d.concurrency_limit for d in made] == [1, 1]


def test_jobs_that_can_meet_at_one_store_are_warned_of():
    embedded = parse_schedule({"store": "/data/store", "jobs": [
        {"name": "a", "dataset": "x", "cron": "0 3 * * *"},
        {"name": "b", "dataset": "y", "cron": "0 4 * * *"},
        {"name": "c", "dataset": "z", "cron": "0 5 * * *", "store": "/data/other"}]}, "s.toml")
    (warning,) = schedule.shared_store_warnings(embedded)
    assert "'a' and 'b' share the embedded store /data/store" in warning
    neo4j = parse_schedule({"store": "bolt://graph:7687", "jobs": [
        {"name": "a", "dataset": "x", "cron": "0 3 * * *"},
        {"name": "b", "dataset": "y", "cron": "0 4 * * *"},
        {"name": "c", "dataset": "x", "cron": "0 5 * * *", "solver": "mincut"}]}, "s.toml")
    (warning,) = schedule.shared_store_warnings(neo4j)
    assert "'a' and 'c' both label dataset 'x'" in warning
    assert schedule.shared_store_warnings(neo4j[:2]) == []


def test_every_parameter_of_a_served_job_is_described_for_the_ui():
    # Prefect reads Google-style docstrings only; ours are numpydoc, and the UI's run form
    # showed 19 bare parameter names
    from flows.direct import parameter_descriptions

    (made,) = deployments(parse_schedule(job_with(), "s.toml"))
    schema = made._parameter_openapi_schema.properties
    assert set(schema) == set(inspect.signature(labelling_flow.fn).parameters)
    assert all(field.get("description") for field in schema.values()), [n for n, f in schema.items()
                                                                       if not f.get("description")]
    assert schema["k"]["description"].startswith("Neighbours per node")
    assert labelling_flow.parameters.properties["holdout_fraction"]["description"].startswith("Share of")
    assert parameter_descriptions(lambda x: x) == {}


@pytest.mark.parametrize(("api_url", "says"), [
    (None, "error: serve needs a Prefect server, whose scheduler creates the runs: start one (prefect server start)"),
    ("http://127.0.0.1:{port}/api", "error: no Prefect server answers at http://127.0.0.1:{port}/api"),
])
def test_serve_without_a_server_it_can_reach_refuses_in_one_line(tmp_path, api_url, says):
    """Without PREFECT_API_URL Prefect served the deployments on a temporary server, printed
    "Your deployments are being served", and no scheduled run ever fired (a newcomer's walk)."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = write(tmp_path, f'store = "{tmp_path / "store"}"\n\n[[jobs]]\nname = "j"\ndataset = "d"\ninterval = 60\n')
    env = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_")}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")  # no profile that names a server
    if api_url is not None:
        env["PREFECT_API_URL"] = api_url.format(port=port)
    done = subprocess.run([str(Path(sys.executable).with_name("graphlabel")), "serve", "--config", str(config)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert " ".join(lines[-1].split()).startswith(says.format(port=port)), done.stderr
    assert "Traceback" not in done.stderr
    assert "being served" not in done.stdout + done.stderr


def test_jobs_of_one_dataset_on_different_graphs_are_warned_about(tmp_path):
    """The example file's two digits jobs had k 10 and 15, scale none and standard: each
    scheduled run rebuilds its graph, so each job's runs replaced the other's graph."""
    text = ('store = "s"\n[[jobs]]\nname = "a"\ndataset = "d"\ncron = "0 3 * * *"\nk = 10\nscale = "none"\n'
            '[[jobs]]\nname = "b"\ndataset = "d"\ncron = "0 5 * * 0"\nk = 15\n'
            '[[jobs]]\nname = "c"\ndataset = "other"\ncron = "0 6 * * 0"\nk = 15\n')
    warnings = schedule.shared_store_warnings(load_schedule(write(tmp_path, text)))
    graphs = [w for w in warnings if "on different graphs" in w]
    assert graphs == [
        "jobs 'a' and 'b' label dataset 'd' on different graphs (k 10 and 15; scale none and standard): a scheduled"
        " run rebuilds the graph it is given, so each job's runs replace the other's graph; give them the same"
        " graph settings"]
    example = schedule.shared_store_warnings(load_schedule(ROOT / "graphlabel.example.toml"))
    assert not [w for w in example if "on different graphs" in w]
