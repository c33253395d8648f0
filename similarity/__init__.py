"""Similarity graphs built locally from feature vectors (the embedded store's edge builder,
and the reference the Neo4j/GDS builder is checked against)."""

from .cut_graphs import DELTA_RULES, delta_rule, delta_rule_graph, mincut3_graph
from .knn import (delta_graph, gaussian_sigma_from_edges, knn_edges_for, knn_graph, nearest_neighbors,
                  symmetrise_graph)
from .paper_graphs import directed_similarities, mutual_knn_graph

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
    "mutual_knn_graph",
    "directed_similarities",
]
