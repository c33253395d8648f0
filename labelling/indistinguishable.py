"""Entities whose neighbours a kNN graph could not tell apart: copies of one feature vector.

When more than k + 1 nodes hold the same feature vector (constant features, an imputed
default, a record loaded many times under different keys), each of them has more than k
nodes at distance 0, and which k became its neighbours was the search's arbitrary pick.
A solver then answers for a graph the features never described: on 40 identical rows
the harmonic solver flagged every given label as noisy and gave confidences up to 0.94.

What is done instead, after the solver (any solver): the copies are one entity seen
several times, so they get one answer, from what the copies themselves say:

- a group with given labels: its most common given label, with that label's share of
  the group's given labels as the confidence (ties: the class listed first); no noise
  flag on any member, since nothing but the copies speaks for or against a label;
- a group without given labels: the members' predictions, each weighted by its
  confidence, pooled the same way (confidence: the winning class's weight over the
  group's size), so identical entities never get different answers.

Groups of at most k + 1 copies are left alone: each copy has all the others among its
neighbours and the rest of its neighbourhood is a real one. Copies are found among the
nodes touching an edge of weight exactly 1 (Gaussian and cosine weights give 1 at
distance 0; binary weights make every node a candidate), by hashing their feature rows.
Near-copies (equal up to rounding) and ties at a distance above 0 are not covered.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from solvers import Prediction

from .problems import ExportedProblem


@dataclass(frozen=True)
class Pooled:
    """The prediction with copies pooled, how many nodes were, and a sentence saying so
    (None when none was)."""

    prediction: Prediction
    n_pooled: int
    message: str | None


def copy_groups(X: np.ndarray, W, k: int) -> np.ndarray:
    """Group number of each node in a group of more than ``k + 1`` identical feature rows,
    -1 for every other node."""
    n = X.shape[0]
    groups = np.full(n, -1, dtype=np.int64)
    # W is symmetric (LabelProblem checks it), so the columns of the weight-1 entries name
    # both their ends: no COO copy of W (260 MB at 1M nodes)
    candidates = np.unique(W.indices[W.data == 1.0])
    if len(candidates) <= k + 1:
        return groups
    hashes = pd.util.hash_pandas_object(pd.DataFrame(X[candidates]), index=False).to_numpy()
    codes, _ = pd.factorize(hashes)
    sizes = np.bincount(codes)
    large = sizes[codes] > k + 1
    if large.any():
        renumbered, _ = pd.factorize(codes[large])
        groups[candidates[large]] = renumbered
    return groups


def pool_copies(exported: ExportedProblem, prediction: Prediction, k: int, groups: np.ndarray) -> Pooled:
    """One answer per group of more than ``k + 1`` copies (module docstring). ``groups``:
    ``copy_groups`` of the problem, found while it had its features (the flows find them
    before the solve, and a solver that reads only the graph gets the problem without them)."""
    problem = exported.problem
    members = np.flatnonzero(groups >= 0)
    if not len(members):
        return Pooled(prediction, 0, None)
    g, n_groups, n_classes = groups[members], int(groups.max()) + 1, problem.n_classes
    y = problem.y[members]
    given = np.zeros((n_groups, n_classes))
    np.add.at(given, (g[y >= 0], y[y >= 0]), 1.0)
    predicted = np.zeros((n_groups, n_classes))
    labels = prediction.labels[members]
    reached = labels >= 0
    np.add.at(predicted, (g[reached], labels[reached]), prediction.confidence[members][reached])
    has_given = given.sum(axis=1) > 0
    votes = np.where(has_given[:, None], given, predicted)
    totals = np.where(has_given, given.sum(axis=1), np.bincount(g, minlength=n_groups))
    winner = np.argmax(votes, axis=1)
    share = votes[np.arange(n_groups), winner] / np.maximum(totals, 1)
    none = votes.sum(axis=1) == 0  # copies no label reaches stay without a prediction
    new_labels, new_confidence, new_noisy = prediction.labels.copy(), prediction.confidence.copy(), \
        prediction.noisy.copy()
    new_labels[members] = np.where(none[g], -1, winner[g])
    new_confidence[members] = np.where(none[g], 0.0, share[g])
    new_noisy[members] = False
    pooled = replace(prediction, labels=new_labels, confidence=np.clip(new_confidence, 0.0, 1.0),
                     noisy=new_noisy, info={**prediction.info, "n_pooled_copies": int(len(members))})
    if len(members) == problem.n_nodes and n_groups == 1:
        message = ("every node has the same features: the graph cannot tell them apart, so each gets the most"
                   " common given label, with its share of the given labels as confidence, and no label is"
                   " flagged")
    else:
        message = (f"{len(members)} nodes share their features with more than k = {k} others, so their"
                   " neighbours were an arbitrary pick among identical copies: each group of copies gets its"
                   " most common given label (else prediction) with its share as confidence, and no noise flag")
    return Pooled(pooled, int(len(members)), message)
