"""Components as independent problems: the plan, the batches, and the merged prediction
against solving the whole graph at once."""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import make_blobs

from labelling.components import batch_problem, merge_predictions, plan_components
from similarity import knn_graph
from solvers import LabelProblem, solve


def islands(n_islands: int, size: int, seed: int = 0):
    """``n_islands`` separate kNN graphs of 3-class blobs, stacked block-diagonally."""
    rng = np.random.default_rng(seed)
    blocks, ys = [], []
    for i in range(n_islands):
        # overlapping blobs, so that each island is one connected component
        X, y = make_blobs(size, n_features=2, centers=3, cluster_std=2.0, center_box=(-3, 3),
                          random_state=seed + i)
        blocks.append(knn_graph(X, k=8))
        ys.append(y)
    W = sp.block_diag(blocks, format="csr")
    assert connected_components(W, directed=False)[0] == n_islands
    y_true = np.concatenate(ys)
    given = np.where(rng.random(len(y_true)) < 0.1, y_true, -1)
    return W, y_true, given


def solve_split(problem, solver, batch_nodes, **params):
    plan = plan_components(problem, batch_nodes)
    parts = [batch_problem(problem, nodes) for nodes in plan.batches]
    solved = [(part, solve(part.problem, solver, **params)) for part in parts]
    return plan, merge_predictions(problem, plan, solved, solver)


def test_plan_sorts_components_by_their_labels():
    W, _, y = islands(6, 60)
    y[60:120] = -1  # island 1: no label
    y[120:180] = np.where(y[120:180] >= 0, 2, -1)  # island 2: one class only
    y[120] = 2
    plan = plan_components(LabelProblem(W, y, n_classes=3), batch_nodes=130)
    assert plan.n_components == 6
    assert plan.n_unlabeled_components == 1
    np.testing.assert_array_equal(plan.single_class_nodes, np.arange(120, 180))
    assert set(plan.single_class.tolist()) == {2}
    batched = np.sort(np.concatenate(plan.batches))
    np.testing.assert_array_equal(batched, np.r_[0:60, 180:360])
    assert len(plan.batches) == 2  # 4 islands of 60 nodes packed by ~130


def test_a_component_larger_than_two_batches_leaves_no_batch_empty():
    # components of 60 nodes in batches of 25: each component is a batch of its own, numbered
    # without gaps (numbered by where it starts, 0, 2 and 4, the batches between were empty
    # and the run stopped on a batch with no nodes and no class)
    W, y_true, given = islands(3, 60)
    problem = LabelProblem(W, given, n_classes=3)
    params = {"detect_noise": False, "class_mass": "none"}  # global steps, as in the test below
    plan, merged = solve_split(problem, "harmonic", batch_nodes=25, **params)
    assert [len(nodes) for nodes in plan.batches] == [60, 60, 60]
    whole = solve(problem, "harmonic", **params)
    np.testing.assert_array_equal(merged.labels, whole.labels)


@pytest.mark.parametrize("solver", ["harmonic", "mincut"])
def test_split_solution_equals_the_whole_graph_solution(solver):
    # harmonic and mincut decompose over components: batching must not change a label
    W, _, y = islands(5, 80, seed=3)
    problem = LabelProblem(W, y, n_classes=3)
    # class mass normalisation is a global step (each batch normalises its own masses): off;
    # so are the noise flags, which move a flagged node's label (mincut's randomized cuts draw
    # other perturbations for a batch than for the whole graph)
    params = {"detect_noise": False, "class_mass": "none"} if solver == "harmonic" else {"noise": "none"}
    whole = solve(problem, solver, **params)
    plan, split = solve_split(problem, solver, batch_nodes=100, **params)
    assert len(plan.batches) >= 3
    np.testing.assert_array_equal(split.labels, whole.labels)
    if solver == "harmonic":
        np.testing.assert_allclose(split.scores, whole.scores, atol=1e-8)


