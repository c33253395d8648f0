"""Slow solvers stop themselves at their time budget with one clear error (issue 15 §2),
and a labelling no better than a guess warns."""

import contextvars
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import solvers.lcsnc
from similarity import knn_graph
from solvers import LabelProblem, SolverStopped, SolverTimeLimit, solve, stop_when
from solvers._budget import MIN_SECONDS, Budget, default_time_limit
from solvers._graph import no_better_than_majority
from solvers.problem import DegenerateLabelingWarning
from solvers.spectral import DENSE_EIGEN_SECONDS_PER_N3

SLOW = ("spectral", "mincut", "lcsnc", "maxmargin", "nmf")


def blobs(n: int, n_classes: int = 3, per_class: int = 8, seed: int = 0):
    """``n`` points in ``n_classes`` Gaussian blobs in 8-d, ``per_class`` labels each, 10-NN graph."""
    rng = np.random.default_rng(seed)
    truth = np.arange(n) % n_classes
    X = rng.normal(size=(n, 8)) + 4.0 * np.eye(8)[truth]
    y = np.full(n, -1)
    for c in range(n_classes):  # a loop over classes
        y[np.flatnonzero(truth == c)[:per_class]] = c
    return LabelProblem(knn_graph(X, 10), y, X=X), truth


@pytest.fixture(scope="module")
def big():
    """4,000 nodes: above spectral's dense limit (3,000), so its eigen step is Lanczos."""
    return blobs(4000)


@pytest.mark.parametrize("method", SLOW)
def test_a_tiny_budget_stops_the_solver_with_one_clear_error(big, method):
    problem, _ = big
    with pytest.raises(SolverTimeLimit) as stopped:
        solve(problem, method, time_limit=1e-4)
    error = stopped.value
    assert isinstance(error, RuntimeError)
    assert error.method == method
    assert error.budget == pytest.approx(1e-4)
    assert error.seconds > error.budget or error.projected is not None
    message = str(error)
    assert message.startswith(f"{method} stopped itself after ")
    assert "its time budget is 0.0001 s" in message
    assert "method='harmonic'" in message
    assert "time_limit=None" in message
    assert "\n" not in message


def test_lcsnc_stops_at_once_when_its_first_run_projects_past_the_budget(big, monkeypatch):
    """lcsnc's tuning projects its other runs at the first one's pace (decision 19) and stops
    then, not when the budget is spent: each run slowed to 0.5 s, 299 more cannot fit 10 s."""
    slow = solvers.lcsnc._fold_scores

    def slowed(*args):
        time.sleep(0.5)
        return slow(*args)

    monkeypatch.setattr(solvers.lcsnc, "_fold_scores", slowed)
    problem, _ = big
    with pytest.raises(SolverTimeLimit) as stopped:
        solve(problem, "lcsnc", time_limit=10.0)
    error = stopped.value
    assert error.stage == "the tuning's other 299 runs (5 folds × 60 settings)"
    assert error.projected >= 299 * 0.5 / 8  # at most 8 processes share them
    assert "which would take about" in str(error)


@pytest.mark.parametrize("method", [*SLOW, "harmonic"])  # harmonic: no time limit, but a stop request
def test_a_stop_request_stops_the_solver_at_its_next_check(big, method):
    # the run's flow asks its solves to stop on a Ctrl-C or another batch's failure: with only
    # the time limit, the command waited for each solve in progress to reach it
    problem, _ = big
    with stop_when(threading.Event()) as stop:
        stop.set()
        with pytest.raises(SolverStopped, match=f"^{method} stopped after .* the run asked its solves to stop$"):
            solve(problem, method=method, **({} if method == "harmonic" else {"time_limit": None}))


