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
- ``edges``: no similarity graph at all, the user's own edges of one type (``edges_type``,
  weighted by the property ``edges_property``, else 1). Spelt ``edges:TYPE[:WEIGHT]``.
- The user's edges added to any other kind: ``KIND+edges:TYPE[:WEIGHT]`` (e.g.
  ``knn+edges:CO_PURCHASED:count``) labels over W = W_kind + ``edges_weight`` · W_user.

The user's edges are read, never written (graphstore/user_edges.py). Decisions for the sum:
each graph is made one undirected row per pair first (the larger weight where a pair is
stored each way, as for the similarity relationships), then the two are added pair by pair;
``edges_weight`` (default 1) is the only scaling: the user's weights are used as they are
stored, so counts of co-purchases next to Gaussian weights in (0, 1] want a small
``edges_weight`` (a rescaling rule of our own would be a second hidden choice).

This module imports no scikit-learn (the CLI validates a spec without loading it).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .encoding import DEFAULT_SCALE, SCALES, FeatureEncoding

GRAPH_KINDS = ("knn", "delta", "mincut3", "delta0", "delta_half", "sgt", "mutual_knn", "edges")
METRICS = ("euclidean", "cosine")
#: Blum & Chawla's information-gain-weighted Hamming distance on categorical columns
#: (similarity/encoding.py): for the graphs that threshold or rank distances of their own.
HAMMING_KINDS = ("delta", "mincut3", "delta0", "delta_half")
WEIGHTS = ("gaussian", "cosine", "binary")
SYMMETRISE = ("max", "mean", "mutual")
#: How a ``knn`` graph's neighbours are searched (``similarity.knn.nearest_neighbors``'s
#: ``backend``): "auto" is exact up to 50k rows, then faiss HNSW with its recall checked;
#: the others are ``similarity.knn.KNN_BACKENDS`` (its docstring has the measured trade).
SEARCHES = ("auto", "exact", "hnsw", "ivf", "hnswlib", "pynndescent")
#: The kinds that take k, and the kinds that take a metric.
K_KINDS = ("knn", "sgt", "mutual_knn")
METRIC_KINDS = ("knn", "delta", "mincut3", "delta0", "delta_half")
DEFAULT_K = 10
#: A relationship type or property name of the user's edges: the identifiers
#: graphstore/identifiers.py accepts (checked here too: the CLI validates a spec early).
EDGE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
USER_EDGES = "edges"


def parse_graph(graph: Any) -> tuple[Any, str | None, str | None]:
    """``(kind, edges_type, edges_property)`` of a ``--graph`` value: ``KIND``,
    ``edges:TYPE[:WEIGHT]`` or ``KIND+edges:TYPE[:WEIGHT]``. What is not a string, or has
    no ``edges:`` part, comes back as the kind (``graph_problems`` names a bad one)."""
    if not isinstance(graph, str):
        return graph, None, None
    kind, plus, tail = graph.partition("+")
    if not plus and graph.startswith(USER_EDGES + ":"):
        kind, tail = USER_EDGES, graph
    elif not plus:
        return graph, None, None
    name, colon, rest = tail.partition(":")
    if name != USER_EDGES or not colon:
        raise ValueError(f"graph {graph!r}: the user's edges are written edges:TYPE[:WEIGHT_PROPERTY],"
                         f" alone or after a kind (knn+edges:TYPE)")
    edge_type, _, prop = rest.partition(":")
    for value, what in ((edge_type, "relationship type"), (prop or "weight", "weight property")):
        if not EDGE_NAME.fullmatch(value):
            raise ValueError(f"graph {graph!r}: invalid {what} {value!r} (letters, digits and '_', not"
                             " starting with a digit)")
    return kind, edge_type, prop or None


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> list[str]:
    return [] if value in allowed else [f"{name} must be one of {list(allowed)}, got {value!r}"]


def _positive(name: str, value: Any) -> list[str]:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
        return [f"{name} must be a positive number, got {value!r}"]
    return []