def test_a_batch_judges_a_label_alone_in_it_as_the_whole_graph_does():
    # class 2's labels: one in island 0, two in island 1; alone in its batch is not alone in the run
    W, _, y = islands(2, 80, seed=1)
    y[y == 2] = -1
    y[[5, 90, 95]] = 2
    problem = LabelProblem(W, y, n_classes=3)
    plan = plan_components(problem, batch_nodes=60)
    assert len(plan.batches) == 2
    for nodes in plan.batches:
        part = batch_problem(problem, nodes)
        np.testing.assert_array_equal(part.problem.lone_labels, problem.lone_labels[nodes])
    assert not problem.lone_labels[5]
    whole = solve(problem, "harmonic", class_mass="none")
    _, split = solve_split(problem, "harmonic", 60, class_mass="none")
    np.testing.assert_array_equal(split.noisy, whole.noisy)
    assert split.noisy[5]  # island 0 holds no other label of class 2: judged, as in the whole graph


def test_unlabeled_and_single_class_components_get_the_documented_answer():
    W, _, y = islands(3, 50)
    y[50:100] = -1
    y[100:150] = np.where(np.arange(50) % 7 == 0, 1, -1)
    plan, prediction = solve_split(LabelProblem(W, y, n_classes=3), "harmonic", 1000, detect_noise=False)
    assert np.all(prediction.labels[50:100] == -1)
    assert np.all(prediction.confidence[50:100] == 0)
    assert np.all(prediction.labels[100:150] == 1)
    assert np.all(prediction.confidence[100:150] == 1)
    assert not prediction.noisy[100:150].any()
    assert prediction.info["n_batches"] == 1
    assert prediction.info["n_single_class_nodes"] == 50


def test_classes_are_renumbered_within_a_batch_and_mapped_back():
    # a batch whose labels are classes 3 and 7 of 8 is a two-class problem to the solver
    W, y_true, _ = islands(1, 90)
    y = np.full(90, -1)
    pick = np.flatnonzero(y_true == 0)[:3], np.flatnonzero(y_true == 1)[:3]
    y[pick[0]], y[pick[1]] = 3, 7
    problem = LabelProblem(W, y, n_classes=8)
    part = batch_problem(problem, np.arange(90))
    assert part.problem.n_classes == 2
    assert list(part.classes) == [3, 7]
    _, prediction = solve_split(problem, "harmonic", 1000, detect_noise=False)
    assert set(np.unique(prediction.labels).tolist()) <= {3, 7}
    assert prediction.scores.shape == (90, 8)
    assert np.all(prediction.scores[:, [0, 1, 2, 4, 5, 6]] == 0)


def test_one_connected_graph_is_solved_as_it_is():
    W, _, y = islands(1, 120)
    problem = LabelProblem(W, y, n_classes=3)
    plan = plan_components(problem)
    part = batch_problem(problem, plan.batches[0])
    assert part.problem is problem  # no copy of W for the usual, connected case


# ---------------------------------------------------------------------------------------
# The flow: components solved as mapped tasks, on threads and on a local Dask cluster.


@pytest.fixture
def island_store(store_path):
    """A Kùzu dataset of 12 islands (one component each) with their kNN edges."""
    import pyarrow as pa

    from graphstore import open_store
    from graphstore.schemas import edge_table

    W, y_true, given = islands(12, 60, seed=7)
    keys = np.array([f"n{i:04d}" for i in range(len(y_true))], dtype=object)
    nodes = pa.table({
        "key": pa.array(keys, pa.string()),
        "features": pa.array([[float(i)] for i in range(len(keys))], pa.list_(pa.float64())),
        "label": pa.array(np.where(given >= 0, given.astype(str), None).astype(object), pa.string()),
    })
    with open_store(store_path, create=True) as store:
        store.write_nodes("islands", nodes)
        store.replace_edges("islands", edge_table(keys, W))
    return store_path, W, given


