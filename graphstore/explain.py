"""``explain``'s arithmetic: a node's neighbours, their weights and each class's share."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from .errors import NotFound
from .runs import naive_utc

#: Cut edges ``explain`` lists for the cut solvers, strongest first.
CUT_EDGES_SHOWN = 10
#: Solvers whose answer is a cut of the graph: ``explain`` shows the cut edges at the node.
CUT_SOLVERS = ("mincut", "spectral")

#: Columns of the neighbour table of ``GraphStore.explain``, in order.
NEIGHBOUR_COLUMNS = ("key", "weight", "share", "given_label", "predicted_label", "label", "agrees")


def run_classes(node: Mapping[str, Any] | None, read_runs: Callable[..., pd.DataFrame]) -> dict[str, list]:
    """The class order of each run whose scores the node's neighbours carry (``read_runs``:
    the store's), for ``explanation``'s score shares: one lookup per run, and a node's
    neighbours were mostly labelled by one or two."""
    runs = {entry.get("run") for entry in (node or {}).get("neighbours") or []
            if entry and entry.get("scores") is not None and not entry.get("given")}
    found = {run: read_runs(run_id=run) for run in sorted(runs - {None})}
    return {run: list(rows["classes"].iloc[0] or []) for run, rows in found.items() if len(rows)}


def _shares(per_class: Mapping[Any, float], degree: float) -> dict[Any, float]:
    """class → weight / degree, largest first (ties by name)."""
    shares = sorted(((label, weight / degree if degree > 0 else 0.0) for label, weight in per_class.items()),
                    key=lambda item: (-item[1], str(item[0])))
    return dict(shares)


def _score_weights(entries: list[dict[str, Any]], classes_of: Mapping[str, list]) -> dict[Any, float]:
    """class → weight, each unlabelled neighbour's weight spread over the classes by its
    scores (in its run's class order), a given label's whole to its class, and a neighbour
    without scores whole to its predicted label (a loop over one node's neighbours)."""
    per_class: dict[Any, float] = {}
    for entry in entries:
        weight, scores = float(entry["weight"] or 0.0), entry.get("scores")
        classes = classes_of.get(str(entry.get("run")))
        if not entry.get("given") and scores is not None and classes is not None and len(classes) == len(scores):
            for label, score in zip(classes, scores, strict=True):
                per_class[label] = per_class.get(label, 0.0) + weight * float(score)
        else:
            per_class[entry["label"]] = per_class.get(entry["label"], 0.0) + weight
    return {label: weight for label, weight in per_class.items() if weight > 0}


def explanation(node: Mapping[str, Any] | None, neighbours: Iterable[Mapping[str, Any]], dataset: str,
                key: str, classes_of: Mapping[str, list] | None = None) -> tuple[dict[str, Any], pd.DataFrame]:
    """``explain``'s result from the rows of ``explain_node`` and ``explain_neighbours``.

    ``node["neighbours"]`` lists ``{key, label, weight, given, scores, run}`` for every
    neighbour (label: the given one, else the predicted one; an entry with a null key
    stands for "no neighbour"); it becomes ``degree`` (the sum of the weights),
    ``n_neighbours`` and two votes, each class → a share of the degree, largest first:

    - ``class_shares``, by labels: a neighbour's whole weight to its label, ``None`` for
      neighbours with neither label (README's query 6);
    - ``score_shares``, by scores: an unlabelled neighbour's weight spread over the
      classes by its ``label_scores`` (in the class order of its run, ``classes_of``: run
      id → classes, from ``run_classes``), a given label's whole. This is the step a
      propagation solution takes (harmonic: each unlabelled node the weighted mean of its
      neighbours' distributions, the harmonic property of Zhu et al. 2003, Sec. 2; NMF's
      mean field alike), so it reads as the label does where the vote by labels may not:
      its top class was not the prediction at 43 of 955 unlabelled nodes of weka's
      credit-g, the vote by labels' at 80 (8 and 29 of 1,702 on digits;
      ``bench/explain_vote.py``).

    For the cut solvers (``CUT_SOLVERS``: a min-cut or a spectral cut puts each node on
    the side of its label) it also gives ``cut_weight``, the weight of the node's
    relationships to neighbours on another side (their label, given else predicted, is
    another class than the node's prediction; unlabelled neighbours are on no side),
    ``cut_share`` (that weight / degree) and ``cut_edges``, the ``CUT_EDGES_SHOWN``
    strongest of them (``key``, ``label``, ``weight``).
    """
    if node is None:
        raise NotFound(f"no node with key {key!r} in dataset {dataset!r}")
    node = dict(node)
    entries = [dict(e) for e in node.pop("neighbours", None) or [] if e and e.get("key") is not None]
    per_class: dict[Any, float] = {}
    for entry in entries:
        per_class[entry["label"]] = per_class.get(entry["label"], 0.0) + float(entry["weight"] or 0.0)
    degree = float(sum(per_class.values()))
    labelled_at = naive_utc(node.get("labelled_at"))
    node["labelled_at"] = None if labelled_at is None else pd.Timestamp(labelled_at)
    node.update(dataset=dataset, degree=degree, n_neighbours=len(entries), class_shares=_shares(per_class, degree),
                score_shares=_shares(_score_weights(entries, classes_of or {}), degree))
    predicted = node.get("predicted_label")
    if node.get("label_solver") in CUT_SOLVERS and predicted is not None:
        cut = sorted((e for e in entries if e["label"] is not None and e["label"] != predicted),
                     key=lambda e: (-float(e["weight"] or 0.0), str(e["key"])))
        weight = float(sum(float(e["weight"] or 0.0) for e in cut))
        node.update(cut_weight=weight, cut_share=weight / degree if degree > 0 else 0.0,
                    cut_edges=[{"key": e["key"], "label": e["label"], "weight": float(e["weight"] or 0.0)}
                               for e in cut[:CUT_EDGES_SHOWN]])
    frame = pd.DataFrame([dict(row) for row in neighbours], columns=[c for c in NEIGHBOUR_COLUMNS
                                                                       if c not in ("share", "agrees")])
    frame["weight"] = frame["weight"].astype(float)
    frame["share"] = frame["weight"] / degree if degree > 0 else 0.0
    frame["agrees"] = [label is not None and label == predicted for label in frame["label"]]
    for name in ("given_label", "predicted_label", "label"):
        frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    return node, frame[list(NEIGHBOUR_COLUMNS)]