def _edges_weight_problems(kind: Any, edge_type: str | None, edges_weight: Any) -> list[str]:
    if edges_weight is None:
        return []
    if isinstance(edges_weight, bool) or not isinstance(edges_weight, (int, float)) \
            or not math.isfinite(edges_weight) or not edges_weight > 0:
        return [f"edges_weight must be a positive number, got {edges_weight!r}"]
    if edge_type is None or kind == USER_EDGES:
        return ["edges_weight weighs the user's edges in a sum with a similarity graph: it needs"
                " --graph KIND+edges:TYPE (e.g. knn+edges:CO_PURCHASED)"]
    return []


def graph_problems(kind: Any, k: Any = DEFAULT_K, metric: Any = "euclidean", weights: Any = "gaussian",
                   delta: Any = None, sigma: Any = None, symmetrise: Any = "max", *,
                   edges_weight: Any = None, scale: Any = DEFAULT_SCALE, search: Any = None) -> list[str]:
    """Every problem with these graph options, one line each (empty when they make a
    valid ``GraphSpec``): a schedule file reports them all at once, a spec raises the
    first. ``kind`` may be a whole ``--graph`` value (``knn+edges:TYPE``, ``parse_graph``)."""
    try:
        kind, edge_type, _ = parse_graph(kind)
    except ValueError as error:
        return [str(error)]
    problems = _choice("graph", kind, GRAPH_KINDS) + _edges_weight_problems(kind, edge_type, edges_weight)
    # an unknown kind: each option is checked as for a kind that takes it, so that a schedule's
    # misspelt graph and bad k are said at once, not one after the other
    known = kind in GRAPH_KINDS

    def takes(kinds: tuple[str, ...]) -> bool:
        return kind in kinds or not known

    if takes(K_KINDS) and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        problems.append(f"k must be a positive integer, got {k!r}")
    if kind in METRIC_KINDS and metric == "hamming":
        if kind not in HAMMING_KINDS:
            problems.append(f"metric 'hamming' is for the graphs {list(HAMMING_KINDS)} (Blum & Chawla's"
                            f" information-gain-weighted distance); a {kind} graph reads categorical columns"
                            " as one-hot beside the numbers: use metric 'euclidean' or 'cosine'")
    elif takes(METRIC_KINDS):
        problems += _choice("metric", metric, METRICS + ("hamming",) if takes(HAMMING_KINDS) else METRICS)
    problems += _choice("scale", scale, SCALES)
    if takes(("knn", "delta")):
        problems += _choice("weights", weights, WEIGHTS)
    if takes(("knn",)):
        problems += _choice("symmetrise", symmetrise, SYMMETRISE)
    if search is not None:
        problems += (_choice("search", search, SEARCHES) if takes(("knn",)) else
                     [f"search picks how a knn graph's neighbours are found; a {kind} graph has none to search"])
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
    edges_type : str or None
        The user's relationship type labelled over (kind ``edges``) or added to the
        similarity graph (any other kind); None for none.
    edges_property : str or None
        The property holding the user's edge weights; None: every edge weighs 1.
    edges_weight : float or None
        Factor of the user's edges in the sum with a similarity graph (default 1); None
        without user edges and for kind ``edges``.
    scale : {"standard", "robust", "none"}, default "standard"
        How the numeric features are scaled before distances are measured (every kind):
        scikit-learn's ``StandardScaler`` / ``RobustScaler`` semantics
        (``similarity.encoding``).
    search : str or None
        How the neighbours of a ``knn`` graph are found, one of ``SEARCHES`` (None: "auto").
        The embedded builder's choice (Neo4j's GDS kNN is its own); a build option, not a
        property of the graph: an incremental run does not rebuild for it.
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
    edges_type: str | None = None
    edges_property: str | None = None
    edges_weight: float | None = None
    scale: str = DEFAULT_SCALE
    encoding: FeatureEncoding | None = field(default=None, compare=False)
    search: str | None = None

    def __post_init__(self) -> None:
        problems = graph_problems(self.kind, self.k, self.metric, self.weights, self.delta, self.sigma,
                                  self.symmetrise, scale=self.scale, search=self.search)
        problems += self._edge_problems()
        if not problems and self.encoding is not None and self.encoding.scale != self.scale:
            problems = [f"the encoding was fitted with scale {self.encoding.scale!r}, the spec says {self.scale!r}"]
        if problems:
            raise ValueError(problems[0])

    def _edge_problems(self) -> list[str]:
        if self.kind == USER_EDGES and self.edges_type is None:
            return ['graph "edges" needs the relationship type: --graph edges:TYPE[:WEIGHT_PROPERTY]']
        for value, what in ((self.edges_type, "edges_type"), (self.edges_property, "edges_property")):
            if value is not None and (not isinstance(value, str) or not EDGE_NAME.fullmatch(value)):
                return [f"invalid {what} {value!r}: letters, digits and '_', not starting with a digit"]
        if self.edges_type is None and (self.edges_property is not None or self.edges_weight is not None):
            return ["edges_property and edges_weight need edges_type (the user's relationship type)"]
        return _edges_weight_problems(self.kind, self.edges_type, self.edges_weight)

    @property
    def graph(self) -> str:
        """The ``--graph`` value of this spec (``knn``, ``edges:T``, ``knn+edges:T:w``)."""
        if self.edges_type is None:
            return self.kind
        edges = f"edges:{self.edges_type}" + (f":{self.edges_property}" if self.edges_property else "")
        return edges if self.kind == USER_EDGES else f"{self.kind}+{edges}"

    @property
    def similarity_kind(self) -> str | None:
        """The kind of similarity graph graphlabel builds for this spec; None for ``edges``."""
        return None if self.kind == USER_EDGES else self.kind

    @classmethod
    def from_options(cls, graph: str | None = None, k: int | None = None, metric: str | None = None,
                     weights: str | None = None, delta: float | None = None,
                     sigma: float | None = None, symmetrise: str | None = None,
                     edges_weight: float | None = None, scale: str | None = None,
                     search: str | None = None) -> GraphSpec:
        """The spec of a kind with defaults for what is not given (kNN, k = 10, Euclidean,
        Gaussian, max), and None for what the kind does not use; a δ-graph without a σ
        has binary weights (a Gaussian needs a bandwidth the δ-graph does not pick).
        ``graph`` may name the user's edges (``parse_graph``); their ``edges_weight`` is
        then 1 unless given."""
        kind, edges_type, edges_property = parse_graph(graph or "knn")
        if kind not in GRAPH_KINDS:
            raise ValueError(_choice("graph", kind, GRAPH_KINDS)[0])
        problems = _edges_weight_problems(kind, edges_type, edges_weight)
        if problems:
            raise ValueError(problems[0])
        if edges_type is not None and kind != USER_EDGES and edges_weight is None:
            edges_weight = 1.0
        return cls(
            kind=kind,
            k=(DEFAULT_K if k is None else k) if kind in K_KINDS else None,
            metric=(metric or "euclidean") if kind in METRIC_KINDS else None,
            weights=(("binary" if kind == "delta" and sigma is None and weights in (None, "gaussian") else
                      weights or "gaussian") if kind in ("knn", "delta") else None),
            delta=delta if kind == "delta" else None,
            sigma=sigma if kind in ("knn", "delta") else None,
            symmetrise=(symmetrise or "max") if kind == "knn" else None,
            edges_type=edges_type, edges_property=edges_property,
            edges_weight=None if edges_weight is None else float(edges_weight),
            scale=scale or DEFAULT_SCALE,
            search=None if search in (None, "auto") else search,
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
        if self.edges_type is None:
            return self._describe_similarity()
        weighted = f" weighted by {self.edges_property!r}" if self.edges_property else ", weight 1"
        edges = f"the user's {self.edges_type} edges{weighted}"
        if self.kind == USER_EDGES:
            return edges
        return f"{self._describe_similarity()} + {self.edges_weight:g} x {edges}"

    def _describe_similarity(self) -> str:
        scaled = "" if self.scale == DEFAULT_SCALE else f", scale {self.scale}"
        if self.kind == "knn":
            searched = "" if self.search is None else f", {self.search} search"
            return f"{self.k}-NN, {self.metric}, {self.weights} weights{scaled}{searched}"
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
        names = ("k", "metric", "weights", "delta", "sigma", "symmetrise", "edges_type", "edges_property",
                 "edges_weight", "search")
        values = {name: record.get(name) for name in names}
        if values["k"] is not None:
            values["k"] = int(values["k"])
        encoding = FeatureEncoding.from_record(record)
        return cls(kind=record.get("graph") or "knn", **values, scale=encoding.scale, encoding=encoding)


@dataclass(frozen=True)
class GraphRequest:
    """The graph options a caller gave; None is "not given".

    A rebuild makes ``spec()``: the given options with the defaults for the rest. A
    rebuild of a recorded graph (``label --rebuild-graph``, or the rebuild after a build
    that did not finish) first fills what is not given from the options the last build
    was asked for (``over``): rebuilding means the same recipe again. An incremental run
    keeps the graph as recorded and only checks that nothing given disagrees with the
    record (``flows.incremental.graph_parameters``). Validated on construction, so a bad
    option fails before any work.
    """

    graph: str | None = None
    k: int | None = None
    metric: str | None = None
    weights: str | None = None
    delta: float | None = None
    sigma: float | None = None
    edges_weight: float | None = None
    scale: str | None = None
    search: str | None = None

    def __post_init__(self) -> None:
        self.spec()

    def spec(self) -> GraphSpec:
        """The graph a rebuild makes: the given options, the defaults for the rest."""
        return GraphSpec.from_options(self.graph, self.k, self.metric, self.weights, self.delta, self.sigma,
                                      edges_weight=self.edges_weight, scale=self.scale, search=self.search)

    def asked(self) -> dict[str, Any]:
        """The options given, by name, as a ``GraphBuild`` record keeps them (``REQUESTED``):
        what a rebuild asks for again. Not the spec: that holds k capped at n - 1 and the σ
        chosen, which a rebuild of a grown dataset or of changed features must choose anew."""
        return {name: value for name, value in asdict(self).items() if value is not None}

    def over(self, record: dict[str, Any] | None) -> GraphRequest:
        """These options, and for those not given the ones a ``GraphBuild`` record's build
        was asked for (none for a record written before they were kept: the defaults).
        Another kind of graph is another recipe: only the feature scaling carries over
        (a kNN build's metric is no δ-graph's or mincut graph's); the same kind with other
        user edges, or none, drops the old edges' factor."""
        asked = {name: value for name, value in ((record or {}).get(REQUESTED) or {}).items()
                 if name in REQUEST_FIELDS}
        if self.graph is not None and self.graph != asked.get("graph"):
            if parse_graph(self.graph)[0] != parse_graph(asked.get("graph") or "knn")[0]:
                asked = {name: asked[name] for name in ("scale",) if name in asked}
            asked.pop("edges_weight", None)
        return GraphRequest(**{**asked, **self.asked()})

    def given(self) -> dict[str, Any]:
        """The options given, by name; a ``graph`` naming the user's edges as the spec's
        fields (``graph`` the kind, ``edges_type``, ``edges_property``, ``edges_weight``),
        which is how a ``GraphBuild`` record has them."""
        given = self.asked()
        if self.graph is not None:
            spec = self.spec()
            given.update(graph=spec.kind, edges_type=spec.edges_type, edges_property=spec.edges_property,
                         edges_weight=spec.edges_weight)
        return given



#: The key of a ``GraphBuild`` record that keeps the options its build was asked for
#: (``GraphRequest.asked``), beside the spec it was built with.
REQUESTED = "requested"
REQUEST_FIELDS = tuple(GraphRequest.__dataclass_fields__)
