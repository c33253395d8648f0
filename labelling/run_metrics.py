"""What a labelling run measures about its own output, and the held-out slice of the given
labels it can score itself on. Pure functions of the exported problem and the prediction;
the flow stores the result on the ``LabelRun`` node and publishes it as artifacts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers import LabelProblem, Prediction, degenerate_text

from .components import DEGENERATE_INFO
from .evaluation import expected_calibration_error, reliability_table
from .problems import ExportedProblem
from .wording import counted, named

CONFIDENCE_BINS = 10


@dataclass(frozen=True, eq=False)
class Holdout:
    """Given labels hidden from the solver to score the run: node positions and classes."""

    nodes: np.ndarray
    classes: np.ndarray


def degenerate_findings(prediction: Prediction) -> list[dict]:
    """The solver's findings that its labelling is no better than a guess: one per solver
    batch that found so (``info["degenerate_batches"]``, classes of the whole problem), or
    the whole graph's solve's own (``DEGENERATE_INFO``)."""
    found = prediction.info.get("degenerate_batches")
    if found is None:  # the whole graph in one solve
        found = [prediction.info[key] for key in DEGENERATE_INFO if prediction.info.get(key)]
    return list(found)


def degenerate_note(exported: ExportedProblem, prediction: Prediction) -> list[str]:
    """The solver's finding that its labelling is no better than a guess (one class takes
    nearly every unlabelled node, or the given labels held out come back no more often than
    the largest class's share; ``solvers.degenerate_text``), its class named. Before, only
    the solver's Python warning said it: a run's report and log did not. Of a run solved in
    batches, the first batch found so, with its size and how many more were."""
    found = degenerate_findings(prediction)
    if not found:
        return []
    first = found[0]
    text = degenerate_text(prediction.method, first, _class_name(exported, first))
    batches = prediction.info.get("n_batches") or 1
    if batches > 1:
        more = f", and {len(found) - 1:,} more of the {batches:,} batches" if len(found) > 1 else ""
        text = f"in a solver batch of {first['n_nodes']:,} nodes{more}: {text}"
    return [text.strip()]


def lone_labels_note(exported: ExportedProblem, prediction: Prediction) -> list[str]:
    """A warning when the solver looked for noise and some given labels are the only one of
    their class in the run (``LabelProblem.lone_labels``): leaving one out leaves its class
    no evidence, so the solvers do not judge it, and a person should know it went
    unchecked rather than read its missing flag as a pass."""
    problem = exported.problem
    lone = problem.lone_labels
    if prediction.noise_score is None or not lone.any():
        return []
    names = [str(exported.classes[c]) for c in np.unique(problem.y[lone])]
    return [f"classes with a single given label: {named(names)}. Such a label cannot be checked for noise (no other"
            " label confirms or doubts it) and is never flagged; give two or more labels of a class to check them"]


def faint_nodes_note(exported: ExportedProblem, prediction: Prediction) -> list[str]:
    """A warning, naming the first of them, when the solver labelled nodes that are joined to
    the others only by relationships of negligible weight (harmonic's ``info["faint_nodes"]``):
    far outliers, whose label is their neighbours' and whose confidence does not say how far
    they are."""
    faint = np.asarray(prediction.info.get("faint_nodes", ()), dtype=np.int64)
    if not faint.size:
        return []
    keys = [str(key) for key in exported.keys[np.sort(faint)]]
    return [f"{counted(faint.size, 'node')} ({named(keys)}) joined to the others only by "
            "relationships of negligible weight (far from every other node) took their neighbours' label; their "
            "confidence does not say how far they are. A feature scaled to a huge spread (a nearly constant "
            "column) makes such outliers: see build-graph --scale"]


def hold_out(exported: ExportedProblem, fraction: float, seed: int = 0) -> tuple[ExportedProblem, Holdout]:
    """Hide ``fraction`` of each class's given labels from the solver (stratified; every
    class keeps at least one label), so the run can measure its accuracy on them.

    The hidden nodes are labelled by the solver like unlabelled ones, and their
    ``label_noise`` is written as null (the solver never saw their label).

    How many: each class holds out ⌊fraction · n_c⌋, never its last label, and at least one
    label is held out in all (from the class with the largest remainder fraction · n_c −
    ⌊fraction · n_c⌋ that can spare one). Why the one: with 5-7 labels per class, 10% held out
    none of wine's 18 labels, and the run, asked to score itself, gave no score and no word (a
    newcomer's walk). Why not the rounded share spread by largest remainders (Hamilton's
    method), tried: it also moves the holdouts that already held some out, so a seeded run
    scored before would be scored on other labels (glass.arff at 90%: 193 held out against
    191, and the class-mass comparison of ``tests/test_arff_files.py`` on another draw)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"holdout_fraction must lie in (0, 1), got {fraction}")
    problem = exported.problem
    rng = np.random.default_rng(seed)
    labeled = np.flatnonzero(problem.labeled)
    shuffled = labeled[rng.permutation(len(labeled))]
    classes = problem.y[shuffled]
    # rank of each node within its class in the shuffled order → the first ⌊f·n_c⌋ are held out
    order = np.argsort(classes, kind="stable")
    starts = np.searchsorted(classes[order], classes[order])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - starts
    per_class = np.bincount(classes, minlength=problem.n_classes)
    held = shuffled[rank < _holdout_quota(per_class, fraction)[classes]]
    y = problem.y.copy()
    y[held] = -1
    hidden = LabelProblem(problem.W, y, problem.label_confidence, problem.n_classes, problem.X)
    return ExportedProblem(hidden, exported.keys, exported.classes, exported.vocabulary), Holdout(held, problem.y[held])


