"""Change tracking shared by the stores: what ``write_nodes`` compares, what an incremental
run reads back, and how a graph build's parameters are recorded.

- ``content_hash``: one signed 64-bit hash per node row of its features (the float64 bit
  patterns, position by position, with -0.0 read as 0.0) and its given label (null and
  "" differ), computed in numpy over the Arrow buffers: no Python object per row.
  ``write_nodes`` stores it on the node and sets ``updated_at`` only where the stored hash
  is missing or differs, in the upsert query itself; so re-ingesting an unchanged file
  changes nothing. A node stored before the property existed has no hash and counts as
  changed once, on its next ingest.
- Label state (``GraphStore.read_label_state``): per node, whether it changed since it
  was last labelled (``labelled_at`` null, or older than ``updated_at``), whether it was
  ever labelled, and its predicted label. The comparison is made in the query.
- Graph build (``GraphStore.write_graph_build`` / ``read_graph_build``): the parameters a
  dataset's similarity relationships were built with (graph kind, k, metric, weights and
  the Gaussian σ actually used) as JSON text on one node per dataset, so that edges added
  later weigh like the existing ones.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

LABEL_STATE_SCHEMA = pa.schema([
    ("key", pa.string()),
    ("changed", pa.bool_()),
    ("labelled", pa.bool_()),
    ("predicted_label", pa.string()),
])

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on uint64 (wrapping arithmetic), in place on a
    copy of ``x`` with one scratch array (temporaries per step made it 3x slower)."""
    x = x.astype(np.uint64, copy=True)
    shifted = np.empty_like(x)
    with np.errstate(over="ignore"):
        for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None)):
            np.right_shift(x, np.uint64(shift), out=shifted)
            x ^= shifted
            if factor is not None:
                x *= np.uint64(factor)
    return x


#: Rows hashed at a time: each step of the mix makes a temporary the size of the features
#: (256 MB for 1M rows of 32), so a slice keeps them a few MB.
HASH_ROWS = 65_536


def content_hashes(nodes: pa.Table) -> np.ndarray:
    """One int64 per row of a node table (``features: list<double>``, ``label: string``):
    equal for rows with the same features and given label, different otherwise (up to
    64-bit collisions)."""
    if nodes.num_rows <= HASH_ROWS:
        return _content_hashes(nodes)
    return np.concatenate([_content_hashes(nodes.slice(start, HASH_ROWS))  # a loop over slices of rows
                           for start in range(0, nodes.num_rows, HASH_ROWS)])


def _content_hashes(nodes: pa.Table) -> np.ndarray:
    n = nodes.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    features = nodes.column("features").combine_chunks()
    offsets = np.asarray(features.offsets, dtype=np.int64)
    values = features.values.to_numpy(zero_copy_only=False).astype(np.float64)[offsets[0]:offsets[-1]]
    offsets = offsets - offsets[0]
    lengths = np.diff(offsets)
    with np.errstate(over="ignore"):
        bits = (values + 0.0).view(np.uint64)  # + 0.0 turns -0.0 into 0.0
        # each value mixed with its position in its row, summed per row (mod 2^64)
        position_mix = _mix(np.arange(int(lengths.max()) if n else 0, dtype=np.uint64) + _GOLDEN)
        if n and lengths.min() == lengths.max():  # one length (the usual case): a row sum of an (n, d) block
            rows = _mix(bits.reshape(n, -1) ^ position_mix).sum(axis=1, dtype=np.uint64)
        else:
            position = np.arange(len(values), dtype=np.uint64) - np.repeat(offsets[:-1], lengths).astype(np.uint64)
            mixed = _mix(bits ^ position_mix[position])
            prefix = np.concatenate([[np.uint64(0)], np.cumsum(mixed, dtype=np.uint64)])
            rows = prefix[offsets[1:]] - prefix[offsets[:-1]]
        feature_null = np.asarray(features.is_null().to_numpy(zero_copy_only=False), dtype=np.uint64)
        label = nodes.column("label").combine_chunks()
        label_null = np.asarray(label.is_null().to_numpy(zero_copy_only=False), dtype=np.uint64)
        text = label.fill_null("").to_numpy(zero_copy_only=False).astype(object)
        label_hash = pd.util.hash_array(text).astype(np.uint64)
        out = _mix(rows ^ _mix(lengths.astype(np.uint64) * _GOLDEN + feature_null))
        out = _mix(out ^ _mix(label_hash + label_null * _GOLDEN))
        out = _mix_optional(nodes, out)
    return out.view(np.int64)


def _mix_optional(nodes: pa.Table, out: np.ndarray) -> np.ndarray:
    """Mix in the categories and the label confidence where a row has them; a row without
    them keeps the hash it had before they existed (re-ingesting an old file changes nothing)."""
    if "categories" in nodes.column_names:
        lists = nodes.column("categories").combine_chunks()
        present = lists.is_valid().to_numpy(zero_copy_only=False)
        if present.any():
            text = pa.compute.binary_join(lists.fill_null(pa.scalar([], pa.list_(pa.string()))), "\x1f")
            hashed = pd.util.hash_array(text.to_numpy(zero_copy_only=False).astype(object)).astype(np.uint64)
            with np.errstate(over="ignore"):
                out = np.where(present, _mix(out ^ _mix(hashed + _GOLDEN)), out)
    if "label_confidence" in nodes.column_names:
        column = nodes.column("label_confidence").combine_chunks()
        present = column.is_valid().to_numpy(zero_copy_only=False)
        if present.any():
            bits = (column.fill_null(0.0).to_numpy(zero_copy_only=False).astype(np.float64) + 0.0).view(np.uint64)
            with np.errstate(over="ignore"):
                out = np.where(present, _mix(out ^ _mix(bits ^ (_GOLDEN >> np.uint64(1)))), out)
    return out


def label_state_table(keys, changed, labelled, predicted) -> pa.Table:
    """``read_label_state``'s table from parallel columns."""
    return pa.table({
        "key": pa.array(keys, pa.string()),
        "changed": pa.array(changed, pa.bool_()),
        "labelled": pa.array(labelled, pa.bool_()),
        "predicted_label": pa.array(predicted, pa.string()),
    }).cast(LABEL_STATE_SCHEMA)


def graph_build_json(spec: dict[str, Any]) -> str:
    """A graph build's parameters as the JSON text the stores keep (numpy scalars as numbers)."""
    def plain(value):
        return value.item() if isinstance(value, np.generic) else value

    return json.dumps({str(k): plain(v) for k, v in spec.items()}, sort_keys=True, default=str)


def graph_build_from_json(text: str | None) -> dict[str, Any]:
    """A recorded build's parameters; empty for a record without any."""
    return {} if text is None else dict(json.loads(text))
