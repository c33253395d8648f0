"""``GraphSpec``: which similarity graph to build, validated once, passed whole through
every layer (CLI and schedules → flows → store port → builder).

Kinds and what they read (``similarity`` builds each; Neo4j's GDS builds ``knn``):

- ``knn``: the k nearest neighbours by ``metric``, weighted by ``weights`` (Gaussian with
  bandwidth ``sigma``, default the median distance to the k-th neighbour), symmetrised by
  ``symmetrise``.
- ``delta``: every pair closer than ``delta`` (Blum & Chawla 2001, Sec. 6.1), binary
  weights unless a σ is given for Gaussian ones.
- ``mincut3``, ``delta0``, ``delta_half``: Blum & Chawla's graphs that also read the given
  labels (Sec. 6.1); they fix their own weights.
- ``sgt``: Joachims (2003) eq. 22 on the directed cosine kNN similarities; ``mutual_knn``:
  Bergamim & Breve (2022) Eq. 6-8. Both fix their own metric and weights.

This module imports no scikit-learn (the CLI validates a spec without loading it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .encoding import DEFAULT_SCALE, SCALES, FeatureEncoding

GRAPH_KINDS = ("knn", "delta", "mincut3", "delta0", "delta_half", "sgt", "mutual_knn")
METRICS = ("euclidean", "cosine")
#: Blum & Chawla's information-gain-weighted Hamming distance on categorical columns
#: (similarity/encoding.py): for the graphs that threshold or rank distances of their own.
HAMMING_KINDS = ("delta", "mincut3", "delta0", "delta_half")
WEIGHTS = ("gaussian", "cosine", "binary")
SYMMETRISE = ("max", "mean", "mutual")
#: The kinds that take k, and the kinds that take a metric.
K_KINDS = ("knn", "sgt", "mutual_knn")
METRIC_KINDS = ("knn", "delta", "mincut3", "delta0", "delta_half")
DEFAULT_K = 10


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> list[str]:
    return [] if value in allowed else [f"{name} must be one of {list(allowed)}, got {value!r}"]


def _positive(name: str, value: Any) -> list[str]:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
        return [f"{name} must be a positive number, got {value!r}"]
    return []


def graph_problems(kind: Any, k: Any = DEFAULT_K, metric: Any = "euclidean", weights: Any = "gaussian",
                   delta: Any = None, sigma: Any = None, symmetrise: Any = "max",
                   scale: Any = DEFAULT_SCALE) -> list[str]:
    """Every problem with these graph options, one line each (empty when they make a
    valid ``GraphSpec``): a schedule file reports them all at once, a spec raises the first."""
    problems = _choice("graph", kind, GRAPH_KINDS)
    if kind in K_KINDS and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        problems.append(f"k must be a positive integer, got {k!r}")
    if kind in METRIC_KINDS and metric == "hamming":
        if kind not in HAMMING_KINDS:
            problems.append(f"metric 'hamming' is for the graphs {list(HAMMING_KINDS)} (Blum & Chawla's"
                            f" information-gain-weighted distance); a {kind} graph reads categorical columns"
                            " as one-hot beside the numbers: use metric 'euclidean' or 'cosine'")
    elif kind in METRIC_KINDS:
        problems += _choice("metric", metric, METRICS + ("hamming",) if kind in HAMMING_KINDS else METRICS)
    problems += _choice("scale", scale, SCALES)
    if kind in ("knn", "delta"):
        problems += _choice("weights", weights, WEIGHTS)
    if kind == "knn":
        problems += _choice("symmetrise", symmetrise, SYMMETRISE)
    if kind == "delta" and delta is None:
        problems.append('graph "delta" needs delta = <distance threshold> (--delta on the command line)')
    return problems + _positive("delta", delta) + _positive("sigma", sigma)


@dataclass(frozen=True)
class GraphSpec:
    """A similarity graph's parameters; fields a kind does not use are None.

    Build one with ``GraphSpec.from_options`` (defaults filled, unused fields cleared) or
    directly; either way it is validated on construction.

    Parameters
    ----------
    kind : str, default "knn"
        One of ``GRAPH_KINDS`` (module docstring).
    k : int or None, default 10
        Neighbours per node (``knn``, ``sgt``, ``mutual_knn``).
    metric : {"euclidean", "cosine"} or None
    weights : {"gaussian", "cosine", "binary"} or None
        ``knn`` and ``delta`` only.
    delta : float or None
        The δ-graph's radius (required for ``delta``).
    sigma : float or None
        Gaussian bandwidth; None: the median k-th-neighbour distance (``knn``).
    symmetrise : {"max", "mean", "mutual"} or None
        How the directed kNN lists become undirected (``knn`` only).
    scale : {"standard", "robust", "none"}, default "standard"
        How the numeric features are scaled before distances are measured (every kind):
        scikit-learn's ``StandardScaler`` / ``RobustScaler`` semantics
        (``similarity.encoding``).
    encoding : FeatureEncoding or None
        The numbers ``scale`` was fitted to (and the categorical vocabulary) when the
        graph was built; None before. Recorded on ``GraphBuild`` and reused for the
        entities an incremental run adds, as ``sigma`` is.
    """

    kind: str = "knn"
    k: int | None = DEFAULT_K
    metric: str | None = "euclidean"
    weights: str | None = "gaussian"
    delta: float | None = None
    sigma: float | None = None
    symmetrise: str | None = "max"
    scale: str = DEFAULT_SCALE
    encoding: FeatureEncoding | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        problems = graph_problems(self.kind, self.k, self.metric, self.weights, self.delta, self.sigma,
                                  self.symmetrise, self.scale)
        if not problems and self.encoding is not None and self.encoding.scale != self.scale:
            problems = [f"the encoding was fitted with scale {self.encoding.scale!r}, the spec says {self.scale!r}"]
        if problems:
            raise ValueError(problems[0])

    @classmethod
    def from_options(cls, graph: str | None = None, k: int | None = None, metric: str | None = None,
                     weights: str | None = None, delta: float | None = None,
                     sigma: float | None = None, symmetrise: str | None = None,
                     scale: str | None = None) -> GraphSpec:
        """The spec of a kind with defaults for what is not given (kNN, k = 10, Euclidean,
        Gaussian, max), and None for what the kind does not use; a δ-graph without a σ
        has binary weights (a Gaussian needs a bandwidth the δ-graph does not pick)."""
        kind = graph or "knn"
        if kind not in GRAPH_KINDS:
            raise ValueError(_choice("graph", kind, GRAPH_KINDS)[0])
        return cls(
            kind=kind,
            k=(DEFAULT_K if k is None else k) if kind in K_KINDS else None,
            metric=(metric or "euclidean") if kind in METRIC_KINDS else None,
            weights=(("binary" if kind == "delta" and sigma is None and weights in (None, "gaussian") else
                      weights or "gaussian") if kind in ("knn", "delta") else None),
            delta=delta if kind == "delta" else None,
            sigma=sigma if kind in ("knn", "delta") else None,
            symmetrise=(symmetrise or "max") if kind == "knn" else None,
            scale=scale or DEFAULT_SCALE,
        )

    @property
    def knn(self) -> tuple[int, str, str]:
        """``(k, metric, weights)`` of a ``knn`` spec (set whenever the kind is ``knn``)."""
        if self.kind != "knn" or self.k is None or self.metric is None or self.weights is None:
            raise ValueError(f"a {self.kind} graph has no k-NN parameters")
        return self.k, self.metric, self.weights

    def with_sigma(self, sigma: float | None) -> GraphSpec:
        """The same graph with the bandwidth it was actually built with."""
        return replace(self, sigma=None if sigma is None else float(sigma))

    def with_encoding(self, encoding: FeatureEncoding | None) -> GraphSpec:
        """The same graph with the scaler and vocabulary it was actually built with."""
        return replace(self, encoding=encoding)

    def capped(self, n_nodes: int, dataset: str) -> tuple[GraphSpec, list[str]]:
        """The spec a dataset of ``n_nodes`` can give (k at most n - 1, with a warning
        saying so); fewer than 2 nodes make no graph."""
        if self.kind not in K_KINDS:
            return self, []
        if n_nodes < 2:
            raise ValueError(f"dataset {dataset!r} has {n_nodes} node{'s' * (n_nodes != 1)}: a similarity graph"
                             " needs at least 2 nodes")
        if self.k is not None and self.k > n_nodes - 1:
            return replace(self, k=n_nodes - 1), [f"k = {self.k} is more than the {n_nodes - 1} other nodes of"
                                                  f" {dataset!r}: the graph is built with k = {n_nodes - 1}"]
        return self, []

    def describe(self) -> str:
        """``10-NN, euclidean, gaussian weights`` and the like, for messages."""
        scaled = "" if self.scale == DEFAULT_SCALE else f", scale {self.scale}"
        if self.kind == "knn":
            return f"{self.k}-NN, {self.metric}, {self.weights} weights{scaled}"
        if self.kind == "delta":
            return f"δ = {self.delta}, {self.metric}, {self.weights} weights{scaled}"
        if self.kind in K_KINDS:
            return f"{self.kind}, k = {self.k}{scaled}"
        return f"{self.kind}, {self.metric}{scaled}"

    def as_record(self) -> dict[str, Any]:
        """The spec as the store's ``GraphBuild`` record keeps it (``graph`` for ``kind``)."""
        record = asdict(self)
        record["graph"] = record.pop("kind")
        record.pop("encoding")
        if self.encoding is not None:  # the fitted numbers: scale_center, scale_width, vocabulary
            record.update(self.encoding.as_record())
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> GraphSpec:
        """The spec of a ``GraphBuild`` record (extra keys such as ``built_at`` ignored).
        A record from before scaling existed was built on the features as stored:
        ``scale="none"``."""
        names = ("k", "metric", "weights", "delta", "sigma", "symmetrise")
        values = {name: record.get(name) for name in names}
        if values["k"] is not None:
            values["k"] = int(values["k"])
        encoding = FeatureEncoding.from_record(record)
        return cls(kind=record.get("graph") or "knn", **values, scale=encoding.scale, encoding=encoding)


@dataclass(frozen=True)
class GraphRequest:
    """The graph options a caller gave; None is "not given".

    A rebuild makes ``spec()``: the given options with the defaults for the rest. An
    incremental run keeps the graph as recorded and only checks that nothing given
    disagrees with the record (``flows.incremental.graph_parameters``). Validated on
    construction, so a bad option fails before any work.
    """

    graph: str | None = None
    k: int | None = None
    metric: str | None = None
    weights: str | None = None
    delta: float | None = None
    sigma: float | None = None
    scale: str | None = None

    def __post_init__(self) -> None:
        self.spec()

    def spec(self) -> GraphSpec:
        """The graph a rebuild makes: the given options, the defaults for the rest."""
        return GraphSpec.from_options(self.graph, self.k, self.metric, self.weights, self.delta, self.sigma,
                                      scale=self.scale)

    def given(self) -> dict[str, Any]:
        """The options given, by name."""
        return {name: value for name, value in asdict(self).items() if value is not None}

