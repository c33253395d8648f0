"""Similarity graphs built locally from feature vectors (the embedded store's edge builder,
and the reference the Neo4j/GDS builder is checked against)."""

from .cut_graphs import DELTA_RULES, delta_rule, delta_rule_graph, mincut3_graph
from .knn import (DegenerateWeightsWarning, delta_graph, gaussian_sigma_from_edges, knn_edges_for, knn_graph,
                  median_kth_distance, nearest_neighbors, symmetrise_graph, weights_problem)

__all__ = [
    "knn_graph",
    "knn_edges_for",
    "gaussian_sigma_from_edges",
    "delta_graph",
    "nearest_neighbors",
    "symmetrise_graph",
    "mincut3_graph",
    "delta_rule",
    "delta_rule_graph",
    "DELTA_RULES",
    "DegenerateWeightsWarning",
    "median_kth_distance",
    "weights_problem",
]
