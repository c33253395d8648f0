"""The solver contract: what every solver takes (`LabelProblem`) and returns (`Prediction`).

Solvers import nothing from the rest of graphlabel; the flows translate store rows
into a `LabelProblem` and a `Prediction` back into node properties.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._calibration import rows_normalised

UNLABELED = -1


class DegenerateLabelingWarning(UserWarning):
    """A solver's labelling puts (nearly) every unlabelled node in one class that the given
    labels do not favour that much: the solver has found no structure to follow, and its
    labels are no better than a guess of that class (or nmf's: its given labels, held out,
    come back no more often than the largest class's share). The message names the solver's
    known reason and what to change; ``Prediction.info["degenerate"]`` (nmf's
    ``info["no_better_than_majority"]``) holds the numbers and that ``"reason"``, from which
    ``degenerate_text`` says it again with the class's name (a run's report does)."""


def _symmetric(W: sp.csr_matrix) -> bool:
    """Whether W equals its transpose up to 1e-9 of its largest weight. A canonical W whose
    transpose has the same pattern is compared value by value: one transposed copy, where
    ``abs(W - W.T)`` made three (with the diagonal check below, building the problem of a
    1M-node, 13.4M-entry graph peaked 228 MiB lower in Python, measured with tracemalloc)."""
    if not W.nnz:
        return True
    tolerance = 1e-9 * max(1.0, float(W.data.max()))
    if W.has_canonical_format:  # sorted indices, one entry per position (a check, not a sort)
        T = W.T.tocsr()  # canonical by construction
        if np.array_equal(T.indptr, W.indptr) and np.array_equal(T.indices, W.indices):
            difference = np.abs(np.subtract(T.data, W.data, out=T.data), out=T.data)
            return bool(difference.max() <= tolerance)
        del T
    difference = abs(W - W.T)
    return not difference.nnz or difference.max() <= tolerance


@dataclass(frozen=True, eq=False)
class LabelProblem:
    """A graph, a few given labels, and optionally what is known about them.

    Parameters
    ----------
    W : scipy.sparse matrix, shape (n, n), or None
        Symmetric, non-negative edge weights; the diagonal is ignored (set to 0). ``None``
        (with ``X``) for the solvers that build their own graph from the features
        (``lcsnc`` with ``graph="knn"``): W is then empty and ``has_graph`` False.
    y : array of int, shape (n,)
        Class index 0..C-1 of each given label, ``-1`` (``UNLABELED``) where none is given.
    label_confidence : array of float in [0, 1], shape (n,), optional
        Trust in each given label (ignored where ``y == -1``); ``None`` means 1 everywhere.
    n_classes : int, optional
        Number of classes C; defaults to ``y.max() + 1``. Pass it when a class has no
        given label in this problem but must still get a score column.
    X : array of float, shape (n, d), optional
        Node features, for the solvers that also learn a model on them (``maxmargin``).
    class_label_counts : array of int, shape (C,), optional
        Given labels per class among all the labels of the run this problem is part of, for
        a problem cut from a larger one (an incremental run's region, a batch of
        components); ``None`` means this problem's own labels. It decides ``lone_labels``:
        a label that is the only one of its class in the run is not judged as noise, while
        one that is alone only in its region is.

    Raises
    ------
    ValueError
        On a non-square, asymmetric or negative ``W``, a ``y`` of the wrong length or with
        values outside -1..C-1, confidences outside [0, 1], or class label counts that are
        not C non-negative integers.
    """

    # Typed as the fields hold after __post_init__, which every solver reads: W a csr_matrix
    # (None in, an empty graph out), n_classes an int (None in, y.max() + 1 out) and
    # class_label_counts an array (None in, this problem's own counts out).
    W: sp.csr_matrix
    y: np.ndarray
    label_confidence: np.ndarray | None = None
    n_classes: int = None  # type: ignore[assignment]
    X: np.ndarray | None = None
    class_label_counts: np.ndarray = None  # type: ignore[assignment]
    #: Whether W was given (False: the solver builds its graph from X).
    has_graph: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "has_graph", self.W is not None)
        if self.W is None:
            if self.X is None:
                raise ValueError("a LabelProblem needs a graph W, or features X for a solver that builds one")
            n = np.asarray(self.X).shape[0]
            object.__setattr__(self, "W", sp.csr_matrix((n, n), dtype=np.float64))
        W = sp.csr_matrix(self.W, dtype=np.float64)
        if W.ndim != 2 or W.shape[0] != W.shape[1]:
            raise ValueError(f"W must be a square matrix, got shape {W.shape}")
        n = W.shape[0]
        if W.diagonal().any():  # setdiag on a CSR without a stored diagonal goes through a COO copy of W
            W.setdiag(0)
        W.eliminate_zeros()
        if W.nnz and W.data.min() < 0:
            raise ValueError("W must be non-negative")
        if not np.all(np.isfinite(W.data)):
            raise ValueError("W has non-finite weights")
        if not _symmetric(W):
            raise ValueError("W must be symmetric (symmetrise it, e.g. W.maximum(W.T))")
        y = np.asarray(self.y)
        if y.shape != (n,):
            raise ValueError(f"y must have shape ({n},), got {y.shape}")
        if not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"y must hold integers (class indices, -1 for unlabelled), got {y.dtype}")
        if np.issubdtype(y.dtype, np.unsignedinteger) and y.size and y.max() == np.iinfo(y.dtype).max:
            # -1 stored in an unsigned array wraps to its largest value, which would be a class of its own
            raise ValueError(f"y is {y.dtype}, which cannot hold -1 (unlabelled): its {y.max()} would be a class;"
                             " give y a signed integer type (y.astype(np.int64)) before setting -1")
        y = y.astype(np.int64)
        n_classes = int(self.n_classes) if self.n_classes is not None else int(y.max()) + 1
        if self.n_classes is None and self.class_label_counts is None:
            missing = np.setdiff1d(np.arange(n_classes), y[y >= 0])
            if missing.size:  # class ids taken as they are: 5, 7, 9 make ten score columns, seven empty
                shown = ", ".join(map(str, missing[:8].tolist())) + (", ..." if missing.size > 8 else "")
                warnings.warn(f"y's classes are the indices 0..{n_classes - 1}, and {missing.size} of them have no"
                              f" given label ({shown}): no node can be predicted them; map the labels to 0..C-1"
                              " first (np.unique(labels, return_inverse=True)); pass n_classes to keep such"
                              " classes on purpose", UserWarning, stacklevel=3)
        if y.min(initial=0) < UNLABELED or y.max(initial=-1) >= n_classes:
            raise ValueError(f"y values must lie in -1..{n_classes - 1}")
        conf = self.label_confidence
        if conf is not None:
            conf = np.asarray(conf, dtype=np.float64)
            if conf.shape != (n,):
                raise ValueError(f"label_confidence must have shape ({n},), got {conf.shape}")
            if np.any((conf[y >= 0] < 0) | (conf[y >= 0] > 1)) or np.any(np.isnan(conf[y >= 0])):
                raise ValueError("label_confidence must lie in [0, 1] for every given label")
        X = self.X
        if X is not None:
            X = np.asarray(X, dtype=np.float64)
            if X.ndim != 2 or X.shape[0] != n:
                raise ValueError(f"X must have shape ({n}, d), got {X.shape}")
        counts = self.class_label_counts
        if counts is None:
            counts = np.bincount(y[y >= 0], minlength=n_classes)
        counts = np.asarray(counts)
        if counts.shape != (n_classes,) or not np.issubdtype(counts.dtype, np.integer) or counts.min(initial=0) < 0:
            raise ValueError(f"class_label_counts must be {n_classes} non-negative integers, one per class")
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "class_label_counts", counts.astype(np.int64))
        object.__setattr__(self, "label_confidence", conf)
        object.__setattr__(self, "n_classes", n_classes)
        object.__setattr__(self, "X", X)

    @property
    def n_nodes(self) -> int:
        return self.W.shape[0]

    @property
    def labeled(self) -> np.ndarray:
        """Boolean mask of the nodes with a given label."""
        return self.y >= 0

    @property
    def lone_labels(self) -> np.ndarray:
        """Boolean mask of the given labels that are the only one of their class in the run
        (``class_label_counts``). Leaving such a label out leaves its class no mass at all,
        so a leave-one-out margin of 1 says nothing about it: on weka's glass at 10%
        labelled the harmonic solver flagged every one of them, and every one was right."""
        labeled = self.labeled
        lone = np.zeros(self.n_nodes, dtype=bool)
        lone[labeled] = self.class_label_counts[self.y[labeled]] <= 1
        return lone

    def without_features(self) -> LabelProblem:
        """The same problem without ``X``, for a solver that reads only the graph: a copy of
        this one, whose W was checked when it was made, so it is not checked again."""
        problem = copy.copy(self)
        object.__setattr__(problem, "X", None)
        return problem

    def with_labels(self, y: np.ndarray, label_confidence: np.ndarray | None = None) -> LabelProblem:
        """The same graph with other given labels (for cross-validation, leave-one-out and a
        holdout): its class label counts are those labels' own, the labels the solver sees."""
        return LabelProblem(self.W if self.has_graph else None, y, label_confidence, self.n_classes, self.X)


