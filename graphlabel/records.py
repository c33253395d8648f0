"""Records in (CSV, Parquet or a DataFrame) → validated node rows, and every rejected row
with its reason. Nothing is dropped silently: a row is either stored or reported."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from graphstore.base import NODE_SCHEMA


class NoValidRecords(ValueError):
    """Raised when not a single record could be stored."""


@dataclass(frozen=True)
class ParsedRecords:
    """Valid node rows (``NODE_SCHEMA``) and the rejected rows (``row``, ``key``, ``reason``)."""

    nodes: pa.Table
    rejects: pd.DataFrame

    @property
    def n_valid(self) -> int:
        return self.nodes.num_rows


def read_table(source: str | Path | pd.DataFrame, key: str, label: str | None) -> pd.DataFrame:
    """Load records; key and label columns are read as text so '007' stays '007'."""
    if isinstance(source, pd.DataFrame):
        return source.reset_index(drop=True)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return pd.read_parquet(path)
    if suffix in (".csv", ".txt", ".tsv"):
        text_columns = {c: str for c in (key, label) if c}
        return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", dtype=text_columns,
                           keep_default_na=True)
    raise ValueError(f"unsupported file type {suffix!r}: use .csv, .tsv or .parquet")


def resolve_feature_columns(frame: pd.DataFrame, features: str | list[str]) -> list[str]:
    """Feature columns from a list, a comma-separated string, or glob patterns ('pixel_*')."""
    patterns = features.split(",") if isinstance(features, str) else list(features)
    patterns = [p.strip() for p in patterns if p.strip()]
    columns: list[str] = []
    for pattern in patterns:
        matched = [c for c in frame.columns if fnmatch.fnmatchcase(str(c), pattern)]
        if not matched:
            raise ValueError(f"no column matches feature {pattern!r}; columns are {list(frame.columns)[:20]}")
        columns.extend(c for c in matched if c not in columns)
    return columns


def _text_or_none(value) -> str | None:
    if value is None or value is pd.NA or (isinstance(value, (float, np.floating)) and np.isnan(value)):
        return None
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))  # a label column with gaps reads as floats from CSV: 3.0 → "3"
    text = str(value).strip()
    return text or None


def _as_text(values: pd.Series) -> pd.Series:
    """Keys and labels as strings (object dtype, None where missing)."""
    return pd.Series(np.array([_text_or_none(v) for v in values], dtype=object), dtype=object)


def _feature_matrix(frame: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, list[list[str]]]:
    """Float matrix of the feature columns and, per row, the reasons it cannot be used."""
    n = len(frame)
    reasons: list[list[str]] = [[] for _ in range(n)]
    if len(columns) == 1 and frame[columns[0]].map(lambda v: isinstance(v, (list, tuple, np.ndarray))).any():
        return _list_column(frame[columns[0]], reasons)
    matrix = np.empty((n, len(columns)))
    for j, column in enumerate(columns):  # a loop over feature columns, vectorised over rows
        raw = frame[column]
        numeric = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        missing = raw.isna().to_numpy()
        bad_text = np.isnan(numeric) & ~missing
        for i in np.flatnonzero(bad_text):
            reasons[i].append(f"non-numeric feature {column}={raw.iloc[i]!r}")
        for i in np.flatnonzero(missing):
            reasons[i].append(f"missing (NaN) feature {column}")
        for i in np.flatnonzero(np.isinf(numeric)):
            reasons[i].append(f"infinite feature {column}")
        matrix[:, j] = numeric
    return matrix, reasons


def _list_column(values: pd.Series, reasons: list[list[str]]):
    lengths = values.map(lambda v: len(v) if isinstance(v, (list, tuple, np.ndarray)) else -1).to_numpy()
    common = int(pd.Series(lengths[lengths > 0]).mode().iloc[0]) if (lengths > 0).any() else 0
    matrix = np.full((len(values), common), np.nan)
    for i, (v, length) in enumerate(zip(values, lengths)):  # per-row parse of ragged lists
        if length != common:
            reasons[i].append(f"wrong feature length: got {length if length >= 0 else 'none'}, expected {common}")
            continue
        row = pd.to_numeric(pd.Series(list(v)), errors="coerce").to_numpy(dtype=float)
        if np.isnan(row).any() or np.isinf(row).any():
            reasons[i].append("non-numeric, NaN or infinite value in the feature list")
        matrix[i] = row
    return matrix, reasons


def parse_records(
    source: str | Path | pd.DataFrame,
    *,
    key: str,
    features: str | list[str],
    label: str | None = None,
    expected_dim: int | None = None,
) -> ParsedRecords:
    """Validate records into node rows.

    Parameters
    ----------
    source : path to a CSV/TSV/Parquet file, or a DataFrame
    key : str
        Column with each entity's unique key.
    features : str or list of str
        Feature columns (comma-separated names or glob patterns), or one column holding lists.
    label : str, optional
        Column with the given label (empty where none is given).
    expected_dim : int, optional
        Feature length the dataset already has in the store; rows of another length are rejected.

    Returns
    -------
    ParsedRecords

    Raises
    ------
    NoValidRecords
        When no row is valid (the rejects are attached as ``.rejects``).
    """
    frame = read_table(source, key, label)
    for column in (key, label):
        if column and column not in frame.columns:
            raise ValueError(f"no column {column!r}; columns are {list(frame.columns)[:20]}")
    columns = resolve_feature_columns(frame, features)
    keys = _as_text(frame[key])
    labels = _as_text(frame[label]) if label else pd.Series(np.full(len(frame), None, dtype=object))
    matrix, reasons = _feature_matrix(frame, columns)
    if expected_dim is not None and matrix.shape[1] != expected_dim:
        for r in reasons:
            r.append(f"wrong feature length: got {matrix.shape[1]}, expected {expected_dim}")
    for i in np.flatnonzero(keys.isna().to_numpy()):  # rejected rows only, each with its reasons
        reasons[i].insert(0, "missing key")
    duplicated = keys.duplicated(keep="first").to_numpy() & keys.notna().to_numpy()
    for i in np.flatnonzero(duplicated):
        reasons[i].append(f"duplicate key {keys.iloc[i]!r} (its first row is kept)")
    valid = np.array([not r for r in reasons], dtype=bool)
    bad = np.flatnonzero(~valid)
    rejects = pd.DataFrame(
        {"row": bad, "key": keys.iloc[bad].to_numpy(), "reason": ["; ".join(reasons[i]) for i in bad]}
    )
    good = np.flatnonzero(valid)
    d = matrix.shape[1]
    nodes = pa.table(
        {
            "key": pa.array(keys.iloc[good].tolist(), pa.string()),
            "features": pa.ListArray.from_arrays(
                pa.array(np.arange(len(good) + 1, dtype=np.int32) * d), pa.array(matrix[good].ravel())
            ),
            "label": pa.array(labels.iloc[good].tolist(), pa.string()),
        }
    ).cast(NODE_SCHEMA)
    parsed = ParsedRecords(nodes, rejects)
    if not len(good):
        error = NoValidRecords(f"none of the {len(frame)} records is valid; first reasons: "
                               + "; ".join(rejects["reason"].head(3)))
        error.rejects = rejects
        raise error
    return parsed
