"""Between the store and the solvers: a `SubGraph` becomes a `LabelProblem`, and a
`Prediction` becomes the prediction rows the store writes back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.sparse as sp

from graphstore.schemas import WRITTEN_PREDICTION_SCHEMA, SubGraph
from similarity.encoding import FeatureEncoding
from solvers import LabelProblem, Prediction

from .scores import readable_scores, runner_up


class NotEnoughLabels(ValueError):
    """The dataset cannot be labelled: no given label, or labels of one class only."""


class NoSuchDataset(NotEnoughLabels):
    """The dataset cannot be labelled: no node belongs to it (a misspelt name). A kind of
    ``NotEnoughLabels`` for those who catch that, named for what it is in a run's log (it
    read "NotEnoughLabels: no dataset 'wines' in the store")."""


def check_classes(dataset: str, classes: Sequence[object] | np.ndarray) -> None:
    """``NotEnoughLabels`` when the dataset's given labels hold fewer than two classes."""
    if len(classes) == 0:
        raise NotEnoughLabels(f"dataset {dataset!r} has no given label: nothing to learn from")
    if len(classes) == 1:
        raise NotEnoughLabels(
            f"dataset {dataset!r} has given labels of one class only ({classes[0]!r}): a solver"
            " needs at least two classes"
        )


@dataclass(frozen=True, eq=False)
class ExportedProblem:
    """A LabelProblem with the node keys and class names it was built from, the
    vocabulary of each categorical column whose one-hot is in ``problem.X`` (sorted values,
    ``FeatureEncoding.vocabulary``), and the scaling its numeric columns are in
    (``numeric_scaling``; None: as stored): what a kept model needs to encode new records."""

    problem: LabelProblem
    keys: np.ndarray
    classes: np.ndarray
    vocabulary: tuple[tuple[str, ...], ...] = ()
    scaling: FeatureEncoding | None = None


def numeric_scaling(encoding: FeatureEncoding | None) -> FeatureEncoding | None:
    """The numeric part of a graph's encoding (``similarity.encoding``: ``(x − center) /
    width`` per column), None when it scales nothing.

    Why the solvers' features are scaled as the graph's distances were: maxmargin's SVM
    (Kveton et al. 2010, eq. 7) reads ``problem.X`` with a kernel width from its spread
    (``solvers.maxmargin.paper_bandwidth``), and on wine's features as stored proline
    (hundreds) was the whole distance: through the flows, 0.744 right on the stored nodes
    without a label against 0.953 on the standardised features the default graph was built
    on, 0.733 against 0.950 on predicted records (WDBC 0.919 / 0.905 against 0.940 / 0.942;
    ``python -m bench maxmargin_units``). The paper leaves the units open. lcsnc z-scores
    its features itself, so scaling first changes nothing there."""
    if encoding is None or not encoding.center:
        return None
    return replace(encoding, vocabulary=())


def graph_scaling(record: dict[str, Any] | None) -> FeatureEncoding | None:
    """``numeric_scaling`` of a ``GraphBuild`` record (None: no record, as for a graph of
    the user's edges only)."""
    if not record:
        return None
    return numeric_scaling(FeatureEncoding.from_record(record))


def scale_numeric(X: np.ndarray | None, scaling: FeatureEncoding | None) -> np.ndarray | None:
    """``X``'s first (numeric) columns scaled by ``scaling``, in place: X is the problem's
    own array (a copy of 1M × 32 features is 244 MiB)."""
    if X is None or scaling is None:
        return X
    if not X.flags.writeable:  # a view of the store's Arrow buffers
        X = X.copy()
    d = len(scaling.center)
    X[:, :d] -= np.asarray(scaling.center)
    X[:, :d] /= np.asarray(scaling.width)
    return X


def in_key_order(graph: SubGraph) -> SubGraph:
    """The graph with its nodes sorted by key. Stores return nodes in an order of their own
    (Kùzu by insertion, Neo4j by internal id); solvers that draw random numbers per node
    position (mincut's resampling, the cross-validation folds) then gave the same data
    different confidences on different stores. In key order they give the same answer."""
    keys = pa.array(graph.keys, pa.string())
    order = np.asarray(pa.compute.sort_indices(keys), dtype=np.int64)
    if np.all(order[1:] > order[:-1]):
        return graph
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    features = graph.features[order] if graph.features is not None else None
    categories = graph.categories[order] if graph.categories is not None else None
    trust = graph.label_confidence[order] if graph.label_confidence is not None else None
    return SubGraph(graph.keys[order], graph.labels[order], features, position[graph.source],
                    position[graph.target], graph.weight, categories=categories, label_confidence=trust)


def problem_features(graph: SubGraph) -> tuple[np.ndarray | None, tuple[tuple[str, ...], ...]]:
    """The solvers' ``X``: the numeric features, and the categorical columns' one-hot beside
    them, with that one-hot's vocabulary (the values present; empty without categorical
    columns). Without the one-hot a dataset of categorical
    columns only would give every node the same empty row: the copy pooling
    (``labelling.indistinguishable``) then took all of vote.arff's 435 nodes for copies of
    one entity (accuracy 0.74 against 0.88 unpooled), and max-margin had nothing to fit."""
    if graph.categories is None:
        return graph.features, ()
    encoding = FeatureEncoding.fit(None, graph.categories, "none")
    onehot = encoding.transform(None, graph.categories)
    if graph.features is None or graph.features.shape[1] == 0:
        return onehot, encoding.vocabulary
    return np.hstack([graph.features, onehot]), encoding.vocabulary