def test_a_stop_request_reaches_copies_of_its_context_on_other_threads_and_nothing_outside():
    stop, made = threading.Event(), {}
    with stop_when(stop):
        context = contextvars.copy_context()  # as a thread runner copies it for a task
    thread = threading.Thread(target=context.run, args=(lambda: made.update(task=Budget("mincut", None)),))
    thread.start()
    thread.join()
    outside = Budget("mincut", None)
    stop.set()
    with pytest.raises(SolverStopped, match="before the next cut"):
        made["task"].check("the next cut")
    with pytest.raises(SolverStopped):
        made["task"].check_next("the next cut", 0.0)
    outside.check("the next cut")  # made outside the block: no request reaches it


def test_spectral_stops_inside_the_lanczos_iteration(big):
    problem, _ = big
    with pytest.raises(SolverTimeLimit, match="Lanczos iteration"):
        solve(problem, "spectral", time_limit=1e-4)


def test_spectral_refuses_a_dense_eigen_step_its_budget_cannot_pay():
    problem, _ = blobs(1500)
    estimate = DENSE_EIGEN_SECONDS_PER_N3 * 1500.0**3
    with pytest.raises(SolverTimeLimit, match="before the dense eigen step, which would take about") as stopped:
        solve(problem, "spectral", time_limit=estimate / 2)
    assert stopped.value.projected == pytest.approx(estimate)
    assert stopped.value.seconds < estimate / 2  # refused before it started, not after


def test_maxmargin_projects_its_first_svm_fit_from_a_probe(big, monkeypatch):
    import solvers.maxmargin as maxmargin_module

    problem, _ = big
    monkeypatch.setattr(maxmargin_module, "SVM_EXPONENT", 40.0)  # a projection far past any budget
    with pytest.raises(SolverTimeLimit, match="before an SVM fit, which would take about") as stopped:
        solve(problem, "maxmargin", time_limit=600.0)
    assert stopped.value.projected > 600.0
    assert stopped.value.seconds < 600.0  # refused before the fit, not after it


def test_maxmargin_checks_its_decision_values_on_the_graph_against_the_budget(big, monkeypatch):
    """With 100 classes the decision values on 20,000 nodes took 54 s after a 14 s fit, past
    a 54 s budget: fit now ends by checking their projection (``PREDICT_PROBE``)."""
    from solvers.maxmargin import PREDICT_PROBE, MaxMarginGraphCut

    problem, _ = big
    probed = []
    projection = MaxMarginGraphCut._decision_seconds

    def far_past_the_budget(model, X):
        probed.append(projection(model, X))  # the real projection, then one past any budget
        return 1e4

    monkeypatch.setattr(MaxMarginGraphCut, "_decision_seconds", far_past_the_budget)
    with pytest.raises(SolverTimeLimit, match="before the SVM's decision values on the graph's 4,000 nodes, which "
                                              "would take about 1e[+]04 s more") as stopped:
        solve(problem, "maxmargin", time_limit=600.0)
    assert stopped.value.projected == 1e4
    assert probed[0] > 0.0  # 4,000 nodes: more than 2 × PREDICT_PROBE, so a probe ran
    assert problem.n_nodes > 2 * PREDICT_PROBE
    probed.clear()
    assert solve(problem, "maxmargin", time_limit=None).labels.shape == (4000,)
    assert probed == []  # no limit: no probe


def test_maxmargin_refuses_an_svm_fit_projected_past_the_budget():
    budget = Budget("maxmargin", 10.0)
    budget.check_next("an SVM fit", 1.0)  # 1 s more fits
    with pytest.raises(SolverTimeLimit, match="before an SVM fit, which would take about 20 s more"):
        budget.check_next("an SVM fit", 20.0)


@pytest.mark.parametrize("method", SLOW)
def test_no_limit_lets_the_solver_finish(method):
    problem, truth = blobs(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateLabelingWarning)
        prediction = solve(problem, method, time_limit=None)
    hidden = ~problem.labeled
    assert np.mean(prediction.labels[hidden] == truth[hidden]) > 0.9
    assert prediction.info["time_limit_seconds"] is None


