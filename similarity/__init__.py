"""Similarity graphs built locally from feature vectors (the embedded store's edge builder,
and the reference the Neo4j/GDS builder is checked against), and ``GraphSpec``, the one
description of a graph every layer passes. Imports nothing of the project but
``solvers.spectral.sgt_graph`` (the SGT paper's own graph).

The names below are imported on first use: the modules load scikit-learn (about 1 s), which
a command that only labels or reads the store never needs (bench/cli.py).
"""

from __future__ import annotations

import importlib

_HOMES = {
    "knn_graph": "knn", "knn_edges_for": "knn", "gaussian_sigma_from_edges": "knn", "delta_graph": "knn",
    "nearest_neighbors": "knn", "symmetrise_graph": "knn",
    "mincut3_graph": "cut_graphs", "delta_rule": "cut_graphs", "delta_rule_graph": "cut_graphs",
    "DELTA_RULES": "cut_graphs",
    "DegenerateWeightsWarning": "knn", "LowRecallWarning": "knn", "median_kth_distance": "knn",
    "weights_problem": "knn", "shares_problem": "knn", "collected_findings": "findings",
    "mutual_knn_graph": "paper_graphs", "directed_similarities": "paper_graphs",
    "build_graph": "build",
    "GraphSpec": "spec", "GRAPH_KINDS": "spec", "METRICS": "spec", "WEIGHTS": "spec", "SYMMETRISE": "spec",
}

__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