def _predictions(store_path):
    from graphstore import open_store

    with open_store(store_path, create=True) as store:
        return store.query("MATCH (e:Entity) WHERE e.dataset = 'islands' "
                           "RETURN e.key AS key, e.predicted_label AS label").set_index("key")["label"].sort_index()


def _solve_task_runs(flow_run_id: str) -> list[str]:
    """The names of the flow run's solve task runs, sorted."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, TaskRunFilter, TaskRunFilterName

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
            task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_="solve")))
    return sorted(run.name for run in runs if run.name.startswith("solve"))


@pytest.mark.usefixtures("prefect_harness")
def test_flow_maps_the_solve_over_component_batches(island_store):
    from flows.labelling import labelling_flow

    store_path, W, given = island_store
    split = labelling_flow("islands", store_uri=store_path, build_graph=False, batch_nodes=150,
                           solver_params={"detect_noise": False, "class_mass": "none"})
    assert split["metrics"]["n_components"] == 12
    assert split["metrics"]["n_solver_batches"] == 4  # 12 islands of 60 nodes, ~150 per batch
    # one task run per batch, named by its place and size
    names = _solve_task_runs(split["run_id"])
    sizes = [re.fullmatch(rf"solve\[{i}/4: (\d+) nodes\]", name) for i, name in enumerate(names, 1)]
    assert all(sizes), names
    assert sum(int(m.group(1)) for m in sizes) % 60 == 0, names
    split_labels = _predictions(store_path)
    whole = labelling_flow("islands", store_uri=store_path, build_graph=False, split_components=False,
                           solver_params={"detect_noise": False, "class_mass": "none"})
    assert len(_solve_task_runs(whole["run_id"])) == 1
    assert split_labels.equals(_predictions(store_path))


def test_a_run_whose_components_are_each_over_two_batches_long_labels_them_all(island_store):
    from flows.labelling import labelling_flow

    store_path, _, given = island_store
    params = {"detect_noise": False, "class_mass": "none"}
    two_classes = sum(len(np.unique(island[island >= 0])) >= 2 for island in given.reshape(12, 60))
    packed = labelling_flow.fn("islands", store_uri=store_path, build_graph=False, batch_nodes=150,
                               solver_params=params)
    packed_labels = _predictions(store_path)
    alone = labelling_flow.fn("islands", store_uri=store_path, build_graph=False, batch_nodes=25,
                              solver_params=params)
    # islands of one class need no solve; every other island is a batch of its own
    assert (packed["metrics"]["n_solver_batches"], alone["metrics"]["n_solver_batches"]) == (4, two_classes)
    assert _predictions(store_path).equals(packed_labels)


@pytest.fixture
def solves_at_once(monkeypatch):
    """Counts the solves running at once: ``["most"]`` after the run."""
    import solvers
    from flows.direct import usable_cpus

    count, lock = {"running": 0, "most": 0}, threading.Lock()
    solve_one, cpus = solvers.solve, usable_cpus()

    def counted(*args, **kwargs):
        with lock:
            count["running"] += 1
            count["most"] = max(count["most"], count["running"])
        try:
            # each solve holds on until one per CPU have been seen at once (or 10 s went by): a
            # fixed pause alone counts on a loaded machine handing out the next batch within it
            deadline = time.monotonic() + 10
            while count["most"] < cpus and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.3)  # and time for a runner without a limit to start one more
            return solve_one(*args, **kwargs)
        finally:
            with lock:
                count["running"] -= 1

    monkeypatch.setattr(solvers, "solve", counted)
    return count


@pytest.mark.usefixtures("prefect_harness")
def test_a_flow_run_solves_at_most_one_batch_per_cpu_at_a_time(island_store, solves_at_once):
    # Prefect's default ThreadPoolTaskRunner() started every batch at once, and their working
    # memory added up (4.1x the peak of one batch at a time with 8 batches: bench/batch_threads.py)
    from flows.direct import usable_cpus
    from flows.labelling import labelling_flow

    store_path, _, _ = island_store
    run = labelling_flow("islands", store_uri=store_path, build_graph=False, batch_nodes=25)
    batches = run["metrics"]["n_solver_batches"]
    assert batches >= 8
    assert solves_at_once["most"] == min(usable_cpus(), batches)


def test_a_run_without_a_server_solves_one_batch_per_cpu_at_a_time(island_store, solves_at_once):
    from flows.direct import usable_cpus
    from flows.labelling import labelling_flow

    store_path, _, _ = island_store
    packed = labelling_flow.fn("islands", store_uri=store_path, build_graph=False, batch_nodes=150,
                               solver_params={"detect_noise": False, "class_mass": "none"})
    packed_labels = _predictions(store_path)
    assert solves_at_once["most"] == min(usable_cpus(), packed["metrics"]["n_solver_batches"])
    # the same labels as the whole graph solved at once
    labelling_flow.fn("islands", store_uri=store_path, build_graph=False, split_components=False,
                      solver_params={"detect_noise": False, "class_mass": "none"})
    assert _predictions(store_path).equals(packed_labels)


def test_the_thread_runner_takes_prefects_own_setting_of_its_threads():
    from prefect.settings import PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS, temporary_settings

    from flows.direct import usable_cpus
    from flows.runners import thread_runner

    assert thread_runner()._max_workers == usable_cpus()
    with temporary_settings(updates={PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS: 3}):
        assert thread_runner()._max_workers == 3


@pytest.mark.usefixtures("prefect_harness")
def test_a_dask_cluster_solves_the_batches_without_code_changes(island_store):
    from flows.labelling import labelling_flow
    from flows.runners import dask_runner

    store_path, _, _ = island_store
    threads = labelling_flow("islands", store_uri=store_path, build_graph=False, batch_nodes=150)
    on_threads = _predictions(store_path)
    dask_flow = labelling_flow.with_options(task_runner=dask_runner(n_workers=2))
    on_dask = dask_flow("islands", store_uri=store_path, build_graph=False, batch_nodes=150)
    assert len(_solve_task_runs(on_dask["run_id"])) == 4
    assert on_dask["metrics"]["class_counts"] == threads["metrics"]["class_counts"]
    assert _predictions(store_path).equals(on_threads)


def test_without_a_server_the_batches_run_here_or_on_a_dask_client(island_store):
    """No Prefect server: the flow's function runs directly, its batches in this process or,
    with ``dask_client``, on a local Dask cluster; the same labels either way."""
    from flows.labelling import labelling_flow
    from flows.runners import dask_client

    store_path, _, _ = island_store
    here = labelling_flow.fn("islands", store_uri=store_path, build_graph=False, batch_nodes=150)
    on_here = _predictions(store_path)
    from distributed import get_task_stream

    with dask_client(n_workers=2) as client:
        with get_task_stream(client) as stream:
            on_dask = labelling_flow.fn("islands", store_uri=store_path, build_graph=False, batch_nodes=150)
        assert len(client.scheduler_info()["workers"]) == 2
    assert len(stream.data) == 4  # one Dask task per batch
    assert here["metrics"]["n_solver_batches"] == on_dask["metrics"]["n_solver_batches"] == 4
    assert _predictions(store_path).equals(on_here)


def test_far_outliers_of_every_batch_are_named_by_their_node_in_the_whole_problem():
    """harmonic's faint nodes (``info["faint_nodes"]``, which the run's warning names) were
    lost when a problem was solved in several batches: the merged info kept nothing."""
    W, _, y = islands(3, 60)
    n = W.shape[0]
    far = [n, n + 1, n + 2]  # one far outlier per island, joined by weights of 1e-20
    W = sp.vstack([sp.hstack([W, sp.csr_matrix((n, 3))]), sp.csr_matrix((3, n + 3))]).tolil()
    for outlier, island in zip(far, range(3), strict=True):
        W[outlier, island * 60 + 5] = W[island * 60 + 5, outlier] = 1e-20
        W[outlier, island * 60 + 6] = W[island * 60 + 6, outlier] = 2e-20
    problem = LabelProblem(W.tocsr(), np.concatenate([y, [-1, -1, -1]]), n_classes=3)
    plan, merged = solve_split(problem, "harmonic", batch_nodes=70)
    assert len(plan.batches) >= 2  # several batches, each with its own node numbering
    assert sorted(merged.info["faint_nodes"].tolist()) == far
    assert merged.info["n_faint"] == 3
    assert (merged.labels[far] >= 0).all()


@pytest.mark.usefixtures("prefect_harness")
def test_a_run_in_batches_takes_one_class_mass_rule_for_all_of_them():
    """harmonic's class_mass="auto" reads the labelled share: each batch read its own, so a
    component's rule depended on the components packed with it. The run resolves it once,
    on the whole graph: here 16 labels of 240 nodes (6.7%, the smoothed masses), of which
    10 in the first island (17%, which alone would be centred)."""
    from prefect import flow

    from flows.solving import solve_by_component
    from labelling.options import RunOptions
    from labelling.problems import ExportedProblem
    from solvers.harmonic import class_mass_rule

    W, y_true, _ = islands(4, 60, seed=2)
    y = np.full(240, -1)
    for island, count in enumerate((10, 2, 2, 2)):
        y[island * 60 + np.arange(count) * 5] = y_true[island * 60 + np.arange(count) * 5]
    problem = LabelProblem(W, y, n_classes=3)
    plan = plan_components(problem, batch_nodes=60)
    first = batch_problem(problem, plan.batches[0]).problem
    assert (class_mass_rule(problem), class_mass_rule(first)) == ("smoothed", "center")
    exported = ExportedProblem(problem, np.array([f"n{i}" for i in range(240)], dtype=object), np.arange(3))
    split = flow(solve_by_component)(exported, RunOptions(solver="harmonic", batch_nodes=60))
    assert (split.params["class_mass"], split.info["class_mass"]) == ("auto", "smoothed")  # asked, applied
    _, expected = solve_split(problem, "harmonic", 60, class_mass="smoothed")
    np.testing.assert_array_equal(split.labels, expected.labels)


def test_a_batch_labelled_no_better_than_a_guess_is_said_by_its_class_in_the_whole_problem():
    """A solver's finding that its labelling is no better than a guess reached only its
    Python warning (the run's report and log said nothing), and in a batch its class is the
    batch's own number: the run's note names the class of the whole problem, and the batch."""
    from labelling.problems import ExportedProblem
    from labelling.run_metrics import degenerate_note

    W, y_true, _ = islands(3, 60)
    y = np.full(len(y_true), -1)
    for island in (0, 1):  # well labelled: 5 of each class
        for c in range(3):
            y[island * 60 + np.flatnonzero(y_true[island * 60:(island + 1) * 60] == c)[:5]] = c
    y[120 + np.arange(4)] = [1, 2, 2, 2]  # the third island: 4 labels, classes 1 and 2 (its 0 and 1)
    problem = LabelProblem(W, y, n_classes=3)
    with pytest.warns(UserWarning, match="no better than guessing"):
        plan, merged = solve_split(problem, "mincut", batch_nodes=70)
    assert len(plan.batches) >= 2
    found = merged.info["degenerate_batches"]
    assert [(finding["class"], finding["n_nodes"]) for finding in found] == [(2, 60)]
    exported = ExportedProblem(problem, np.array([f"n{i}" for i in range(len(y))]), np.array(["ant", "bee", "cow"]))
    (note,) = degenerate_note(exported, merged)
    assert note.startswith("in a solver batch of 60 nodes: mincut: class 'cow' takes 100.0% of the unlabelled"), note
    assert "alpha=0.1" in note  # the solver's reason and remedy, as its warning says them
