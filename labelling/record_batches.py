"""Records in batches: a large input parsed (and stored by the caller) a slice of rows at a
time, with the outcome ``parse_records`` has on the whole input.

Why: parsing a 1M-row Parquet file whole held its pandas frame, a float64 feature matrix,
the Arrow node table and the store's copy at once (4.1 GB peak for the whole ingest of 1M
rows × 32 features, ``python -m bench e2e``); a batch of ``BATCH_ROWS`` holds a tenth of
that, and a person watching sees each batch go by.

What stays exact (tests/test_record_batches.py compares both ways on the same inputs):

- every record is a node or a reject with its reasons, numbered by its place in the input
  (a CSV line, a Parquet row from 1, a DataFrame position from 0), and the rejects come
  back in that order once the caller puts the batches' together (``in_input_order``);
- duplicate keys are judged over the whole input: a pre-pass reads the key column alone,
  and every row of a key that occurs more than once is held back and parsed with all its
  copies in one last batch, so the copies are judged together as ``parse_records`` judges
  them (``labelling.records``' module docstring has the policy);
- one feature column holding lists takes the most common list length of the whole input
  (read from that column alone first) as the length every batch checks.

Parquet files are read a batch at a time, only the columns the records use. CSV and TSV
files are read whole (``labelling.textfiles`` finds malformed lines by looking at the whole
file), then parsed and handed out in batches; a DataFrame likewise.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from graphstore.schemas import NODE_SCHEMA

from .feature_columns import FeatureColumns, RecordedColumns
from .records import (
    ROW_KEY,
    ParsedRecords,
    RecordColumns,
    _as_text,
    check_record_options,
    common_length,
    in_input_order,
    keys_as_text,
    no_rejects,
    parse_frame,
    read_table,
    record_columns,
)

#: Rows parsed and stored at a time: 100k rows of 32 features are 26 MB of float64; Kùzu's
#: COPY of a batch took as long per row as of the whole 1M (0.4 s per 100k, kuzu 0.11.3).
BATCH_ROWS = 100_000
#: Bytes a Parquet column is read ahead by (a buffered stream, no pre-buffering): by default
#: pyarrow read a whole row group before the first batch, 400 MB of a 1M-row file written
#: as one row group (pandas' to_parquet does), where the batches need 30 MB each.
PARQUET_BUFFER = 1 << 20


@dataclass(frozen=True)
class RecordBatches:
    """An input to be parsed a batch at a time: ``n_records`` records in all (the lines of
    a CSV file that are no record included), ``line_rejects`` (those lines) and the batches
    (iterate: each a ``ParsedRecords`` of its rows, the rejects of held-back duplicates last),
    and the columns the features come from (``columns``).
    An input without one valid record yields batches without nodes: the caller says so
    (``records.no_valid_records``)."""

    n_records: int
    line_rejects: pd.DataFrame
    batches: Iterator[ParsedRecords]
    columns: FeatureColumns

    def __iter__(self) -> Iterator[ParsedRecords]:
        return self.batches


@dataclass(frozen=True)
class _Input:
    """The input's column names, its records' numbers and key column, and its rows in
    slices (``slices(columns, size)``: (frame, first row position) pairs)."""

    names: list
    numbers: np.ndarray
    keys: pa.Array | pa.ChunkedArray
    line_rejects: pd.DataFrame
    source: object

    def slices(self, columns: list[str], size: int) -> Iterator[tuple[pd.DataFrame, int]]:
        if isinstance(self.source, pq.ParquetFile):
            row_keys = ROW_KEY in columns and ROW_KEY not in self.source.schema_arrow.names
            start = 0
            for batch in self.source.iter_batches(batch_size=size, columns=[c for c in columns if c != ROW_KEY]
                                                  if row_keys else columns):
                rows = batch.to_pandas()
                if row_keys:
                    rows[ROW_KEY] = self.numbers[start:start + batch.num_rows].astype(str)
                yield rows, start
                start += batch.num_rows
            return
        frame: pd.DataFrame = self.source  # type: ignore[assignment]
        for start in range(0, len(frame), size):  # a loop over batches of rows
            yield frame.iloc[start:start + size], start

    def column(self, name: str) -> pd.Series:
        if isinstance(self.source, pq.ParquetFile):
            return self.source.read(columns=[name]).column(name).to_pandas()
        return self.source[name]  # type: ignore[index]


def _open(source: str | Path | pd.DataFrame, key: str, label: str | None, encoding: str,
          text: str | None) -> _Input:
    if isinstance(source, (str, Path)) and Path(source).suffix.lower() in (".parquet", ".pq") \
            and Path(source).is_file():
        file = pq.ParquetFile(source, buffer_size=PARQUET_BUFFER, pre_buffer=False)
        # pandas' index columns are not records' columns (pandas.read_parquet makes them the index)
        index = {c for c in (file.schema_arrow.pandas_metadata or {}).get("index_columns", []) if isinstance(c, str)}
        names = [name for name in file.schema_arrow.names if name not in index]
        numbers = np.arange(1, file.metadata.num_rows + 1)
        if key == ROW_KEY and key not in names:  # each row's number is its key (records.ROW_KEY)
            names.append(key)
            return _Input(names, numbers, pa.array(numbers.astype(str)), no_rejects(), file)
        keys = file.read(columns=[key]).column(key) if key in names else pa.array([], pa.string())
        return _Input(names, numbers, keys, no_rejects(), file)
    table = read_table(source, key, label, encoding, text)
    keys = pa.array(_as_text(table.frame[key]) if key in table.frame.columns else [], pa.string())
    return _Input(list(table.frame.columns), table.rows, keys, table.rejects, table.frame.reset_index(drop=True))


def _with_list_length(spec: RecordColumns, data: _Input) -> RecordColumns:
    """``spec`` with the whole input's common list length as the expected length, when its
    one feature column holds lists and the dataset has no length yet."""
    if spec.expected_dim is not None or len(spec.features) != 1 or spec.text is not None:
        return spec
    values = data.column(spec.features[0])
    lengths = values.map(lambda v: len(v) if isinstance(v, (list, tuple, np.ndarray)) else -1).to_numpy()
    if not (lengths >= 0).any():  # plain numbers
        return spec
    return replace(spec, expected_dim=common_length(lengths))


def parse_record_batches(
    source: str | Path | pd.DataFrame,
    *,
    key: str,
    features: str | list[str] | None = None,
    label: str | None = None,
    expected_dim: int | None = None,
    classes=None,
    encoding: str = "utf-8",
    text: str | None = None,
    categorical: str | list[str] | None = None,
    label_confidence: str | None = None,
    recorded: RecordedColumns | None = None,
    batch_rows: int = BATCH_ROWS,
) -> RecordBatches:
    """``parse_records``, a batch of ``batch_rows`` rows at a time (the module docstring
    says what stays exact). The options are ``parse_records``', checked before any row is
    read; a problem of the call (a column that does not exist) raises here, not while
    iterating."""
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise ValueError(f"batch_rows must be a positive integer, got {batch_rows!r}")
    check_record_options(key=key, features=features, label=label, expected_dim=expected_dim, classes=classes,
                         text=text, categorical=categorical)
    data = _open(source, key, label, encoding, text)
    spec = record_columns(data.names, key=key, features=features, label=label, expected_dim=expected_dim,
                          classes=classes, text=text, categorical=categorical, label_confidence=label_confidence,
                          recorded=recorded)
    spec = _with_list_length(spec, data)
    keys = keys_as_text(data.keys)
    counts = pa.compute.value_counts(keys).flatten()
    twice = pa.compute.filter(counts[0], pa.compute.greater(counts[1], 1))
    repeated = pa.compute.is_in(keys, value_set=twice.drop_null()).to_numpy(zero_copy_only=False) \
        & keys.is_valid().to_numpy(zero_copy_only=False)
    used = list(dict.fromkeys(c for c in (key, label, text, label_confidence, *spec.features, *spec.categorical)
                              if c))
    return RecordBatches(len(data.numbers) + len(data.line_rejects), data.line_rejects,
                         _batches(data, spec, keys, repeated, used, batch_rows), spec.columns)


def _batches(data: _Input, spec: RecordColumns, keys: pa.Array, repeated: np.ndarray, used: list[str],
             batch_rows: int) -> Iterator[ParsedRecords]:
    held: list[tuple[pd.DataFrame, np.ndarray]] = []
    for frame, start in data.slices(used, batch_rows):
        stop = start + len(frame)
        copies = repeated[start:stop]
        if copies.any():  # every copy of a repeated key waits for the last batch
            held.append((frame[copies], np.arange(start, stop)[copies]))
        mine = ~copies
        yield parse_frame(frame[mine], data.numbers[start:stop][mine], spec,
                          _key_series(keys.slice(start, stop - start).filter(pa.array(mine))))
    if held:
        frame = pd.concat([part for part, _ in held], ignore_index=True)
        positions = np.concatenate([where for _, where in held])
        yield parse_frame(frame, data.numbers[positions], spec, _key_series(keys.take(pa.array(positions))))


def _key_series(keys: pa.Array) -> pd.Series:
    return pd.Series(keys.to_numpy(zero_copy_only=False), dtype=object)


def parsed_whole(batches: RecordBatches) -> ParsedRecords:
    """Every batch put together, rejects in input order: what ``parse_records`` returns
    (without its error when nothing is valid). For tests and small inputs."""
    parts = list(batches)
    nodes = pa.concat_tables([part.nodes for part in parts]) if parts else NODE_SCHEMA.empty_table()
    rows = np.concatenate([part.rows for part in parts if part.rows is not None]) if parts else np.zeros(0, int)
    rejects = in_input_order([batches.line_rejects, *(part.rejects for part in parts)])
    return ParsedRecords(nodes, rejects, rows, batches.columns)
