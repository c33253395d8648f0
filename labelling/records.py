"""Records in (CSV, TSV, ARFF, Parquet or a DataFrame) → validated node rows, and every
rejected row with its reason. Nothing is dropped silently: a row is either stored or
reported.

What is rejected, and why
-------------------------
Each rejected row gets one or more reasons; each reason has a *kind* (the first column of
the table below), which the ingest summary counts.

=========================  =================================================================
kind                       the row ...
=========================  =================================================================
``missing key``            has no key (empty, blank or NaN).
``non-numeric feature``    has a feature that is not a number (``'abc'``, a list in a column).
``missing feature``        has an empty or NaN feature.
``infinite feature``       has a feature of ±inf.
``missing text``           has an empty or blank cell in the ``text`` column (nothing to
                           embed; ``labelling.text_embedding``).
``wrong feature length``   has a feature list of another length than the others (or than
                           the dataset's ``expected_dim``), or no feature list at all.
``label not in classes``   has a label outside ``classes`` (when ``classes`` is given).
``bad label confidence``   has a label confidence (``label_confidence`` column) that is
                           not a number in [0, 1], or one on a row without a label.
``duplicate key``          shares its key with another row of the batch (see below).
``malformed line``         (CSV/TSV/ARFF) is a line that is no record: more fields than the
                           header, a quote never closed (``labelling.textfiles``); in an
                           ARFF file also a value its nominal attribute does not declare.
``undecodable text``       (CSV/TSV) is a line that is not text in the file's encoding.
=========================  =================================================================

Where a rejected row is: ``row`` is its line in a CSV/TSV file (the header is line 1; a
record with a quoted line break has the number of its first line) or an ARFF file
(``labelling.arfffiles``), its row number from 1 in a Parquet file, and its position from 0
in a DataFrame.
A file whose records have no key of their own is ingested with the key ``#`` (``ROW_KEY``):
each record's key is that number as text. It is only as stable as the file's order: a record
moved to another line is another node.

Duplicate keys within one batch: duplicates are judged among the rows that are otherwise
valid (a broken copy is rejected for its own reasons and does not count). When every
copy holds the same features and label, the first is stored and the others are rejected
as repeats of it, so a file concatenated twice loses nothing. When the copies disagree,
*all* of them are rejected: graphlabel cannot know which one is right, and storing the
first would silently keep a label the file may have corrected further down. (Across
batches the store upserts by key: a later ingest replaces the earlier values.)

Keys and labels: one rule (``key_text``), whatever the file type. They are compared as
text; surrounding blanks are stripped; a number with an all-zero fraction loses it,
written as text (``"7.0"``, ``"7."``, ``"-3.00"``) or stored as a number (``7.0`` in a
Parquet float column), so ``7``, ``7.0`` and ``" 7 "`` are one key and labels ``1`` and
``1.0`` one class (``--classes 1,2`` takes ``1.0``). Nothing else changes: ``007`` stays
``007``, ``+7`` stays ``+7``, ``9.50`` stays ``9.50`` (a non-integral float stored as a
number is written as Python writes it, ``9.5``), and ``1e3`` stays ``1e3``. In CSV/TSV
files only an empty field is a missing key or label: ``NA``, ``None`` or ``null`` there
are ordinary text (a product code, a country) rather than pandas' default missing-value
markers, which feature columns keep.

Feature columns never include the key or the label column: a glob (``*``, ``x*``) skips
them, and naming one of them as a feature is refused.

Categorical columns (``categorical``) are kept as text by the key rule (``key_text``:
``"7.0"`` and ``7`` are one category); an empty cell is a ``missing feature``. They are
never numeric features too (a feature glob skips them). Which values a graph accepts is
decided when it is built (``similarity.encoding``), not here: a value the graph was not
built with makes the next incremental run rebuild it (``flows.incremental``).

The label confidence (``label_confidence``) is the trust in a row's given label, a number
in [0, 1]; an empty cell on a labelled row is full trust (1), and a confidence on a row
without a label is refused (it would speak of nothing).
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from graphstore.schemas import NODE_SCHEMA

from .arfffiles import read_arff_table
from .feature_columns import FeatureColumns, RecordedColumns
from .textfiles import MALFORMED_LINE, UNDECODABLE, read_text_table
from .wording import counted, named

MISSING_KEY = "missing key"
NON_NUMERIC = "non-numeric feature"
MISSING_FEATURE = "missing feature"
INFINITE_FEATURE = "infinite feature"
WRONG_LENGTH = "wrong feature length"
UNKNOWN_CLASS = "label not in classes"
DUPLICATE_KEY = "duplicate key"
MISSING_TEXT = "missing text"
BAD_CONFIDENCE = "bad label confidence"
UNSEEN_CATEGORY = "unseen category"  # predict only: a value the run's model was not fitted with
#: The key that names no column but each record's row number (its line in a CSV, TSV or ARFF
#: file, its row from 1 in a Parquet file), for a file whose records carry no key of their own.
ROW_KEY = "#"
#: Every kind of rejection, in the order the summary lists them.
REJECT_KINDS = (MALFORMED_LINE, UNDECODABLE, MISSING_KEY, NON_NUMERIC, MISSING_FEATURE, INFINITE_FEATURE,
                MISSING_TEXT, WRONG_LENGTH, UNKNOWN_CLASS, BAD_CONFIDENCE, DUPLICATE_KEY, UNSEEN_CATEGORY)

# pandas' default missing-value markers (the ``na_values`` list of ``pandas.read_csv``),
# kept for feature columns only: in key and label columns they are ordinary text.
CSV_NA_TEXT = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
               "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]


def missing_like_labels(nodes: pa.Table) -> dict[str, int]:
    """The given labels of ``nodes`` that pandas would read as missing (``CSV_NA_TEXT``:
    ``NA``, ``null``, ``None``...), with their counts. They are classes here (only an empty
    cell is no label); ingest says so, as a file whose "NA" means "unknown" would otherwise
    get an "NA" class silently (a files walk)."""
    labels = nodes.column("label")
    marked = pc.filter(labels, pc.is_in(labels, value_set=pa.array(CSV_NA_TEXT[1:], pa.string())))
    counts = pc.value_counts(marked).to_pylist() if len(marked) else []
    return {count["values"]: count["counts"] for count in counts}


def given_label_counts(nodes: pa.Table) -> dict[str, int]:
    """The given labels of ``nodes``, counted per class."""
    labels = nodes.column("label").drop_null()
    return {count["values"]: count["counts"] for count in pc.value_counts(labels).to_pylist()} if len(labels) else {}


#: How many classes ingest's line about the given labels names, and how many it counts at
#: most (a --label naming a column of ids would make one class per record).
NAMED_CLASSES, COUNTED_CLASSES = 8, 1_000


def given_labels_note(stored: int, labelled: int, classes: dict[str, int] | None, column: str) -> str:
    """Ingest's line about the given labels of the records it stored: how many, of which
    classes (``None``: more than ``COUNTED_CLASSES``), so that a wrong ``--label`` column
    shows at once, not at the first labelling run."""
    if not labelled:
        return f"no stored record has a given label in column {column!r} (only a filled cell is one)"
    if classes is None:
        return (f"given labels: {labelled:,} of the {counted(stored, 'record')} stored, in more than"
                f" {COUNTED_CLASSES:,} classes: is {column!r} the label column?")
    largest = sorted(classes.items(), key=lambda item: (-item[1], item[0]))
    # "class: count": a class named by a number read "1 5, 0 4" as four numbers (a newcomer's walk)
    shown = ", ".join(f"{label}: {n:,}" for label, n in largest[:NAMED_CLASSES])
    more = f" and {len(largest) - NAMED_CLASSES:,} more" if len(largest) > NAMED_CLASSES else ""
    kinds = counted(len(classes), "class", "classes")
    doubt = (f": is {column!r} the label column?" if len(classes) > NAMED_CLASSES and 2 * len(classes) > labelled
             else "")  # most classes with one or two labels: ids, numbers, free text
    return f"given labels: {labelled:,} of the {counted(stored, 'record')} stored, {kinds} ({shown}{more}){doubt}"


def label_changes(before: dict[str, int], after: dict[str, int]) -> dict[str, Any]:
    """What an ingest did to the dataset's given labels (``GraphStore.given_label_counts``
    before and after it): ``given_labels_before`` and ``given_labels_after``, how many nodes
    give a label, and ``new_single_classes``, the classes new to the dataset that a single node
    gives while another class has more (at most ``COUNTED_CLASSES``; none when every class has
    one label: then the label column itself is in doubt, ``given_labels_note``)."""
    single = [] if max(after.values(), default=0) < 2 else \
        sorted(name for name, nodes in after.items() if nodes == 1 and name not in before)[:COUNTED_CLASSES]
    return {"given_labels_before": sum(before.values()), "given_labels_after": sum(after.values()),
            "new_single_classes": single}


def single_classes_note(names: list[str]) -> str:
    """Ingest's note on ``label_changes``' ``new_single_classes``: a misspelt class or another
    spelling of one is a class of its own (on wine with 18 given labels, 'clas_0' and '1' for
    two of them took 14 of the 178 predictions, and accuracy fell from 0.955 to 0.860)."""
    return (f"{counted(len(names), 'class', 'classes')} new to the dataset with a single given label: {named(names)}"
            " (a label's spelling is its class: is one a misspelt or renamed class?)")


def removed_labels_note(before: int, after: int, label: str | None) -> str:
    """Ingest's note when the dataset holds fewer given labels after it than before: a node
    the file gives no label loses the one it had."""
    why = "this file has no --label column" if label is None else f"these nodes have no label in column {label!r}"
    return (f"the dataset's given labels went from {before:,} to {after:,}: a node ingested again without a label"
            f" loses the one it had ({why}; ingesting a file with the labels gives them back)")


def replaced_reviews(before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """The reviewed labels an ingest replaced: ``GraphStore.reviewed_labels`` before and
    after it, the keys it no longer holds, with the label the reviewer vouched for. The file
    wins (the README's review section); this says so, as the counts of ``label_changes``
    stay the same when a file gives a corrected node its old label back."""
    return {key: label for key, label in sorted(before.items()) if key not in after}


def replaced_reviews_note(replaced: dict[str, str]) -> str:
    """Ingest's note on ``replaced_reviews``."""
    shown = named(list(replaced.items()), show=lambda pair: f"{pair[0]!r} (reviewed as {pair[1]!r})")
    return (f"the file replaced {counted(len(replaced), 'given label')} a reviewer vouched for (review's accept or"
            f" correct): {shown}; ingest a file that has the reviewed labels to keep them (each review stays"
            " in its LabelDecision node)")


def missing_like_note(counts: dict[str, int]) -> str:
    """The line ingest prints for ``missing_like_labels``' counts."""
    shown = ", ".join(f"{label!r} ({counted(n, 'row')})" for label, n in sorted(counts.items()))
    return (f"given labels {shown} are kept as classes: only an empty cell is no label; if they mean"
            " unknown, empty them in the file and ingest again")


class NoValidRecords(ValueError):
    """Raised when not a single record could be stored; ``.rejects`` holds every row."""

    def __init__(self, message: str, rejects: pd.DataFrame | None = None) -> None:
        super().__init__(message)
        self.rejects = rejects if rejects is not None else pd.DataFrame(columns=["row", "key", "reason"])


@dataclass(frozen=True)
class ParsedRecords:
    """Valid node rows and the rejected rows.

    Attributes
    ----------
    nodes : pyarrow.Table
        The valid rows as ``NODE_SCHEMA`` (``key``, ``features``, ``label``).
    rejects : pandas.DataFrame
        One row per rejected record, in input order: ``row`` (where it is in the input,
        see the module docstring: a CSV line number, a Parquet row number from 1, a
        DataFrame position from 0), ``key`` (None when missing), ``kind`` (the kinds of
        its reasons, ``"; "``-joined) and ``reason`` (the messages, ``"; "``-joined).
    rows : numpy.ndarray, optional
        Where each node row is in the input, numbered as ``rejects["row"]``, so every
        input record is accounted for: ``rows`` and ``rejects["row"]`` together hold each
        record exactly once.
    columns : FeatureColumns
        The columns the features came from, by name (``labelling.feature_columns``).
    """

    nodes: pa.Table
    rejects: pd.DataFrame
    rows: np.ndarray | None = None
    columns: FeatureColumns = FeatureColumns()

    @property
    def categorical(self) -> tuple[str, ...]:
        """The categorical columns' names, in the order of each node's ``categories``."""
        return self.columns.categorical

    @property
    def n_valid(self) -> int:
        return self.nodes.num_rows

    @property
    def reject_counts(self) -> dict[str, int]:
        """Rejected rows per kind of reason, in ``REJECT_KINDS`` order (kinds that did not
        occur are left out). A row with several problems counts once under each of its
        kinds, so the counts can add up to more than the number of rejected rows."""
        return reject_counts(self.rejects)


def reject_counts(rejects: pd.DataFrame) -> dict[str, int]:
    """Rows per kind of reason of a rejects table (see ``ParsedRecords.reject_counts``)."""
    if not len(rejects):
        return {}
    kinds = rejects["kind"].str.split("; ").map(set).explode().value_counts()
    return {kind: int(kinds[kind]) for kind in REJECT_KINDS if kind in kinds.index}


@dataclass(frozen=True)
class InputTable:
    """The records as read: ``frame``, where each of its rows is in the input (``rows``,
    numbered as the module docstring says), and the lines of a CSV/TSV file that are no
    record (``rejects``, same columns as ``ParsedRecords.rejects``)."""

    frame: pd.DataFrame
    rows: np.ndarray
    rejects: pd.DataFrame


def check_source(source: str | Path | pd.DataFrame) -> None:
    """``FileNotFoundError`` naming a source file that is not there: said before a store
    is created or a run started for it (an ingest of a misspelt path made an empty store
    and, with a Prefect server, a failed run)."""
    if not isinstance(source, pd.DataFrame) and not Path(source).is_file():
        raise FileNotFoundError(f"no such file: {source}")


def read_table(source: str | Path | pd.DataFrame, key: str, label: str | None,
               encoding: str = "utf-8", text: str | None = None) -> InputTable:
    """Load records; key and label columns are read as text so '007' stays '007'.
    ``encoding`` is a CSV/TSV/ARFF file's (Parquet files say their own). The key
    ``ROW_KEY`` ("#") numbers the records as their rejects are numbered, unless the
    file has a column of that name."""
    if isinstance(source, pd.DataFrame):
        frame = source.reset_index(drop=True)
        return _with_row_keys(InputTable(frame, np.arange(len(frame)), no_rejects()), key)
    check_source(source)
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        frame = pd.read_parquet(path)
        return _with_row_keys(InputTable(frame, np.arange(1, len(frame) + 1), no_rejects()), key)
    if suffix in (".csv", ".txt", ".tsv"):
        # Per-column missing markers (keep_default_na=False, or pandas applies its
        # defaults to every column): only an empty key or label is missing.
        table = read_text_table(path, "\t" if suffix == ".tsv" else ",",
                                text_columns=[c for c in (key, label, text) if c],
                                na_values=CSV_NA_TEXT, encoding=encoding)
        return _with_row_keys(InputTable(table.frame, table.lines, table.rejects), key)
    if suffix == ".arff":
        table = read_arff_table(path, text_columns=[c for c in (key, label) if c], encoding=encoding)
        return _with_row_keys(InputTable(table.frame, table.lines, table.rejects), key)
    raise ValueError(f"unsupported file type {suffix!r}: use .csv, .tsv, .parquet or .arff")


def _with_row_keys(table: InputTable, key: str) -> InputTable:
    """``table`` with a ``ROW_KEY`` column holding each record's row number as text, when that
    is the key and the file has no column of that name; its lines that are no record get the
    same key (the readers leave it empty: they do not know the key is the row)."""
    if key != ROW_KEY or ROW_KEY in table.frame.columns:
        return table
    rejects = table.rejects.assign(key=table.rejects["row"].astype(str).astype(object))
    return replace(table, frame=table.frame.assign(**{ROW_KEY: table.rows.astype(str)}), rejects=rejects)


def no_rejects() -> pd.DataFrame:
    return pd.DataFrame({"row": np.zeros(0, np.int64), "key": pd.Series([], dtype=object),
                         "kind": pd.Series([], dtype=object), "reason": pd.Series([], dtype=object)})


def resolve_feature_columns(names: list, features: str | list[str],
                            exclude: dict[str, str] | None = None) -> list[str]:
    """Feature columns from a list, a comma-separated string, or glob patterns ('pixel_*').

    ``exclude`` maps the key and label columns to their role: a glob never takes them
    (``*`` would put the label among the features), and naming one is an error."""
    patterns = _patterns(features)
    if not patterns:
        raise ValueError("features must name at least one column")
    exclude = {column: role for column, role in (exclude or {}).items() if column}
    columns: list[str] = []
    for pattern in patterns:
        if pattern in exclude:
            raise ValueError(f"feature {pattern!r} is the {exclude[pattern]} column: a column is a feature, the"
                             " key or the label, not two of them")
        matched = [c for c in names if fnmatch.fnmatchcase(str(c), pattern) and c not in exclude]
        if not matched:
            # the bracket only where the pattern would have taken the key or the label
            never = " (the key and label columns never do)" if any(
                fnmatch.fnmatchcase(str(c), pattern) for c in exclude) else ""
            raise ValueError(f"no column matches feature {pattern!r}{never}; columns are {list(names)[:20]}")
        columns.extend(c for c in matched if c not in columns)
    return columns


def _patterns(columns: str | list[str]) -> list[str]:
    """An option's column names and globs: a comma-separated string or a list."""
    patterns = columns.split(",") if isinstance(columns, str) else list(columns)
    return [p.strip() for p in patterns if p.strip()]


def _named(columns: str | list[str] | None) -> list[str]:
    """The columns an option names one by one (no glob pattern)."""
    return [p for p in _patterns(columns) if not any(mark in p for mark in "*?[")] if columns is not None else []


# A decimal numeral whose fraction is all zeros: "7.0", "7.", "-3.00" (not "+7", "1e3", "9.50")
_INTEGRAL_DECIMAL = r"^(-?\d+)\.0*$"


def key_text(value) -> str | None:
    """The one rule for keys and labels (module docstring): stripped text, an all-zero
    fraction dropped, None for a missing or blank value."""
    return _as_text(pd.Series([value], dtype=object)).iloc[0]


#: The characters Python's ``str.strip()`` removes (``str.isspace``), for Arrow's trim:
#: tests/test_records.py checks the list against every code point.
PYTHON_WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                     "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
# _INTEGRAL_DECIMAL for RE2: Python's \d on text is any Unicode decimal digit, RE2's only 0-9
_INTEGRAL_DECIMAL_RE2 = r"^(-?\p{Nd}+)\.0*$"


def _as_text(values: pd.Series) -> pd.Series:
    """Keys and labels by ``key_text``'s rule, as strings (object dtype, None where missing)."""
    values = pd.Series(values, dtype=object).reset_index(drop=True)
    if pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty"):
        return pd.Series(text_as_text(pa.array(values, pa.string(), from_pandas=True)).to_numpy(zero_copy_only=False),
                         dtype=object)
    missing = values.isna().to_numpy()
    floats = values.map(lambda v: isinstance(v, (float, np.floating))).to_numpy(dtype=bool) & ~missing
    text = values.where(missing | floats, values.astype(str))
    if floats.any():  # an integral float as an integer (7.0 → "7"), others as Python writes them
        text[floats] = values[floats].map(lambda v: str(int(v)) if float(v).is_integer() else repr(float(v)))
    text = text.str.strip().str.replace(_INTEGRAL_DECIMAL, r"\1", regex=True)
    text = text.where(~missing & (text != ""), None)
    return text.astype(object)


def keys_as_text(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``_as_text`` of an Arrow column, as an Arrow string array (a million keys in 12 MB,
    not a million Python strings)."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) or pa.types.is_null(values.type):
        return text_as_text(pa.chunked_array([values]).combine_chunks() if isinstance(values, pa.Array)
                            else values.combine_chunks())
    return pa.array(_as_text(values.to_pandas()), pa.string())


def text_as_text(text: pa.Array) -> pa.Array:
    """``_as_text`` of strings (and nulls), in Arrow's compute kernels: the per-value
    Python of the general rule took 7.4 of a 1M-row ingest's 30 s."""
    text = pa.compute.utf8_trim(text.cast(pa.string()), characters=PYTHON_WHITESPACE)
    text = pa.compute.replace_substring_regex(text, pattern=_INTEGRAL_DECIMAL_RE2, replacement=r"\1")
    return pa.compute.if_else(pa.compute.equal(text, ""), pa.scalar(None, pa.string()), text)


def _check_classes(classes: Iterable[str] | None) -> list[str] | None:
    """The allowed labels as text (normalised like the labels), or None for any label."""
    if classes is None:
        return None
    if isinstance(classes, (str, bytes)):
        raise TypeError(f"classes must be a list of labels, not one string ({classes!r});"
                        " e.g. classes=['cat', 'dog']")
    try:
        items = list(classes)
    except TypeError:
        raise TypeError(f"classes must be a list of labels, got {type(classes).__name__}") from None
    names = _as_text(pd.Series(items, dtype=object)).tolist()
    if not names or any(name is None for name in names):
        raise ValueError(f"classes must be a non-empty list of non-empty labels, got {items!r}")
    return list(dict.fromkeys(names))


def _describe_classes(classes: list[str], shown: int = 8) -> str:
    """``['a', 'b']``, or the first ``shown`` classes and how many there are in all."""
    text = ", ".join(repr(c) for c in classes[:shown])
    return f"[{text}]" if len(classes) <= shown else f"[{text}, ...] ({len(classes)} in all)"


class Reasons(defaultdict):
    """Why rows are rejected: row position → its (kind, message) pairs, only for rows that
    have one (a list per row of a million-row file cost a second to build and scan)."""

    def __init__(self) -> None:
        super().__init__(list)

    def valid(self, n: int) -> np.ndarray:
        """Which of ``n`` rows have no reason so far."""
        ok = np.ones(n, dtype=bool)
        ok[[row for row, found in self.items() if found]] = False
        return ok

    def for_every_row(self, n: int, kind: str, message: str) -> None:
        for row in range(n):  # every row: the file's feature count is wrong as a whole
            self[row].append((kind, message))


def _shown(value, limit: int = 60) -> str:
    """``value`` as a reason quotes it: its repr, cut short (a text column taken for a
    feature put whole news articles into the reason, and into the one-line error)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_blank(value) -> bool:
    return isinstance(value, str) and not value.strip()


def _feature_matrix(frame: pd.DataFrame, columns: list[str], expected_dim: int | None,
                    reasons: Reasons) -> np.ndarray:
    """Float matrix of the feature columns; appends to ``reasons`` why a row cannot be used."""
    n = len(frame)
    lists = _as_lists(frame[columns[0]]) if len(columns) == 1 else None
    if lists is not None:
        return _list_column(lists, columns[0], expected_dim, reasons)
    matrix = np.empty((n, len(columns)))
    for j, column in enumerate(columns):  # a loop over feature columns, vectorised over rows
        raw = frame[column]
        numeric = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        missing = raw.isna().to_numpy()
        if not pd.api.types.is_numeric_dtype(raw):  # numeric columns hold no blanks: skip the scan
            missing = missing | raw.map(_is_blank).to_numpy(dtype=bool)
        bad_text = np.isnan(numeric) & ~missing
        for i in np.flatnonzero(bad_text):
            reasons[i].append((NON_NUMERIC, f"non-numeric feature {column}={_shown(raw.iloc[i])}"))
        for i in np.flatnonzero(missing):
            reasons[i].append((MISSING_FEATURE, f"missing (NaN) feature {column}"))
        for i in np.flatnonzero(np.isinf(numeric)):
            reasons[i].append((INFINITE_FEATURE, f"infinite feature {column}"))
        matrix[:, j] = numeric
    if expected_dim is not None and len(columns) != expected_dim:
        reasons.for_every_row(n, WRONG_LENGTH, f"wrong feature length: got {len(columns)}, expected {expected_dim}")
    return matrix


def _with_text(frame: pd.DataFrame, columns: list[str], text: str, expected_dim: int | None,
               reasons: Reasons) -> np.ndarray:
    """The numeric feature columns (maybe none) followed by the text column's embedding
    (``labelling.text_embedding``); rows with an empty text cell get a reason and NaN."""
    from .text_embedding import DIMENSION, embed_texts

    numeric = _feature_matrix(frame, columns, None, reasons) if columns else np.zeros((len(frame), 0))
    cells = frame[text]
    empty = cells.isna().to_numpy() | cells.map(lambda v: not str(v).strip()).to_numpy(dtype=bool)
    for i in np.flatnonzero(empty):
        reasons[i].append((MISSING_TEXT, f"missing text {text}"))
    width = numeric.shape[1] + DIMENSION
    if expected_dim is not None and width != expected_dim:
        reasons.for_every_row(len(frame), WRONG_LENGTH, f"wrong feature length: got {width} ({numeric.shape[1]}"
                              f" features and a text embedding of {DIMENSION}), expected {expected_dim}")
    embedded = np.full((len(frame), DIMENSION), np.nan)
    kept = np.flatnonzero(reasons.valid(len(frame)))  # rows rejected anyway are not embedded
    if len(kept):
        embedded[kept] = embed_texts(cells.iloc[kept].astype(str).tolist())
    return np.hstack([numeric, embedded])


def common_length(lengths: np.ndarray) -> int:
    """The feature-list length rows are held to when the dataset has none yet: the most
    common non-zero length (the smallest on a tie; 1 when no row has a list)."""
    return int(pd.Series(lengths[lengths > 0]).mode().iloc[0]) if (lengths > 0).any() else 1


def _as_lists(values: pd.Series) -> pd.Series | None:
    """The column as feature lists, or None when it holds none: a Parquet list column as
    it is, and text lists as pandas writes a list column to CSV (``"[0.1, -0.2]"``) or numpy
    prints an array (``"[0.1 -0.2]"``): numbers between brackets, apart by commas or blanks,
    split here (``nan`` is a missing value) and checked as numbers by ``_list_column``. A
    cell that is no list then has no feature list (a rejected row), as in a Parquet list
    column."""
    if values.map(lambda v: isinstance(v, (list, tuple, np.ndarray))).any():
        return values
    if pd.api.types.is_numeric_dtype(values):
        return None
    text = values.astype("string").str.strip()
    listed = (text.str.startswith("[") & text.str.endswith("]")).fillna(False).to_numpy(dtype=bool)
    if not listed.any():
        return None
    inner = text.str.slice(1, -1).str.strip()
    # "nan" is how pandas and numpy write a missing value in a list: missing, not text
    items = inner.str.split(r"[,\s]+", regex=True).map(
        lambda v: [None if item.lower() == "nan" else item for item in v] if isinstance(v, list) and v != [""] else [])
    return items.where(listed, None)


def _list_column(values: pd.Series, column: str, expected_dim: int | None, reasons: Reasons) -> np.ndarray:
    """One column of feature lists. The expected length is ``expected_dim`` when the dataset
    has one, else the most common non-zero length of the batch (the smallest on a tie).

    The rows of that length are checked as one block (``_list_block``): row by row, with a
    pandas Series per row, 250,000 rows of 384 numbers (an embedding column in Parquet)
    took 115 s of the ingest's 138."""
    lengths = values.map(lambda v: len(v) if isinstance(v, (list, tuple, np.ndarray)) else -1).to_numpy()
    common = expected_dim if expected_dim is not None else common_length(lengths)
    rows = np.flatnonzero(lengths == common)
    block = _list_block(values.iloc[rows].to_numpy(), rows, column, reasons) if len(rows) else None
    if block is not None and len(rows) == len(values):  # every row of the length: the block is the matrix
        return block
    matrix = np.full((len(values), common), np.nan)
    if block is not None:
        matrix[rows] = block
    for i in np.flatnonzero(lengths != common):  # a loop over the rows of another length
        length = lengths[i]
        reasons[i].append((WRONG_LENGTH, f"wrong feature length: got {length if length >= 0 else 'none'},"
                                         f" expected {common}"))
    return matrix


def _list_block(cells: np.ndarray, rows: np.ndarray, column: str, reasons: Reasons) -> np.ndarray:
    """The feature lists ``cells`` (all of one length) as a float matrix, with a reason for
    each of ``rows`` that holds a non-numeric, missing or infinite value (the first of each
    kind, by position)."""
    shape = (len(cells), len(cells[0]))
    if all(isinstance(cell, np.ndarray) and cell.dtype.kind in "biuf" for cell in cells):
        # a numeric list column (Parquet): NaN is a missing value, nothing is text
        block = np.stack(list(cells)).astype(float, copy=False)
        numeric, missing = block, np.isnan(block)
        bad = np.zeros_like(missing)
    else:  # text lists ("[0.1, -0.2]") or mixed cells: parsed as numbers, as a feature column is
        # the cells' own values, one per item (fromiter: a list inside a list stays one item)
        block = np.fromiter(itertools.chain.from_iterable(cells), dtype=object, count=shape[0] * shape[1])
        items = pd.Series(block, dtype=object)
        block = block.reshape(shape)
        numeric = pd.to_numeric(items, errors="coerce").to_numpy(dtype=float, na_value=np.nan).reshape(shape)
        missing = (items.isna().to_numpy() | items.map(_is_blank).to_numpy(dtype=bool)).reshape(shape)
        bad = np.isnan(numeric) & ~missing
    infinite = np.isinf(numeric)
    for i in np.flatnonzero(bad.any(axis=1)):  # loops over the rows with a reason only
        position = int(np.argmax(bad[i]))
        reasons[rows[i]].append((NON_NUMERIC, f"non-numeric value {_shown(block[i, position])} at position"
                                              f" {position} of feature list {column}"))
    for i in np.flatnonzero(missing.any(axis=1)):
        reasons[rows[i]].append((MISSING_FEATURE, f"missing (NaN) value at position {int(np.argmax(missing[i]))}"
                                                  f" of feature list {column}"))
    for i in np.flatnonzero(infinite.any(axis=1)):
        reasons[rows[i]].append((INFINITE_FEATURE, f"infinite value at position {int(np.argmax(infinite[i]))}"
                                                   f" of feature list {column}"))
    return numeric


def _reject_duplicates(keys: pd.Series, labels: pd.Series, matrix: np.ndarray, reasons: Reasons,
                       numbers: np.ndarray, others: np.ndarray | None = None) -> None:
    """Among the rows valid so far, reject repeated keys (the policy is in the module
    docstring); ``numbers`` are the rows' numbers in the input, for the messages."""
    candidates = np.flatnonzero(reasons.valid(len(keys)))
    candidate_keys = keys.iloc[candidates]
    repeated = candidate_keys.duplicated(keep=False).to_numpy()
    if not repeated.any():
        return
    groups = pd.Series(candidates[repeated]).groupby(candidate_keys.to_numpy()[repeated], sort=False)
    for key, positions in groups:  # a loop over repeated keys only
        positions = positions.to_numpy()
        first = positions[0]
        same = all(np.array_equal(matrix[p], matrix[first]) and labels.iloc[p] == labels.iloc[first]
                   and (others is None or list(others[p]) == list(others[first])) for p in positions[1:])
        if same:
            for p in positions[1:]:
                reasons[p].append((DUPLICATE_KEY, f"duplicate key {key!r}: same values as row {numbers[first]},"
                                                  " which is stored"))
            continue
        listed = ", ".join(map(str, numbers[positions[:5]])) + (", ..." if len(positions) > 5 else "")
        for p in positions:
            reasons[p].append((DUPLICATE_KEY, f"duplicate key {key!r} with conflicting values in rows"
                                              f" {listed}: none of them is stored"))


def _categorical_matrix(frame: pd.DataFrame, columns: list[str], reasons: Reasons) -> np.ndarray:
    """Object matrix of the categorical columns as text (``key_text``'s rule); appends a
    reason for each empty cell."""
    matrix = np.empty((len(frame), len(columns)), dtype=object)
    for j, column in enumerate(columns):  # a loop over categorical columns, vectorised over rows
        text = _as_text(frame[column])
        for i in np.flatnonzero(text.isna().to_numpy()):
            reasons[i].append((MISSING_FEATURE, f"missing categorical feature {column}"))
        matrix[:, j] = text.to_numpy()
    return matrix


def _confidence_column(frame: pd.DataFrame, column: str, labels: pd.Series, reasons: Reasons) -> np.ndarray:
    """The label confidences (NaN where none is given); appends why a value is refused."""
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    missing = raw.isna().to_numpy()
    if not pd.api.types.is_numeric_dtype(raw):
        missing = missing | raw.map(_is_blank).to_numpy(dtype=bool)
    has_label = labels.notna().to_numpy()
    for i in np.flatnonzero(np.isnan(values) & ~missing):
        reasons[i].append((BAD_CONFIDENCE, f"label confidence {column}={raw.iloc[i]!r} is not a number"))
    outside = ~np.isnan(values) & ((values < 0) | (values > 1))
    for i in np.flatnonzero(outside):
        reasons[i].append((BAD_CONFIDENCE, f"label confidence {column}={float(values[i])!r} is not in [0, 1]"))
    for i in np.flatnonzero(~missing & ~has_label):
        reasons[i].append((BAD_CONFIDENCE, f"label confidence {column}={raw.iloc[i]!r} on a row without a label"))
    return np.where(missing, np.nan, values)


@dataclass(frozen=True)
class RecordColumns:
    """What the input's columns are, checked and resolved once (``record_columns``): the
    key, the label, the numeric feature columns (globs expanded), the text column, the
    categorical columns, the label-confidence column, the allowed classes (None: any) and
    the feature length the dataset already has (None: any)."""

    key: str
    label: str | None
    features: list[str]
    text: str | None
    categorical: list[str]
    label_confidence: str | None
    allowed: list[str] | None
    expected_dim: int | None

    @property
    def columns(self) -> FeatureColumns:
        """The feature columns by name (``labelling.feature_columns``)."""
        return FeatureColumns(tuple(self.features), self.text, tuple(self.categorical))


def check_record_options(*, key: str, features, label, expected_dim, classes, text, categorical) -> list[str] | None:
    """The checks of ``parse_records``' arguments that need no input (a problem of the
    call, not of a row, raises); returns the allowed classes."""
    allowed = _check_classes(classes)
    if expected_dim is not None and (isinstance(expected_dim, bool) or not isinstance(expected_dim, (int, np.integer))
                                     or expected_dim < (0 if categorical else 1)):
        raise ValueError(f"expected_dim must be a positive integer, got {expected_dim!r}")
    if features is None and text is None and not categorical:
        raise ValueError("give the feature columns (--features), a text column (--text), categorical"
                         " columns (--categorical), or several of them")
    if text is not None and text in (key, label):
        raise ValueError(f"the text column {text!r} is also the {'key' if text == key else 'label'} column")
    return allowed


def _separator_refusal(names: list) -> str | None:
    """The error when the whole header was read as one column: a file separated by ';' (as
    spreadsheets save CSV where the decimal mark is a comma), '|' or tabs in a .csv. The
    separator leads: a newcomer's walk read "no column 'id'; columns are [...]" first and
    the cause at the end of a long line."""
    if len(names) != 1:
        return None
    found = [mark for mark in (";", "\t", "|") if mark in str(names[0])]
    if not found:
        return None
    header = str(names[0])
    shown = header if len(header) <= 60 else header[:57] + "..."
    return (f"the file looks separated by {found[0]!r} (its header: {shown!r}): a .csv file is read with ','"
            " between values and '.' as the decimal mark, a .tsv file with tabs; save it with commas, or as .tsv")


def record_columns(names: list, *, key: str, features=None, label=None, expected_dim=None, classes=None,
                   text=None, categorical=None, label_confidence=None,
                   recorded: RecordedColumns | None = None) -> RecordColumns:
    """``parse_records``' options checked against the input's column ``names``, and against
    the ``recorded`` feature columns when there are some (``labelling.feature_columns``: the
    same columns are taken in the recorded order, others refused)."""
    allowed = check_record_options(key=key, features=features, label=label, expected_dim=expected_dim,
                                   classes=classes, text=text, categorical=categorical)
    for column in (key, label, text, label_confidence):
        if column and column not in names:
            refusal = _separator_refusal(names)
            if refusal is not None:
                raise ValueError(refusal)
            hint = (f"; for records without a key of their own the key {ROW_KEY!r} numbers them by their line"
                    " in the file" if column == key else "")
            raise ValueError(f"no column {column!r}; columns are {list(names)[:20]}{hint}")
    roles = {key: "key", **({label: "label"} if label else {}), **({text: "text"} if text else {}),
             **({label_confidence: "label confidence"} if label_confidence else {})}
    # a categorical glob skips the columns --features names one by one (credit-g.arff: `--features
    # duration,credit_amount --categorical '*'`), as a feature glob skips the categorical ones
    named = {column: "numeric feature" for column in _named(features) if column in names and column not in roles}
    categorical_columns = resolve_feature_columns(names, categorical, exclude={**roles, **named}) \
        if categorical else []
    roles.update({column: "categorical" for column in categorical_columns})
    columns = resolve_feature_columns(names, features, exclude=roles) if features is not None else []
    spec = RecordColumns(key, label, columns, text, categorical_columns, label_confidence, allowed, expected_dim)
    if recorded is None:
        return spec
    ordered = recorded.conform(spec.columns)  # the same columns, read in the recorded order
    return replace(spec, features=list(ordered.numeric), categorical=list(ordered.categorical))


def parse_records(
    source: str | Path | pd.DataFrame,
    *,
    key: str,
    features: str | list[str] | None = None,
    label: str | None = None,
    expected_dim: int | None = None,
    classes: Iterable[str] | None = None,
    encoding: str = "utf-8",
    text: str | None = None,
    categorical: str | list[str] | None = None,
    label_confidence: str | None = None,
    recorded: RecordedColumns | None = None,
) -> ParsedRecords:
    """Validate records into node rows; every row is either a node or a reject with reasons.

    Parameters
    ----------
    source : path to a CSV/TSV/Parquet/ARFF file, or a DataFrame
    key : str
        Column with each entity's unique key, or ``ROW_KEY`` ("#"): each record's row
        number (module docstring) for records without a key of their own.
    features : str or list of str, optional
        Numeric feature columns (comma-separated names or glob patterns), or one column
        holding lists. May be left out when ``text`` or ``categorical`` gives the features.
    label : str, optional
        Column with the given label (empty where none is given).
    expected_dim : int, optional
        Feature length the dataset already has in the store; rows of another length are rejected.
    classes : list of str, optional
        The allowed labels. A row whose label is not one of them is rejected (kind
        ``label not in classes``); a row without a label is always allowed (it is an
        unlabelled entity). Classes are normalised like labels (``3`` and ``"3"`` are the
        same class). None (default) allows any label.
    encoding : str, default "utf-8"
        Text encoding of a CSV/TSV file (``labelling.textfiles``).
    text : str, optional
        A column of text, embedded by ``labelling.text_embedding`` (the
        ``graphlabel[text]`` extra) into 384 features after the numeric ones; an empty
        or blank cell rejects its row (kind ``missing text``).
    categorical : str or list of str, optional
        Categorical feature columns (names or globs), kept as text in the node table's
        ``categories`` column (one value per column, in the order given).
    label_confidence : str, optional
        Column with the trust in each given label, in [0, 1] (the node table's
        ``label_confidence`` column; null where empty).
    recorded : RecordedColumns, optional
        The feature columns the records must have (the dataset's, or a kept model's): the
        same columns in another order are read in the recorded order; other columns raise
        ``FeatureColumnsDiffer`` (``labelling.feature_columns``).

    Returns
    -------
    ParsedRecords
        The node rows, the rejects (``row``, ``key``, ``kind``, ``reason``) and the input
        position of each node row. Duplicate keys: identical copies keep the first row,
        conflicting copies are all rejected (see the module docstring).

    Raises
    ------
    NoValidRecords
        When no row is valid (the rejects are attached as ``.rejects``).
    ValueError, TypeError
        For a key, label or feature column that does not exist, a bad ``classes`` or
        ``expected_dim``: problems of the call, not of a row.
    """
    check_record_options(key=key, features=features, label=label, expected_dim=expected_dim, classes=classes,
                         text=text, categorical=categorical)
    table = read_table(source, key, label, encoding, text)
    spec = record_columns(list(table.frame.columns), key=key, features=features, label=label,
                          expected_dim=expected_dim, classes=classes, text=text, categorical=categorical,
                          label_confidence=label_confidence, recorded=recorded)
    parsed = parse_frame(table.frame, table.rows, spec)
    rejects = in_input_order([table.rejects, parsed.rejects])  # lines that were no record, with the rest
    if not parsed.n_valid:
        raise no_valid_records(rejects, source)
    return ParsedRecords(parsed.nodes, rejects, parsed.rows, parsed.columns)


def in_input_order(rejects: list[pd.DataFrame]) -> pd.DataFrame:
    """Rejects tables as one, by their rows' place in the input."""
    kept = [frame for frame in rejects if len(frame)]
    if not kept:
        return rejects[-1] if rejects else no_rejects()
    if len(kept) == 1:
        return kept[0].reset_index(drop=True)
    return pd.concat(kept, ignore_index=True).sort_values("row", kind="stable").reset_index(drop=True)


#: What the one-line error of an input without a valid record quotes of its reasons.
FIRST_REASONS, REASON_CHARS = 4, 120
_NON_NUMERIC_COLUMN = re.compile(r"non-numeric feature (.+?)=")
_MISSING_COLUMN = re.compile(r"missing \(NaN\) feature ([^;]+)")


def no_valid_records(rejects: pd.DataFrame, source) -> NoValidRecords:
    """The error of an input without one valid record: what was wrong, or that it was empty.

    One line: the counts by kind, the feature columns that hold text in every record (the
    usual cause: they are categorical), and the first distinct reasons, each cut short (a
    record of credit-g.arff read with ``--features '*'`` had 13 reasons, and three such
    records made a line of 2,000 characters)."""
    if len(rejects):
        counts = ", ".join(f"{kind}: {n}" for kind, n in reject_counts(rejects).items())
        message = (f"none of the {len(rejects)} records is valid ({counts}){_text_columns_hint(rejects)};"
                   f" first reasons: {first_reasons(rejects)}")
    else:
        where = source if isinstance(source, (str, Path)) else "the input"
        message = f"{where} has no rows"  # ingest and predict both read records
    return NoValidRecords(message, rejects)


def first_reasons(rejects: pd.DataFrame, count: int = FIRST_REASONS) -> str:
    """The first ``count`` distinct reasons of ``rejects``, each cut short, as one line
    quotes them (a row's reasons one by one: one row with 13 bad features listed all 13)."""
    messages = list(dict.fromkeys(message for reason in rejects["reason"].head(50).astype(str)
                                  for message in reason.split("; ")))[:count]
    return "; ".join(m if len(m) <= REASON_CHARS else m[:REASON_CHARS - 3] + "..." for m in messages)


def _text_columns_hint(rejects: pd.DataFrame) -> str:
    """The feature columns a non-numeric value rejected every record for, named with what to
    do (read from the reasons this module writes: the rejects are all there is by then); and
    the columns with no number in any record, text in some and empty in the others: a label
    column with few labels, which ``--features '*'`` took when ``--label`` was not given (a
    newcomer's ``predict`` on the ingested file: "non-numeric feature: 21, missing feature:
    149", with no word of the label)."""
    reasons = rejects["reason"].astype(str)
    per_record = [set(_NON_NUMERIC_COLUMN.findall(reason)) for reason in reasons]
    always = set.intersection(*per_record) if per_record else set()
    if always:
        columns = [column for column in dict.fromkeys(_NON_NUMERIC_COLUMN.findall(str(reasons.iloc[0])))
                   if column in always]
        return (f"; {named(columns)} {'holds' if len(columns) == 1 else 'hold'} text in every record:"
                " categorical columns go in --categorical (a text to embed in --text), not in --features")
    no_number = [texts | set(_MISSING_COLUMN.findall(reason)) for texts, reason in zip(per_record, reasons)]
    sparse = set.intersection(*no_number) & set.union(*per_record) if no_number else set()
    if not sparse:
        return ""
    columns = sorted(sparse)
    return (f"; {named(columns)} {'holds' if len(columns) == 1 else 'hold'} no number in any record,"
            " text in some: a label column goes in --label, categorical columns in --categorical, not in"
            " --features")


def parse_frame(frame: pd.DataFrame, numbers: np.ndarray, spec: RecordColumns,
                keys: pd.Series | None = None) -> ParsedRecords:
    """The records of ``frame`` (row i is ``numbers[i]`` of the input) as node rows and
    rejects (``parse_records`` says what is checked); may hold no valid row. ``keys``: the
    frame's keys already by ``key_text``'s rule, when the caller has them."""
    frame = frame.reset_index(drop=True)
    keys = _as_text(frame[spec.key]) if keys is None else keys.reset_index(drop=True)
    labels = _as_text(frame[spec.label]) if spec.label else pd.Series(np.full(len(frame), None, dtype=object))
    reasons = Reasons()
    for i in np.flatnonzero(keys.isna().to_numpy()):
        reasons[i].append((MISSING_KEY, "missing key"))
    if spec.text is None:
        matrix = _feature_matrix(frame, spec.features, spec.expected_dim, reasons)
    else:
        matrix = _with_text(frame, spec.features, spec.text, spec.expected_dim, reasons)
    category_matrix = _categorical_matrix(frame, spec.categorical, reasons) if spec.categorical else None
    trust = _confidence_column(frame, spec.label_confidence, labels, reasons) if spec.label_confidence else None
    if spec.allowed is not None:
        outside = labels.notna().to_numpy() & ~labels.isin(spec.allowed).to_numpy()
        described = _describe_classes(spec.allowed)
        for i in np.flatnonzero(outside):
            reasons[i].append((UNKNOWN_CLASS, f"label {labels.iloc[i]!r} not in classes {described}"))
    others = category_matrix
    if trust is not None:
        others = np.column_stack([others, trust]) if others is not None else trust[:, None]
    _reject_duplicates(keys, labels, matrix, reasons, numbers, others)

    valid = reasons.valid(len(frame))
    bad = np.flatnonzero(~valid)
    rejects = pd.DataFrame({
        "row": numbers[bad],
        "key": pd.Series(keys.iloc[bad].to_numpy(), dtype=object),
        "kind": ["; ".join(dict.fromkeys(kind for kind, _ in reasons[i])) for i in bad],
        "reason": ["; ".join(message for _, message in reasons[i]) for i in bad],
    }) if len(bad) else no_rejects()
    good = np.flatnonzero(valid)
    d = matrix.shape[1]
    nodes = pa.table(
        {
            "key": pa.array(keys.to_numpy()[good], pa.string()),
            "features": pa.ListArray.from_arrays(
                pa.array(np.arange(len(good) + 1, dtype=np.int32) * d), pa.array(matrix[good].ravel(), pa.float64())
            ),
            "label": pa.array(labels.to_numpy()[good], pa.string()),
        }
    ).cast(NODE_SCHEMA)
    if category_matrix is not None:  # the optional node columns (graphstore.schemas.STORED_NODE_SCHEMA)
        c = category_matrix.shape[1]
        nodes = nodes.append_column("categories", pa.ListArray.from_arrays(
            pa.array(np.arange(len(good) + 1, dtype=np.int32) * c),
            pa.array(category_matrix[good].ravel().tolist(), pa.string())))
    if trust is not None:
        nodes = nodes.append_column("label_confidence", pa.array(trust[good], pa.float64(),
                                                                 mask=np.isnan(trust[good])))
    return ParsedRecords(nodes, rejects, numbers[good], spec.columns)