def label_problem(graph: SubGraph, dataset: str = "", scaling: FeatureEncoding | None = None) -> ExportedProblem:
    """Build the solver's problem: W from the relationships, y from the given labels
    (classes in sorted order), nodes in key order (``in_key_order`` says why), the numeric
    features scaled by ``scaling`` (``numeric_scaling``: the graph's; ``graph.features`` is
    scaled in place, read for this problem).

    W_ij = max(w(i→j), w(j→i)): the local builder stores one relationship per pair, GDS kNN
    writes one per direction found, and the maximum reads both the same way. The given
    labels' trust (``graph.label_confidence``, 1 where none was given) becomes
    ``LabelProblem.label_confidence``."""
    graph = in_key_order(graph)
    n = graph.n_nodes
    if n == 0:
        raise NotEnoughLabels(f"dataset {dataset!r} has no nodes: ingest records first")
    given = pd.Series(graph.labels, dtype=object)
    has_label = given.notna().to_numpy()
    classes = np.array(sorted(given[has_label].unique()), dtype=object)
    check_classes(dataset, classes)
    y = np.full(n, -1, dtype=np.int64)
    y[has_label] = np.searchsorted(classes, given[has_label].to_numpy())
    # the SubGraph holds each pair once and no loop (schemas.one_row_per_pair: the larger
    # weight where a store had both ways), so W is that pair list read both ways, in one
    # conversion (A.maximum(A.T) made three CSR copies of 13M entries at 1M nodes); the
    # positions as int32, the CSR's own index type below 2^31 nodes, not int64 copies
    index = np.int32 if n < np.iinfo(np.int32).max else np.int64
    ends = [graph.source, graph.target]
    W = sp.csr_matrix((np.concatenate([graph.weight, graph.weight]),
                       (np.concatenate(ends, dtype=index, casting="unsafe"),
                        np.concatenate(ends[::-1], dtype=index, casting="unsafe"))),
                      shape=(n, n))
    # the trust in each given label (ingest --label-confidence), for the solvers that read it
    trust = graph.label_confidence
    X, vocabulary = problem_features(graph)
    X = scale_numeric(X, scaling)
    return ExportedProblem(LabelProblem(W, y, trust, n_classes=len(classes), X=X), graph.keys, classes,
                           vocabulary, scaling)


def prediction_rows(exported: ExportedProblem, prediction: Prediction, run_id: str,
                    labelled_at: pd.Timestamp, nodes: slice = slice(None)) -> pa.Table:
    """The rows `GraphStore.write_predictions` takes, of the node positions ``nodes`` (all by
    default; the write-back builds a slice at a time, not 1M rows of 10 scores at once); no
    prediction (label -1) is written as null. ``label_noise`` is null for nodes without a
    given label (it speaks of given labels only)."""
    labels = prediction.labels[nodes]
    n = len(labels)
    classes = pa.array(np.asarray(exported.classes, dtype=object), pa.string())
    # Arrow gathers the class names and repeats the run's constants in C: no Python
    # object per node (a million rows per run at scale).
    names = classes.take(pa.array(np.where(labels >= 0, labels, 0), pa.int64(), mask=labels < 0))
    given = exported.problem.labeled[nodes]
    noise_score = (np.full(n, np.nan) if prediction.noise_score is None
                   else np.asarray(prediction.noise_score[nodes], dtype=np.float64))
    stamp = pa.scalar(labelled_at.to_pydatetime().replace(tzinfo=None), pa.timestamp("us"))
    readable = readable_scores(prediction.label_scale_scores_of(nodes), labels)  # labelling/scores.py
    runner, margin = runner_up(readable, labels)
    no_scores = np.isnan(readable.sum(axis=1)) if readable.shape[1] else np.ones(n, bool)
    readable[no_scores] = 0.0  # null lists' values, which nothing reads
    # one list per node from one flat buffer: offsets, not a Python list per row, and the
    # buffer shared, not copied (wide rows: 1,000 classes are 8 kB a node)
    offsets = pa.array(np.arange(n + 1, dtype=np.int32) * readable.shape[1], pa.int32())
    scores = pa.ListArray.from_arrays(offsets, pa.array(readable.ravel()), mask=pa.array(no_scores))
    return pa.table(
        {
            "key": pa.array(exported.keys[nodes], pa.string()),
            "predicted_label": names,
            "label_confidence": pa.array(prediction.confidence[nodes].astype(np.float64)),
            "label_noise": pa.array(np.asarray(prediction.noisy[nodes], dtype=bool), mask=~given),
            # how strongly the solver doubts the given label, to rank by (null: not scored)
            "label_noise_score": pa.array(noise_score, mask=~given | np.isnan(noise_score)),
            "label_run_id": pa.repeat(pa.scalar(run_id, pa.string()), n),
            "label_solver": pa.repeat(pa.scalar(prediction.method, pa.string()), n),
            "labelled_at": pa.repeat(stamp, n),
            # per class, in the order of exported.classes (the run records it: LabelRun.classes)
            "label_scores": scores,
            "label_runner_up": classes.take(pa.array(np.where(runner >= 0, runner, 0), pa.int64(),
                                                     mask=runner < 0)),
            "label_margin": pa.array(margin, mask=np.isnan(margin)),
        }
    ).cast(WRITTEN_PREDICTION_SCHEMA)