def _holdout_quota(per_class: np.ndarray, fraction: float) -> np.ndarray:
    """Labels to hold out per class (``hold_out`` says how many)."""
    exact = fraction * per_class
    room = np.maximum(per_class - 1, 0)  # every class keeps a label
    quota = np.minimum(np.floor(exact), room)
    if quota.sum() == 0 and room.sum() > 0:
        quota[np.argmax(np.where(room > 0, exact - quota, -np.inf))] = 1
    return quota


def run_metrics(exported: ExportedProblem, prediction: Prediction, holdout: Holdout | None = None) -> dict:
    """Counts, class distribution, confidence histogram, noise flags and, with a holdout,
    accuracy and calibration error on it (JSON-friendly)."""
    problem = exported.problem
    labels, confidence = prediction.labels, prediction.confidence
    found = labels >= 0
    names, counts = np.unique(labels[found], return_counts=True)
    histogram, _ = np.histogram(confidence, bins=CONFIDENCE_BINS, range=(0.0, 1.0))
    metrics = {
        "n_labeled": int(problem.labeled.sum()),
        "n_unlabeled": int((~problem.labeled).sum()),
        "n_edges": int(problem.W.nnz // 2),
        "n_unreachable": int((~found).sum()),
        "unreached_share": float((~found).mean()) if len(found) else 0.0,
        # entities ingested after the last graph build; only an inductive solver
        # (maxmargin) labels them, from their features
        "n_without_edges": int(np.sum(np.diff(problem.W.indptr) == 0)),
        "n_flagged": int(prediction.noisy.sum()),
        # the only given label of their class: no other label can confirm or doubt them
        "n_lone_labels": int(problem.lone_labels.sum()),
        "mean_confidence": float(confidence.mean()) if len(confidence) else None,
        "class_counts": {str(exported.classes[c]): int(n) for c, n in zip(names, counts)},
        "confidence_histogram": {f"{b / CONFIDENCE_BINS:.1f}-{(b + 1) / CONFIDENCE_BINS:.1f}": int(n)
                                 for b, n in enumerate(histogram)},
        # the headline's first words when the solver found its labelling no better than a
        # guess (degenerate_note says it whole): what is guessed, None when nothing was
        "no_better_than_guessing": _guessed(exported, degenerate_findings(prediction)),
    }
    if holdout is not None and len(holdout.nodes):
        correct = labels[holdout.nodes] == holdout.classes
        metrics.update(
            n_holdout=int(len(holdout.nodes)),
            holdout_accuracy=float(correct.mean()),
            holdout_ece=expected_calibration_error(confidence[holdout.nodes], correct),
            **holdout_by_class(exported, labels[holdout.nodes], holdout),
        )
    return metrics


def _class_name(exported: ExportedProblem, finding: dict) -> str | None:
    """The name of the class a finding says took the unlabelled nodes; None for nmf's
    held-out check, which names none."""
    return str(exported.classes[finding["class"]]) if "class" in finding else None


def _guessed(exported: ExportedProblem, found: list[dict]) -> str | None:
    """What a labelling no better than a guess guesses: the class that took the unlabelled
    nodes (``'b'``), or the given labels' largest class; None without such a finding."""
    if not found:
        return None
    name = _class_name(exported, found[0])
    return "the largest class" if name is None else repr(name)


def holdout_by_class(exported: ExportedProblem, predicted: np.ndarray, holdout: Holdout) -> dict:
    """What the accuracy alone hides when the classes' sizes differ: each class's recall and
    precision on the held-out labels, their mean recall (the balanced accuracy), and the
    accuracy of always answering the most common of the labels the solver was given.

    Measured on weka's ReutersCorn (45 corn articles in 1,554; ``--text``, cosine graph,
    half the labels held out): accuracy 0.968, below the 0.972 of answering "not corn"
    every time, while the run found 21 of the 22 held-out corn articles (balanced accuracy
    0.961). The accuracy alone reads as a run worse than doing nothing.

    ``exported`` is the problem the solver saw (the held-out labels hidden) and ``predicted``
    the labels it gave the held-out nodes (-1: none)."""
    problem, truth = exported.problem, holdout.classes
    n_classes = problem.n_classes
    held = np.bincount(truth, minlength=n_classes)
    hits = np.bincount(truth[predicted == truth], minlength=n_classes)
    answered = np.bincount(predicted[predicted >= 0], minlength=n_classes)
    majority = int(np.argmax(np.bincount(problem.y[problem.labeled], minlength=n_classes)))
    present = np.flatnonzero(held)
    return {
        "holdout_balanced_accuracy": float(np.mean(hits[present] / held[present])),
        "holdout_majority_class": str(exported.classes[majority]),
        "holdout_majority_accuracy": float(held[majority] / len(truth)),
        "holdout_classes": {
            str(exported.classes[c]): {"held_out": int(held[c]), "recall": float(hits[c] / held[c]),
                                       "precision": float(hits[c] / answered[c]) if answered[c] else None}
            for c in present},
    }


def holdout_reliability(prediction: Prediction, holdout: Holdout):
    """Accuracy per confidence bin on the held-out labels (``evaluation.reliability_table``)."""
    return reliability_table(prediction.confidence[holdout.nodes], prediction.labels[holdout.nodes] == holdout.classes)
