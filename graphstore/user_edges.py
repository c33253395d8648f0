"""The user's own edges: read only, checked, and combined with graphlabel's similarity graph.

A user's relationships (Neo4j: any relationship type between the dataset's nodes, e.g.
``CO_PURCHASED``; the embedded store: rows of the ``USER_EDGE`` table that
``graphlabel ingest-edges`` loads, one ``type`` per file) are never written or deleted by
graphlabel's builds, incremental runs or retention: its own edges go to its own
relationship type (``SIMILAR``). A ``GraphSpec`` with ``edges_type`` labels over them,
alone (kind ``edges``) or added to a similarity graph (``KIND+edges:TYPE``).

Decisions
---------
- Weights: a weight property that is missing on a relationship, not a number (a string, a
  list, a boolean), NaN, infinite or negative is refused, naming how many and a few pairs;
  nothing is dropped silently, as a dropped edge changes every label around it. A zero
  weight is accepted (it is no edge: the solvers read a structural zero). Without a weight
  property every edge weighs 1.
- Directions and repeats: the user's relationships are read as stored, each direction a
  row; a pair stored each way (or twice) becomes one undirected edge with the larger
  weight, as graphlabel's own relationships do (``schemas.one_row_per_pair``). Self loops
  are left out (a node is not its own neighbour).
- The sum W = W_similarity + ``edges_weight`` · W_user is taken per undirected pair after
  both are one row per pair.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from similarity.spec import GraphSpec

from .schemas import EDGE_SCHEMA, SubGraph, one_row_per_pair

_SHOWN = 3


def checked_weights(source: list[Any], target: list[Any], raw: list[Any] | None, edge_type: str,
                    weight_property: str | None, dataset: str) -> pa.Table:
    """The user's edges as an ``EDGE_SCHEMA`` table, or ``ValueError`` naming the bad weights.

    Parameters
    ----------
    source, target : list of str
        The keys at either end, one per relationship.
    raw : list or None
        The weight property's value per relationship as the store holds it (any type,
        None where missing); None when no weight property is used (every weight 1).
    edge_type, weight_property, dataset : str
        For the message.
    """
    n = len(source)
    if raw is None or weight_property is None:
        weight = np.ones(n)
    else:
        values = np.asarray(raw, dtype=object)
        numeric = np.fromiter((isinstance(v, (int, float)) and not isinstance(v, bool) for v in values),
                              dtype=bool, count=n)
        weight = np.full(n, np.nan)
        weight[numeric] = values[numeric].astype(np.float64)
        bad = ~numeric | ~np.isfinite(weight) | (weight < 0)
        if bad.any():
            missing = np.fromiter((v is None for v in values), dtype=bool, count=n)
            kinds = {"missing": int(missing.sum()), "not a number": int((~numeric & ~missing).sum()),
                     "NaN or infinite": int((numeric & ~np.isfinite(weight)).sum()),
                     "negative": int((numeric & np.isfinite(weight) & (weight < 0)).sum())}
            shown = ", ".join(f"{source[i]}->{target[i]}: {values[i]!r}" for i in np.flatnonzero(bad)[:_SHOWN])
            counted = ", ".join(f"{count} {kind}" for kind, count in kinds.items() if count)
            raise ValueError(
                f"{int(bad.sum())} of the {n} {edge_type} relationships of dataset {dataset!r} have no usable"
                f" weight property {weight_property!r} ({counted}; e.g. {shown}): a weight must be a number"
                f" >= 0. Fix them, or label with every edge weighing 1 (--graph edges:{edge_type})")
    return pa.table({"source": pa.array(source, pa.string()), "target": pa.array(target, pa.string()),
                     "weight": pa.array(weight, pa.float64())}).cast(EDGE_SCHEMA)


def changed_endpoints(before: pa.Table, after: pa.Table) -> np.ndarray:
    """The keys at either end of a pair whose edge was added, removed or reweighted
    between two lists of one type's edges (``EDGE_SCHEMA``, by key; weight null for "no
    weight"), compared as the graph reads them: one undirected edge per pair with the
    larger weight (``schemas.one_row_per_pair``), self loops left out. ``ingest-edges``
    marks these nodes changed, so the next incremental run relabels the region around them
    (a reload that moved no edge marks none). The keys are compared as the integer codes
    of Arrow's dictionary encoding: pandas on the Python strings was the slower of the two
    tried."""
    ends = pa.concat_arrays([table.column(name).combine_chunks() for table in (before, after)
                             for name in ("source", "target")]).dictionary_encode()
    codes = ends.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    b_source, b_target, a_source, a_target = np.split(
        codes, np.cumsum([before.num_rows, before.num_rows, after.num_rows]))
    n = max(len(ends.dictionary), 1)
    (old, old_weight), (new, new_weight) = (_pair_codes(source, target, table, n) for table, source, target in (
        (before, b_source, b_target), (after, a_source, a_target)))
    common, in_old, in_new = np.intersect1d(old, new, assume_unique=True, return_indices=True)
    moved = np.concatenate([np.setxor1d(old, new, assume_unique=True),  # added or removed
                            common[old_weight[in_old] != new_weight[in_new]]])  # reweighted
    ends_moved = np.unique(np.concatenate([moved // n, moved % n]))
    return np.asarray(ends.dictionary.take(pa.array(ends_moved, pa.int64())).to_pylist(), dtype=object)


def _pair_codes(source: np.ndarray, target: np.ndarray, edges: pa.Table, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each undirected pair's code (lo * n + hi), sorted, and its weight (-1 for "no weight",
    never a stored one: those are >= 0), one per pair (``one_row_per_pair``)."""
    weight = edges.column("weight").fill_null(-1.0).to_numpy(zero_copy_only=False)
    nodes = np.empty(n, dtype=object)
    pairs = one_row_per_pair(SubGraph(nodes, nodes, None, source, target, weight))
    code = np.minimum(pairs.source, pairs.target) * n + np.maximum(pairs.source, pairs.target)
    order = np.argsort(code)
    return code[order], pairs.weight[order]