@dataclass(frozen=True, eq=False)
class Prediction:
    """What a solver returns.

    Attributes
    ----------
    labels : array of int, shape (n,)
        Predicted class index; ``-1`` where no labelled node can reach the node (its
        confidence is then 0: no silent guess).
    confidence : array of float in [0, 1], shape (n,)
    noisy : array of bool, shape (n,)
        True only for given labels the solver judges wrong.
    scores : array of float, shape (n, C)
        The solver's per-class scores (their meaning is the solver's; see its docstring).
        The store gets them as one distribution per node (``labelling.scores``: a
        non-negative row divided by its sum, a signed row through a softmax).
    method : str
    params : dict
        The parameters the solver ran with, after defaults and tuning.
    info : dict
        Solver metadata (iterations, chosen hyperparameters, timings of its own steps...).
    noise_score : array of float, shape (n,), optional
        How strongly the solver doubts each given label, to rank them (NaN for unlabelled
        nodes): a given label is flagged (``noisy``) when its score reaches the solver's
        ``noise_threshold``. Each solver's docstring says what its score measures; for
        most it is the margin of the best other class over the given one in the label's
        held-out prediction (cleanlab's ``normalized_margin``, negated), in [-1, 1].
        ``None`` when the solver did not look for noise.
    """

    labels: np.ndarray
    confidence: np.ndarray
    noisy: np.ndarray
    scores: np.ndarray
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    noise_score: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.labels)
        if self.confidence.shape != (n,) or self.noisy.shape != (n,) or self.scores.shape[0] != n:
            raise ValueError("labels, confidence, noisy and scores must have one row per node")
        if self.noise_score is not None and np.shape(self.noise_score) != (n,):
            raise ValueError("noise_score must have one value per node")
        if n and (self.confidence.min() < 0 or self.confidence.max() > 1):
            raise ValueError("confidence must lie in [0, 1]")

    @property
    def label_scale_scores(self) -> np.ndarray:
        """``scores`` on the scale the confidences read: harmonic's absorption
        probabilities times its class mass weights (``info["class_mass_weights"]``, Zhu,
        Ghahramani & Lafferty 2003, Sec. 4; its labels' arg-max too, but where the label is
        the centred arg-max of the unscaled scores), each row then normalised and sharpened
        by its confidence temperature (``info["temperature"]``), so that a node's score of
        its label is its confidence, except where a step after the scores chose the label: a
        flagged given label is predicted its held-out class (its scores may still favour the
        given label it was clamped to; on digits with 10% flipped, 10 nodes), and the centred
        arg-max (``labelling/scores.py`` lists every case); every other solver's scores as
        they are (maxmargin's are its calibrated probabilities already). A prediction merged
        from batches holds scores already on this scale and no weights."""
        return self.label_scale_scores_of(slice(None))

    def label_scale_scores_of(self, nodes: slice) -> np.ndarray:
        """``label_scale_scores`` of the node positions ``nodes`` only (a slice of the
        write-back), without the whole (n, C) product."""
        weights = self.info.get("class_mass_weights")
        scores = self.scores[nodes]
        if weights is None:
            return scores
        # one new array, the steps in place on it: the write-back's slice of 200,000 nodes of
        # 1,000 classes is 1.6 GB an array of doubles (sharpen(normalise(...)) made four more)
        scaled = scores * np.asarray(weights, dtype=np.float64)
        # CG may leave -1e-17 where the exact value is 0: clipped, so the row reads as shares
        np.clip(scaled, 0.0, None, out=scaled)
        temperature = float(self.info.get("temperature", 1.0))
        if temperature == 1.0:
            return scaled
        # the shares p, then p^(1/T) / Σ_c p_c^(1/T), as harmonic's confidence is computed
        # (a row of zeros, a node no label reaches, stays zeros): sharpen(normalise(scaled))
        rows_normalised(scaled)
        return rows_normalised(np.power(scaled, 1.0 / temperature, out=scaled))
