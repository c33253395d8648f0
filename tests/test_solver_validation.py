"""The solvers' one parameter-check helper and their stopwatch (solvers/_validation.py, _timing.py)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import LabelProblem, solve
from solvers._timing import Stopwatch
from solvers._validation import Integral, Interval, Options, Real, check, check_choice, check_interval, validate_params


@pytest.mark.parametrize("value, inside", [
    (0, False), (0.0, False), (1e-9, True), (1, True), (np.float32(0.5), True), (np.int64(1), True),
    (1.0000001, False), (math.nan, False), (math.inf, False), (True, False), ("0.5", False), (None, False),
])
def test_interval_left_open_right_closed(value, inside):
    assert (value in Interval(Real, 0, 1, closed="right")) is inside


@pytest.mark.parametrize("value, inside", [(2, True), (np.int32(7), True), (2.0, False), (1, False),
                                           (False, False), (np.bool_(True), False)])
def test_integer_interval_rejects_floats_and_booleans(value, inside):
    assert (value in Interval(Integral, 2, None)) is inside


def test_options_compare_by_type_and_value():
    flags = Options((True, False, "auto"))
    assert True in flags
    assert "auto" in flags
    assert np.str_("auto") in flags
    assert 1 not in flags
    assert 0 not in flags
    assert "Auto" not in flags
    assert np.int64(0) in Options((0,))
    assert 0.0 in Options((0,))
    assert np.zeros(2) not in Options((0,))


def test_one_message_shape_for_every_constraint():
    with pytest.raises(ValueError, match=r"^cv must be 0 or an integer >= 2, got 1$"):
        check("cv", 1, [Options((0,)), Interval(Integral, 2, None)])
    with pytest.raises(ValueError, match=r"^bandwidth must be None or a finite number > 0, got -1.0$"):
        check("bandwidth", -1.0, [None, Interval(Real, 0, None, closed="neither")])
    with pytest.raises(ValueError, match=r"^noise must be one of 'fit', 'loo', got 'cut'$"):
        check_choice("noise", "cut", ("fit", "loo"))
    with pytest.raises(ValueError, match=r"^t must be a finite number in \[0, 1\), got 1$"):
        check_interval("t", 1, 0, 1, closed="left")
    assert check("bandwidth", None, [None, Interval(Real, 0, None)]) is None


def test_validate_params_names_the_first_bad_parameter_and_needs_a_constraint_for_each():
    constraints = {"a": [Interval(Real, 0, None)], "b": [Options(("x", "y"))]}
    validate_params({"a": 1.5, "b": "x"}, constraints)
    with pytest.raises(ValueError, match="^b must be"):
        validate_params({"a": 1.5, "b": "z"}, constraints)
    with pytest.raises(KeyError):
        validate_params({"c": 1}, constraints)


def _problem():
    W = sp.diags([np.ones(9), np.ones(9)], [-1, 1], shape=(10, 10)).tocsr()
    y = np.full(10, -1)
    y[[0, 1, 8, 9]] = [0, 0, 1, 1]
    return LabelProblem(W, y, X=np.arange(20.0).reshape(10, 2))


@pytest.mark.parametrize("method, params, message", [
    ("mincut", {"noise": "vote"},
     r"^noise must be one of 'cavity', 'grouped', 'loo', 'none', 'cavity_harmonic', got 'vote'$"),
    ("mincut", {"n_cuts": True}, r"^n_cuts must be an integer >= 0, got True$"),
    ("nmf", {"deflate": 1}, r"^deflate must be one of True, False, 'auto', got 1$"),
    ("nmf", {"beta": 0}, r"^beta must be 'auto' or a finite number > 0, got 0$"),
    ("spectral", {"calibration": "platt"}, r"^calibration must be one of 'loo', 'none', got 'platt'$"),
    ("lcsnc", {"multiclass": "vote"}, r"^multiclass must be one of 'path', 'cut', got 'vote'$"),
    ("lcsnc", {"backend": "networkx"}, r"^backend must be one of 'auto', 'pseudoflow', 'maxflow', got"),
    ("maxmargin", {"cv": 1}, r"^cv must be 0 or an integer >= 2, got 1$"),
    ("harmonic", {"loo": "cavity"}, r"^loo must be one of 'local', 'exact', got 'cavity'$"),
    ("harmonic", {"noise_threshold": 0}, r"^noise_threshold must be a finite number in \(0, 1\], got 0$"),
    ("harmonic", {"gamma_g": -1.0}, r"^gamma_g must be a finite number >= 0 or inf, got -1.0$"),
])
def test_every_solver_checks_its_options_with_the_same_message(method, params, message):
    with pytest.raises(ValueError, match=message):
        solve(_problem(), method, **params)


def test_stopwatch_adds_up_a_stage_timed_twice():
    clock = Stopwatch()
    for _ in range(2):
        with clock("step"):
            time.sleep(0.01)
    with clock("other"):
        pass
    assert clock.seconds["step"] >= 0.02
    assert 0 <= clock.seconds["other"] < clock.seconds["step"] <= clock.elapsed


def test_stopwatch_keeps_the_time_of_a_step_that_raised():
    clock = Stopwatch()
    with pytest.raises(RuntimeError):
        with clock("failing"):
            raise RuntimeError("boom")
    assert "failing" in clock.seconds


# --------------------------------------------------------------------------- degenerate labellings

def test_one_class_takes_all_needs_a_share_the_labels_do_not_explain():
    from solvers._graph import DEGENERATE_MIN_NODES, one_class_takes_all

    y = np.full(100, -1)
    y[:4] = [0, 0, 1, 1]
    labels = np.zeros(100, dtype=int)
    labels[:4] = [0, 0, 1, 1]
    found = one_class_takes_all(labels, y, 2)
    assert found == {"class": 0, "share": 1.0, "given_share": 0.5}
    labels[4:9] = 1  # 5 of 96: 94.8% left for class 0
    assert one_class_takes_all(labels, y, 2) is None
    y_all_zero = np.where(y >= 0, 0, -1)  # the labels themselves are one class: no surprise
    assert one_class_takes_all(np.zeros(100, dtype=int), y_all_zero, 2) is None
    few = np.full(DEGENERATE_MIN_NODES + 1, -1)
    few[:2] = [0, 1]
    assert one_class_takes_all(np.zeros(len(few), dtype=int), few, 2) is None  # 19 unlabelled: too few
    no_label = labels.copy()
    no_label[4:] = -1  # nodes no label reaches do not count
    assert one_class_takes_all(no_label, y, 2) is None


def _hard_data_draw(name, fraction, seed):
    """bench/hard_data.py's problem: z-scored Weka / scikit-learn data, 10-NN, random labels."""
    from labelling.datasets import load, standardise
    from similarity import knn_graph

    X, y, _ = load(name)
    X = standardise(X)
    rng = np.random.default_rng(seed)
    given = rng.random(len(y)) < fraction
    for c in np.unique(y):
        if not given[y == c].any():
            given[rng.choice(np.flatnonzero(y == c))] = True
    return LabelProblem(knn_graph(X, 10), np.where(given, y, -1), X=X), y