def with_user_edges(graph: SubGraph, user: pa.Table, spec: GraphSpec) -> SubGraph:
    """``graph`` (a store's similarity graph, one row per pair) with the user's edges
    ``user`` (``EDGE_SCHEMA``, by key) in: instead of the similarity edges for kind
    ``edges``, else added with factor ``spec.edges_weight`` (module docstring)."""
    keys = pa.array(np.asarray(graph.keys, dtype=object), pa.string())
    src = pc.index_in(user.column("source"), value_set=keys).fill_null(-1).to_numpy().astype(np.int64)
    dst = pc.index_in(user.column("target"), value_set=keys).fill_null(-1).to_numpy().astype(np.int64)
    weight = user.column("weight").to_numpy(zero_copy_only=False).astype(np.float64)
    inside = (src >= 0) & (dst >= 0)
    mine = one_row_per_pair(replace(graph, source=src[inside], target=dst[inside], weight=weight[inside]))
    if spec.similarity_kind is None:
        return mine
    factor = 1.0 if spec.edges_weight is None else float(spec.edges_weight)
    n = max(graph.n_nodes, 1)
    codes = np.concatenate([np.minimum(graph.source, graph.target).astype(np.int64) * n
                            + np.maximum(graph.source, graph.target),
                            np.minimum(mine.source, mine.target).astype(np.int64) * n
                            + np.maximum(mine.source, mine.target)])
    weights = np.concatenate([graph.weight, factor * mine.weight])
    order = np.argsort(codes, kind="stable")
    codes = codes[order]
    first = np.ones(len(codes), dtype=bool)
    first[1:] = codes[1:] != codes[:-1]
    starts = np.flatnonzero(first)
    summed = np.add.reduceat(weights[order], starts) if len(starts) else weights[:0]
    return replace(graph, source=codes[starts] // n, target=codes[starts] % n, weight=summed)
