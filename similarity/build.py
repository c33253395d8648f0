"""One entry point from a ``GraphSpec`` to a graph: ``build_graph`` dispatches on the kind."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .encoding import FeatureEncoding

# .cut_graphs is imported in its branches: it loads scikit-learn and scipy.cluster (0.1 s
# beside the kNN graph's own search, python -X importtime), which only its graphs need.
from .knn import delta_graph, knn_graph
from .paper_graphs import directed_similarities, mutual_knn_graph
from .spec import GraphSpec


def fitted_encoding(features: np.ndarray | None, categories: np.ndarray | None, spec: GraphSpec) -> FeatureEncoding:
    """``spec.encoding`` when the spec carries one (edges added to a built graph), else
    the scaler and vocabulary fitted on these rows (a build)."""
    return spec.encoding if spec.encoding is not None else FeatureEncoding.fit(features, categories, spec.scale)


def encoded_features(features: np.ndarray | None, labels: np.ndarray, spec: GraphSpec,
                     categories: np.ndarray | None = None) -> np.ndarray:
    """The matrix the graph's distances are measured on: the scaled numeric features and
    the categorical columns' one-hot (``similarity.encoding``), or for ``metric="hamming"``
    the embedding whose squared Euclidean distance is Blum & Chawla's information-gain-
    weighted Hamming distance."""
    encoding = fitted_encoding(features, categories, spec)
    if spec.metric == "hamming":
        n_numeric = 0 if features is None or features.ndim != 2 else features.shape[1]
        return encoding.hamming_embedding(categories, labels, n_numeric)
    return encoding.transform(features, categories)


def build_graph(features: np.ndarray, labels: np.ndarray, spec: GraphSpec,
                categories: np.ndarray | None = None,
                on_progress: Callable[[str, int, int], None] | None = None) -> tuple[sp.csr_matrix, float | None]:
    """Symmetric weighted graph from the features (and, for Blum & Chawla's label-reading
    graphs, the given labels: None where absent), with the Gaussian σ a kNN graph used
    (None for the others). The features are first scaled and the ``categories`` (n, c)
    one-hot as ``spec`` says (``encoded_features``; ``spec.encoding`` when it carries the
    fitted numbers, else fitted here). A kNN search reports its steps to
    ``on_progress(step, done, total)`` (``similarity.knn.nearest_neighbors``)."""
    features = encoded_features(features, labels, spec, categories)
    # GraphSpec.__post_init__ has checked that the fields each kind reads are set
    k, metric, weights = spec.k or 0, spec.metric or "euclidean", spec.weights or "binary"
    delta = spec.delta or 0.0
    if metric == "hamming":  # ||z(x) - z(y)||² is the weighted Hamming distance: Euclidean on z
        metric, delta = "euclidean", float(np.sqrt(delta))
    given = pd.Series(labels, dtype=object)
    codes = np.full(len(given), -1)
    codes[given.notna().to_numpy()] = pd.factorize(given.dropna())[0]
    if spec.kind == "knn":
        return knn_graph(features, k, metric=metric, weights=weights, sigma=spec.sigma,
                         symmetrise=spec.symmetrise or "max", backend=spec.search or "auto", return_sigma=True,
                         on_progress=on_progress)
    if spec.kind == "delta":
        return delta_graph(features, delta, metric=metric, weights=weights, sigma=spec.sigma), None
    if spec.kind == "mincut3":
        from .cut_graphs import mincut3_graph

        return mincut3_graph(features, codes >= 0, metric=metric), None
    if spec.kind in ("delta0", "delta_half"):
        from .cut_graphs import delta_rule_graph

        rule = "zero" if spec.kind == "delta0" else "half"
        return delta_rule_graph(features, rule, codes, metric=metric), None
    if spec.kind == "sgt":  # Joachims (2003) eq. 22 on the directed cosine kNN similarities
        from solvers.spectral import sgt_graph  # the solver's own construction, one place

        return sgt_graph(directed_similarities(features, k), k), None
    return mutual_knn_graph(features, k), None  # Bergamim & Breve (2022) Eq. 6-8
