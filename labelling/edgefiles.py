"""A file of the user's edges (CSV, TSV or Parquet: one row per edge, a source key, a target
key and optionally a weight) → valid edge rows, and every rejected row with its reason, as
``labelling.records`` does for nodes. Nothing is dropped silently: a row is either stored
or reported.

What is rejected, and why
-------------------------
=========================  =================================================================
kind                       the row ...
=========================  =================================================================
``missing key``            has an empty source or target key.
``missing node``           names a source or target that is not a node of the dataset
                           (ingest the nodes first): an edge to nowhere cannot be stored.
``self loop``              joins a node to itself (a node is not its own neighbour).
``bad weight``             has a weight that is empty, not a number, NaN, infinite or
                           negative (with ``--weight``). A zero weight is kept: it is no
                           edge to the solvers, and the file said so.
``duplicate pair``         joins the same two nodes as another row (either direction: the
                           graph is undirected), see below.
``malformed line``         (CSV/TSV) is a line that is no record (``labelling.textfiles``).
``undecodable text``       (CSV/TSV) is a line that is not text in the file's encoding.
=========================  =================================================================

Duplicate pairs follow the node rule of ``labelling.records``: among the otherwise valid
rows, when every copy of a pair has the same weight the first is stored and the others
are rejected as repeats of it; when the weights differ *all* copies are rejected, since
graphlabel cannot know which one is right. ``a,b`` and ``b,a`` are the same pair.

Keys are read as text by the node rule (``records.key_text``: ``7.0`` is ``7``). ``row``
in the rejects is the line in a CSV/TSV file (header line 1), the row number from 1 in
Parquet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from graphstore.schemas import EDGE_SCHEMA

from .records import MISSING_KEY, _as_text, read_table
from .textfiles import MALFORMED_LINE, UNDECODABLE

MISSING_NODE = "missing node"
SELF_LOOP = "self loop"
BAD_WEIGHT = "bad weight"
DUPLICATE_PAIR = "duplicate pair"
#: Every kind of rejection, in the order the summary lists them.
EDGE_REJECT_KINDS = (MALFORMED_LINE, UNDECODABLE, MISSING_KEY, MISSING_NODE, SELF_LOOP, BAD_WEIGHT,
                     DUPLICATE_PAIR)


@dataclass(frozen=True)
class ParsedEdges:
    """Valid edge rows and the rejected rows.

    Attributes
    ----------
    edges : pyarrow.Table
        ``EDGE_SCHEMA`` by key; ``weight`` null throughout when the file has no weight
        column (every edge then weighs 1 when labelled).
    rejects : pandas.DataFrame
        ``row``, ``key`` (``source->target``), ``kind`` and ``reason`` (``"; "``-joined).
    rows : numpy.ndarray
        Where each edge row is in the input: ``rows`` and ``rejects["row"]`` together hold
        each record exactly once.
    """

    edges: pa.Table
    rejects: pd.DataFrame
    rows: np.ndarray

    @property
    def reject_counts(self) -> dict[str, int]:
        """Rejected rows per kind, in ``EDGE_REJECT_KINDS`` order (a row counts under each
        of its kinds)."""
        if not len(self.rejects):
            return {}
        kinds = self.rejects["kind"].str.split("; ").map(set).explode().value_counts()
        return {kind: int(kinds[kind]) for kind in EDGE_REJECT_KINDS if kind in kinds.index}


def parse_edges(source: str | Path | pd.DataFrame, *, source_column: str, target_column: str,
                node_keys: np.ndarray, weight_column: str | None = None, encoding: str = "utf-8") -> ParsedEdges:
    """The edges of ``source`` between ``node_keys`` (the dataset's nodes), and the rejected rows.

    Parameters
    ----------
    source : path or DataFrame
        CSV, TSV or Parquet file (or a DataFrame: rows numbered from 0).
    source_column, target_column : str
        Columns holding the keys at either end.
    node_keys : array of str
        The keys of the dataset's nodes.
    weight_column : str, optional
        Column holding each edge's weight; without it the edges are stored unweighted.
    encoding : str
        A CSV/TSV file's text encoding.

    Raises
    ------
    ValueError
        A named column is not in the file, or the source and target columns are one.
    """
    if source_column == target_column:
        raise ValueError(f"--source and --target name the same column {source_column!r}")
    table = read_table(source, source_column, target_column, encoding=encoding)
    frame = table.frame
    missing = [c for c in (source_column, target_column, weight_column) if c is not None and c not in frame.columns]
    if missing:
        raise ValueError(f"columns {missing} are not in the file; it has {list(map(str, frame.columns))}")
    n = len(frame)
    src, dst = _keys(frame[source_column]), _keys(frame[target_column])
    # the reasons of the rejected rows only (a message each); `rejected` marks them
    reasons: dict[int, list[tuple[str, str]]] = {}
    rejected = np.zeros(n, dtype=bool)

    def reject(mask: np.ndarray, kind: str, why) -> None:
        rejected[mask] = True
        for i in np.flatnonzero(mask):
            reasons.setdefault(int(i), []).append((kind, why(i)))

    no_src, no_dst = pd.isna(src), pd.isna(dst)
    reject(no_src | no_dst, MISSING_KEY, lambda i: "empty " + " and ".join(
        name for name, gone in ((f"source {source_column!r}", no_src[i]), (f"target {target_column!r}", no_dst[i]))
        if gone))
    known = pa.array(pd.unique(np.asarray(node_keys, dtype=object)), pa.string())
    # Arrow's hash lookup in C (pandas' object Index took 3.3 s of 18 for 1M edges)
    src_at = pc.index_in(pa.array(src, pa.string()), value_set=known).fill_null(-1).to_numpy().astype(np.int64)
    dst_at = pc.index_in(pa.array(dst, pa.string()), value_set=known).fill_null(-1).to_numpy().astype(np.int64)
    src_known, dst_known = src_at >= 0, dst_at >= 0
    reject((~no_src & ~src_known) | (~no_dst & ~dst_known), MISSING_NODE, lambda i: "no node " + " and ".join(
        repr(k) for k, ok, gone in ((src[i], src_known[i], no_src[i]), (dst[i], dst_known[i], no_dst[i]))
        if not ok and not gone) + " in the dataset (ingest the nodes first)")
    loop = ~no_src & ~no_dst & (src == dst)
    reject(loop, SELF_LOOP, lambda i: f"joins {src[i]!r} to itself")
    weight = np.full(n, np.nan)
    if weight_column is not None:
        raw = frame[weight_column]
        numbers = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
        empty = raw.isna().to_numpy()
        bad = empty | ~np.isfinite(numbers) | (numbers < 0)
        weight = numbers

        def why_weight(i: int) -> str:
            if empty[i]:
                return f"missing weight {weight_column!r} (empty or NA)"
            if np.isnan(numbers[i]):
                return f"weight {raw.iloc[i]!r} is not a number"
            if not np.isfinite(numbers[i]):
                return f"weight {raw.iloc[i]!r} is infinite"
            return f"weight {raw.iloc[i]!r} is negative (weights are >= 0)"

        reject(bad, BAD_WEIGHT, why_weight)
    reject(*_duplicate_pairs(src, dst, src_at, dst_at, len(known), weight, ~rejected, table.rows))
    valid = ~rejected
    edges = pa.table({"source": pa.array(src[valid].tolist(), pa.string()),
                      "target": pa.array(dst[valid].tolist(), pa.string()),
                      "weight": pa.array(weight[valid] if weight_column is not None else [None] * int(valid.sum()),
                                         pa.float64())}).cast(EDGE_SCHEMA)
    bad_rows = np.flatnonzero(~valid)
    found = pd.DataFrame({
        "row": table.rows[bad_rows].astype(np.int64),
        "key": [f"{src[i] or ''}->{dst[i] or ''}" for i in bad_rows],  # an empty key shows as nothing, not None
        "kind": ["; ".join(dict.fromkeys(kind for kind, _ in reasons[int(i)])) for i in bad_rows],
        "reason": ["; ".join(why for _, why in reasons[int(i)]) for i in bad_rows],
    })
    rejects = pd.concat([table.rejects, found], ignore_index=True) if len(table.rejects) else found
    rejects = rejects.sort_values("row", kind="stable").reset_index(drop=True)
    return ParsedEdges(edges, rejects, table.rows[valid])


def _keys(column: pd.Series) -> np.ndarray:
    """The node rule (``records.key_text``) on each distinct value once: an edge list names
    each node many times (1M edges over 100k nodes: 4x faster than per row)."""
    codes, distinct = pd.factorize(column, use_na_sentinel=True)
    text = np.concatenate([_as_text(pd.Series(distinct, dtype=object)).to_numpy(dtype=object),
                           np.array([None], dtype=object)])
    return text[codes]  # code -1 (missing) takes the None appended last


def _duplicate_pairs(src: np.ndarray, dst: np.ndarray, src_at: np.ndarray, dst_at: np.ndarray, n_nodes: int,
                     weight: np.ndarray, valid: np.ndarray, rows: np.ndarray):
    """The duplicate-pair rule of the module docstring among the ``valid`` rows (whose ends
    are the nodes at ``src_at`` / ``dst_at``): ``reject``'s arguments (the rows to reject,
    the kind, each one's reason). Pairs are grouped by an integer code with one stable
    sort (pandas' groupby on the key strings took 6 s for 1M edges)."""
    n = len(src)
    doomed = np.zeros(n, dtype=bool)
    at = np.flatnonzero(valid)
    if not len(at):
        return doomed, DUPLICATE_PAIR, str
    code = np.minimum(src_at[at], dst_at[at]) * max(n_nodes, 1) + np.maximum(src_at[at], dst_at[at])
    order = np.argsort(code, kind="stable")  # stable: a group's first row is its first in the file
    opens = np.r_[True, code[order][1:] != code[order][:-1]]
    starts = np.flatnonzero(opens)
    group = np.empty(len(at), dtype=np.int64)
    group[order] = np.cumsum(opens) - 1
    size = np.diff(np.r_[starts, len(at)])[group]
    first = at[order][starts][group]
    sorted_weight = weight[at][order]
    lowest = np.minimum.reduceat(sorted_weight, starts)[group]
    highest = np.maximum.reduceat(sorted_weight, starts)[group]
    # without a weight column every weight is NaN: copies then agree
    disagree = (lowest != highest) & ~np.isnan(lowest)
    doomed[at[(size > 1) & (disagree | (at != first))]] = True
    where = np.full(n, -1)
    where[at] = np.arange(len(at))

    def why(i: int) -> str:
        j = where[i]
        low, high = sorted((src[i], dst[i]))
        if disagree[j]:
            return f"{size[j]} rows join {low!r} and {high!r} with different weights: all rejected"
        return f"repeats the pair of row {rows[first[j]]}"

    return doomed, DUPLICATE_PAIR, why
