"""What a run measures on its held-out labels (labelling/run_metrics.py), beside the
accuracy: each class's recall and precision, the balanced accuracy, and the accuracy of
always answering the most common given label."""

import numpy as np
import pytest
import scipy.sparse as sp

from labelling.problems import ExportedProblem
from labelling.run_metrics import hold_out, run_metrics
from solvers import LabelProblem, Prediction


@pytest.mark.parametrize(("per_class", "fraction", "quota"), [
    ([6, 7, 5], 0.1, [0, 1, 0]),      # ⌊0.6⌋ = 0 each held out none: one, of the largest remainder
    ([40, 10, 10], 0.5, [20, 5, 5]),  # ⌊f · n_c⌋ as before
    ([70, 76, 17, 13, 9, 29], 0.9, [63, 68, 15, 11, 8, 26]),  # glass at 90%: 191, as before
    ([5, 5], 0.01, [1, 0]),
    ([1, 1, 1], 0.5, [0, 0, 0]),      # every class keeps a label: none can go
    ([1, 2], 0.4, [0, 1]),
])
def test_a_holdout_takes_its_share_and_at_least_one_label(per_class, fraction, quota):
    y = np.repeat(np.arange(len(per_class)), per_class)
    problem = LabelProblem(sp.identity(len(y), format="csr"), y, n_classes=len(per_class))
    names = np.array([f"c{i}" for i in range(len(per_class))])
    _, holdout = hold_out(ExportedProblem(problem, np.arange(len(y)).astype(str), names), fraction)
    assert np.bincount(holdout.classes, minlength=len(per_class)).tolist() == quota


def test_held_out_labels_are_scored_per_class_against_always_answering_the_largest():
    # 40 nodes given 'big', 10 given 'small', 10 given 'rare'; half of each held out
    y = np.repeat([0, 1, 2], [40, 10, 10])
    problem = LabelProblem(sp.identity(60, format="csr"), y, n_classes=3)
    names = np.array(["big", "small", "rare"])
    exported, holdout = hold_out(ExportedProblem(problem, np.arange(60).astype(str), names), 0.5)
    assert np.bincount(holdout.classes).tolist() == [20, 5, 5]
    labels = y.copy()
    small, rare = holdout.nodes[holdout.classes == 1], holdout.nodes[holdout.classes == 2]
    labels[small[:4]] = 0   # 1 of the 5 held-out 'small' found
    labels[rare] = -1       # no 'rare' reached
    prediction = Prediction(labels=labels, confidence=np.full(60, 0.9), noisy=np.zeros(60, bool),
                            scores=np.zeros((60, 3)), method="test")
    metrics = run_metrics(exported, prediction, holdout)
    assert metrics["holdout_accuracy"] == pytest.approx(21 / 30)
    assert metrics["holdout_majority_class"] == "big"
    assert metrics["holdout_majority_accuracy"] == pytest.approx(20 / 30)
    assert metrics["holdout_balanced_accuracy"] == pytest.approx((1 + 1 / 5 + 0) / 3)
    assert metrics["holdout_classes"] == {
        "big": {"held_out": 20, "recall": 1.0, "precision": 20 / 24},
        "small": {"held_out": 5, "recall": 0.2, "precision": 1.0},
        "rare": {"held_out": 5, "recall": 0.0, "precision": None}}
