"""``solve(problem, "auto")``: the held-out scores, the one-standard-error rule toward
the default harmonic solver, and the record of every candidate."""

import numpy as np
import pytest

from labelling.sampling import keep_per_class
from similarity import knn_graph
from solvers import LabelProblem, Prediction, solve
from solvers.auto import CANDIDATES, PROBABILITY_FLOOR, class_probabilities


def test_scores_are_held_out_log_probabilities_of_the_given_labels(flipped_digits):
    problem, _, _ = flipped_digits
    # a budget no load can exhaust: this test is about the scores (the budget has its own)
    record = solve(problem, "auto", scoring="log_probability", budget=1e3).info["auto"]
    scored = [c for c in record["candidates"] if c["status"] == "scored"]
    assert [c["name"] for c in record["candidates"]] == [c[0] for c in CANDIDATES]
    assert len(scored) >= 2
    for c in scored:
        assert len(c["fold_scores"]) == record["folds"] == 3
        assert np.log(PROBABILITY_FLOOR) <= c["score"] < 0
        # the folds hold 33-34 of the 100 given labels each: the mean of the fold means
        assert c["score"] == pytest.approx(np.mean(c["fold_scores"]), abs=0.05)
        assert 0.5 < c["accuracy"] <= 1


def test_every_candidate_is_a_different_solve(flipped_digits):
    problem, _, _ = flipped_digits
    # the default's class masses are smoothed shares here (5.6% labelled), neither of the
    # variants' rules
    assert solve(problem, "harmonic").info["class_mass"] == "smoothed"
    record = solve(problem, "auto", budget=1e3).info["auto"]
    assert [c["name"] for c in record["candidates"]] == [name for name, _, _ in CANDIDATES]
    assert all(c["status"] == "scored" for c in record["candidates"])


def test_without_the_rule_the_best_score_wins(flipped_digits):
    problem, _, _ = flipped_digits
    record = solve(problem, "auto", n_standard_errors=0, budget=1e3).info["auto"]
    scored = {c["name"]: c["score"] for c in record["candidates"] if c["score"] is not None}
    assert record["chosen"] == max(scored, key=scored.__getitem__)


def test_the_rule_keeps_the_default_unless_a_candidate_is_clearly_better(flipped_digits):
    problem, y_true, kept = flipped_digits
    p = solve(problem, "auto", n_standard_errors=1e6)
    assert p.info["auto"]["chosen"] == "harmonic"
    default = solve(problem, "harmonic")
    np.testing.assert_array_equal(p.labels, default.labels)  # the default's own run, returned
    assert np.mean(p.labels[~kept] == y_true[~kept]) > 0.93
    record = solve(problem, "auto").info["auto"]
    if record["chosen"] != "harmonic":
        assert record["best_minus_default"] > record["standard_error"]


def test_class_probabilities_use_the_class_mass_scale_and_fill_unreached_rows():
    scores = np.array([[0.2, 0.2], [0.0, 0.0], [0.6, 0.2]])
    p = Prediction(np.zeros(3, dtype=int), np.ones(3), np.zeros(3, dtype=bool), scores, "harmonic",
                   info={"class_mass_weights": np.array([1.0, 3.0])})
    np.testing.assert_allclose(class_probabilities(p), [[0.25, 0.75], [0.5, 0.5], [0.5, 0.5]])


def test_auto_rejects_a_negative_number_of_standard_errors(flipped_digits):
    problem, _, _ = flipped_digits
    with pytest.raises(ValueError, match=r"^n_standard_errors must be a finite number >= 0, got -1$"):
        solve(problem, "auto", n_standard_errors=-1)


def test_accuracy_scoring_the_default_scores_each_fold_by_its_held_out_accuracy(flipped_digits):
    problem, _, _ = flipped_digits
    record = solve(problem, "auto").info["auto"]
    scored = [c for c in record["candidates"] if c["status"] == "scored"]
    assert scored
    for c in scored:
        assert c["score"] == c["accuracy"]
        assert all(0 <= s <= 1 for s in c["fold_scores"])
    assert record["scoring"] == "held-out accuracy on the given labels"


def test_a_budget_with_no_room_for_a_fold_keeps_the_default_and_says_why(flipped_digits):
    problem, _, _ = flipped_digits
    p = solve(problem, "auto", budget=1.5)
    record = p.info["auto"]
    assert record["chosen"] == "harmonic"
    assert record["reason"] == "no candidate fitted the budget: default harmonic kept"
    assert all(c["status"] != "scored" for c in record["candidates"])


def test_auto_rejects_an_unknown_scoring(flipped_digits):
    problem, _, _ = flipped_digits
    with pytest.raises(ValueError, match=r"^scoring must be one of 'accuracy', 'balanced_accuracy',"
                                         r" 'log_probability', got 'brier'$"):
        solve(problem, "auto", scoring="brier")


def test_a_candidate_that_stops_itself_is_skipped_and_the_budget_holds(flipped_digits, monkeypatch):
    """nmf gets what is left of auto's budget as its time limit; when it stops itself the
    candidate is skipped with that reason, and auto still answers."""
    import solvers.auto as auto_module

    calls = []
    real_run = auto_module._run

    def run(problem, method, params):
        if method == "nmf":
            calls.append(params.get("time_limit"))
            params = {**params, "time_limit": 1e-9}  # as if its budget were spent
        return real_run(problem, method, params)

    monkeypatch.setattr(auto_module, "_run", run)
    problem, _, _ = flipped_digits
    record = solve(problem, "auto", budget=1e3).info["auto"]
    nmf = next(c for c in record["candidates"] if c["method"] == "nmf")
    assert nmf["status"] == "skipped: it stopped itself at the end of the time budget"
    assert calls
    assert 0 < calls[0] <= record["budget_harmonic_runs"] * record["harmonic_seconds"]
    assert record["chosen"] != "nmf"


def test_balanced_scoring_is_the_mean_of_the_classes_held_out_recall(digits):
    """Unequal classes among the given labels (30 of digit 0, 5 of each other digit): each
    candidate's score is the mean over the classes of the share of its held-out labels
    found, recomputed here from the same folds, not the share of all labels found."""
    from sklearn.model_selection import StratifiedKFold

    from solvers.auto import CV_PARAMETERS

    X, y_true = digits
    rng = np.random.default_rng(0)
    kept = keep_per_class(y_true, 5, rng) | (y_true == 0) & (rng.random(len(y_true)) < 30 / 178)
    problem = LabelProblem(knn_graph(X, 10), np.where(kept, y_true, -1))
    record = solve(problem, "auto", scoring="balanced_accuracy", budget=1e3).info["auto"]
    assert record["scoring"] == "held-out balanced accuracy on the given labels (the mean of the classes' recall)"
    lab = np.flatnonzero(problem.labeled)
    y_l = problem.y[lab]
    default = record["candidates"][0]
    found = np.zeros(len(lab), dtype=bool)
    for _, held in StratifiedKFold(record["folds"], shuffle=True, random_state=0).split(lab, y_l):
        y_fold = problem.y.copy()
        y_fold[lab[held]] = -1
        found[held] = solve(problem.with_labels(y_fold), "harmonic", **CV_PARAMETERS["harmonic"]).labels[lab[held]] \
            == y_l[held]
    recall = [found[y_l == c].mean() for c in np.unique(y_l)]
    assert default["score"] == pytest.approx(np.mean(recall))
    assert default["accuracy"] == pytest.approx(found.mean())
    assert default["score"] != pytest.approx(default["accuracy"])