@pytest.mark.parametrize("method, params, name, fraction, seed, cause", [
    ("mincut", {"n_cuts": 0}, "wdbc", 0.01, 0, "§3.1"),
    ("spectral", {}, "ionosphere", 0.01, 0, "given labels' counts"),
    ("lcsnc", {}, "diabetes", 0.1, 2, "cut does not separate"),
])
def test_a_degenerate_labeling_says_so(method, params, name, fraction, seed, cause):
    from solvers.problem import DegenerateLabelingWarning

    problem, y = _hard_data_draw(name, fraction, seed)
    with pytest.warns(DegenerateLabelingWarning, match=cause):
        # the warning, not the time, is under test: no time budget (a loaded machine overran 5 s)
        p = solve(problem, method, **params, time_limit=None)
    hidden = ~problem.labeled
    found = p.info["degenerate"]
    assert np.mean(p.labels[hidden] == found["class"]) >= 0.95 > found["given_share"]
    majority = np.bincount(y[hidden]).max() / hidden.sum()
    assert np.mean(p.labels[hidden] == y[hidden]) <= majority + 0.01  # no better than chance


def test_mincut_with_scaled_unlabeled_edges_is_not_degenerate_there():
    import warnings

    from solvers.problem import DegenerateLabelingWarning

    problem, y = _hard_data_draw("wdbc", 0.01, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateLabelingWarning)
        p = solve(problem, "mincut", alpha=0.1, n_cuts=0)
    hidden = ~problem.labeled
    assert p.info["degenerate"] is None
    assert np.mean(p.labels[hidden] == y[hidden]) > np.bincount(y[hidden]).max() / hidden.sum() + 0.1


@pytest.mark.parametrize("params, message", [
    ({"budget": 1}, r"^budget must be a finite number > 1, got 1$"),
    ({"budget": float("nan")}, r"^budget must be a finite number > 1, got nan$"),
    ({"cv": 1}, r"^cv must be an integer >= 2, got 1$"),
    ({"cv": True}, r"^cv must be an integer >= 2, got True$"),
])
def test_auto_checks_its_options_with_the_same_message(params, message):
    with pytest.raises(ValueError, match=message):
        solve(_problem(), "auto", **params)


@pytest.mark.parametrize("method", ["harmonic", "nmf", "mincut"])
def test_an_unknown_parameter_is_a_value_error_naming_the_solvers_parameters(method):
    # drop_noisy was harmonic's name for what noisy_labels says now: a ValueError (one line in the
    # CLI), not the call's TypeError
    W = sp.csr_matrix(np.ones((6, 6)) - np.eye(6))
    problem = LabelProblem(W, np.array([0, 1, -1, -1, -1, -1]))
    with pytest.raises(ValueError, match=rf"{method} has no parameter 'drop_noisy'; its parameters: .*time_limit"
                       if method != "harmonic" else r"harmonic has no parameter 'drop_noisy'; its parameters: "
                                                    r".*noisy_labels"):
        solve(problem, method, drop_noisy=False)