@pytest.mark.parametrize("method", SLOW)
@pytest.mark.parametrize("bad", [0, -1.0, "fast", float("inf"), True])
def test_a_bad_time_limit_is_refused_at_the_door(method, bad):
    problem, _ = blobs(60)
    with pytest.raises(ValueError, match="time_limit must be"):
        solve(problem, method, time_limit=bad)


def test_the_default_budget_is_ten_harmonic_estimates_with_a_floor():
    small, _ = blobs(300)
    assert default_time_limit(small.W, 3) == MIN_SECONDS  # a product takes microseconds
    assert Budget("nmf", "auto", small.W, 3).limit == MIN_SECONDS
    assert Budget("nmf", None, small.W, 3).limit is None
    assert Budget("lcsnc", "auto", None, 3).limit is None  # no graph to time: no limit
    # a graph whose block product is slow enough lifts the budget above the floor
    dense = sp.random(4000, 4000, density=0.3, format="csr", random_state=0)  # 4.8M entries: ~60 ms a product
    assert default_time_limit(dense, 30) > MIN_SECONDS


def test_a_prediction_records_its_budget():
    problem, _ = blobs(300)
    assert solve(problem, "nmf").info["time_limit_seconds"] == MIN_SECONDS  # the default, "auto"
    assert solve(problem, "mincut", time_limit=30.0).info["time_limit_seconds"] == 30.0
    # "none" is no limit, as None: a schedule's TOML has no null to write (its jobs could raise
    # the limit, not remove it)
    assert solve(problem, "nmf", time_limit="none").info["time_limit_seconds"] is None


def test_held_out_labels_no_better_than_their_majority_are_found():
    y = np.array([0, 0, 1, 1, -1, -1, 2])
    wrong = np.array([0.2, -0.1, 0.3, 0.1, np.nan, np.nan, 0.5])  # 1 of the 4 usable comes back
    found = no_better_than_majority(wrong, y)
    assert found == {"held_out_accuracy": 0.25, "majority_share": 0.5, "n_labels": 4}  # class 2's only label left out
    right = np.array([-0.2, -0.1, -0.3, 0.1, np.nan, np.nan, 0.5])  # 3 of 4
    assert no_better_than_majority(right, y) is None
    assert no_better_than_majority(np.array([0.1, np.nan, -0.1]), np.array([0, -1, 1])) is None  # nothing usable
    # only class 0 has two labels: one class to check says nothing
    assert no_better_than_majority(np.array([0.1, 0.2, 0.3]), np.array([0, 0, 1])) is None


def test_nmf_warns_when_its_labels_do_not_predict_each_other():
    # a cycle whose first 40 nodes carry alternating labels: every label's neighbours hold the
    # other class, so held out none comes back, though no class takes the unlabelled nodes
    n = 60
    ring = sp.coo_matrix((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    y = np.full(n, -1)
    y[:40] = np.arange(40) % 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DegenerateLabelingWarning)
        prediction = solve(LabelProblem((ring + ring.T).tocsr(), y), "nmf")
    said = [str(w.message) for w in caught if issubclass(w.category, DegenerateLabelingWarning)]
    assert prediction.info["degenerate"] is None
    found = prediction.info["no_better_than_majority"]
    assert {key: found[key] for key in ("held_out_accuracy", "majority_share", "n_labels")} == {
        "held_out_accuracy": 0.0, "majority_share": 0.5, "n_labels": 40}
    assert found["reason"].startswith("The check holds each label's own field out")  # for the run's report
    assert len(said) == 1
    assert said[0].startswith("nmf: held out one at a time, 0.0% of the 40 given labels")


def test_nmf_does_not_warn_when_its_labels_predict_each_other(big):
    problem, _ = big
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DegenerateLabelingWarning)
        prediction = solve(problem, "nmf", time_limit=None)
    assert prediction.info["no_better_than_majority"] is None
    assert not [w for w in caught if issubclass(w.category, DegenerateLabelingWarning)]
