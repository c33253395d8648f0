"""``explain``'s arithmetic: a node's neighbours, their weights and each class's share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


def explanation(node: Mapping[str, Any] | None, neighbours: Iterable[Mapping[str, Any]], dataset: str,
                key: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """``explain``'s result from the rows of ``explain_node`` and ``explain_neighbours``.

    ``node["neighbours"]`` lists ``{key, label, weight}`` for every neighbour (label: the
    given one, else the predicted one; an entry with a null key stands for "no
    neighbour"); it becomes ``degree`` (the sum of the weights), ``n_neighbours`` and
    ``class_shares``: class → its neighbours' weight / degree, largest first, ``None``
    for neighbours with neither label.

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
    shares = sorted(((label, weight / degree if degree > 0 else 0.0) for label, weight in per_class.items()),
                    key=lambda item: (-item[1], str(item[0])))
    labelled_at = naive_utc(node.get("labelled_at"))
    node["labelled_at"] = None if labelled_at is None else pd.Timestamp(labelled_at)
    node.update(dataset=dataset, degree=degree, n_neighbours=len(entries), class_shares=dict(shares))
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
