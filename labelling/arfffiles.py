"""Weka's ARFF files read so that no line is lost without a word, as ``labelling.textfiles``
reads CSV: every record keeps its line number, and a line that is no valid record becomes a
rejected row with that number and its reason.

Why not ``scipy.io.arff.loadarff`` (scipy is a dependency already): it stops the whole file
at its first bad line, and its message names neither the line nor the attribute (``could
not convert string to float: '14x8'``, ``tested_maybe value not in (...)``); it refuses
``string`` attributes (weka's Reuters examples). ``liac-arff`` (what scikit-learn vendors
for OpenML) names the line but also stops there (``Data value z not found in nominal
declaration, at line 6.``). The grammar of a dense ARFF data line is small
(comma-separated values, quoted with ``'`` or ``"`` when they hold a comma or a blank, ``\\``
escapes inside quotes, ``?`` for a missing value), so it is parsed here a line at a time: a
line without quotes is split at its commas, one with Weka's own quoting goes to the ``csv``
module (C), and only the rest (double quotes, escapes, blanks around quoted values, errors)
to a regular expression. ``python -m bench arff_read`` (100,000 records, medians of 5
rounds, load 0.6 on 2 cores): 0.98 s against scipy's 0.73 s on diabetes (1.36×), 1.47 s
against 1.35 s on credit-g (1.09×), frames and float columns included.

Decisions (Weka's ARFF documentation leaves these to the reader)
----------------------------------------------------------------
- Attributes: ``numeric``, ``real`` and ``integer`` are numbers; a ``{...}`` list is
  nominal; ``string`` and ``date`` are text (a date stays as written). ``relational``
  attributes are refused with one error (a bag of instances per record is no node).
- A line with another number of values than the header declares attributes, a quote never
  closed, or a nominal value the header does not declare is a ``malformed line`` with its
  reason (the attribute and the value for the last). A number that is not one stays text
  and is rejected by the records' rules when that column is a feature (``non-numeric
  feature``).
- Sparse instances (``{index value, ...}``, what Weka's ``StringToWordVector`` writes) are
  read as the dense record Weka means: an index is an attribute's 0-based position, and an
  attribute left out holds 0 when numeric and its first declared value when nominal (Weka
  stores a nominal value as its index, and a sparse instance leaves out the zeros), an
  empty text when ``string`` (Weka would take the first string its run saw, which the file
  does not hold) and ``?`` when ``date``. An index out of range or given twice,
  or a pair without a value, is a ``malformed line``. The records become dense rows (a row
  of every attribute): a file of r records and a attributes takes r × a cells, as the
  features do in the store. ``tests/test_arff_files.py`` reads Weka's own sparse output of
  ``ReutersCorn-train.arff`` (1,554 records, 1,004 attributes) and compares it with Weka's
  dense conversion of the same file (``SparseToNonSparse``).
- An instance weight (``, {w}`` after a record, Weka 3.6+) is not read: the line is a
  ``malformed line`` (dense: one value too many).
- ``?`` (missing): in a numeric attribute a missing number (the row is rejected when the
  column is a feature: ``missing feature``), in the key or label column an empty cell (no
  key, no label: an ARFF file's unlabelled records carry ``?`` as their class), in a
  ``string`` attribute an empty text. In a nominal attribute it stays the value ``?``, a
  category of its own: weka's examples use it for "no answer" (``vote.arff``: 203 of 435
  records have one; rejecting them would lose half the file, and ``bench/scaling.py``
  measures the vote set this way).
- Names and values are text as written, quotes and escapes removed; the text encoding is
  ``encoding`` (UTF-8 by default: Weka writes its files in the platform's, usually UTF-8).
  A file that is not in it is one error naming ``--encoding`` and the first line that is not
  (an ARFF file has one encoding throughout; the CSV reader's line-by-line rejects are for
  files pasted together).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from .textfiles import _SHOWN, MALFORMED_LINE, TextTable, _as_utf8, _reject_table, suggested_encoding

MISSING = "?"
_NUMERIC = {"numeric", "real", "integer"}
# One value and the comma after it (or the line's end): a quoted value, with backslash
# escapes, or an unquoted one that does not start with a quote.
_VALUE = re.compile(r"""\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|([^,'"\s][^,]*?|))\s*(,|$)""")
_ESCAPE = re.compile(r"\\(.)")
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r"}
# One "index value" pair of a sparse instance and the comma after it (or the end).
_PAIR = re.compile(r"""\s*(\d+)\s+(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|([^,'"\s][^,]*?))\s*(,|$)""")
_NAME_AND_TYPE = re.compile(r"""\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|(\S+))\s+(.*)$""", re.S)


@dataclass(frozen=True)
class Attribute:
    """One ``@attribute`` of the header: its ``name``, ``kind`` (``numeric``, ``nominal``,
    ``string`` or ``date``) and, for a nominal one, its declared ``values``."""

    name: str
    kind: str
    values: tuple[str, ...] = ()

    @cached_property
    def accepted(self) -> frozenset[str]:
        """The values a record may hold: the declared ones and ``?``."""
        return frozenset(self.values) | {MISSING}


def read_arff_table(path: str | Path, *, text_columns: list[str], encoding: str = "utf-8") -> TextTable:
    """The records of the ARFF file ``path`` (see the module docstring).

    ``text_columns`` (the key and label) read ``?`` as an empty cell whatever their type.
    Numeric attributes become float columns when every value is a number or ``?``.
    """
    path = Path(path)
    lines = _lines(path, encoding)
    attributes, first_data = _header(lines, path)
    left_out = _left_out(attributes)
    rows: list[list[str]] = []
    numbers: list[int] = []
    found: dict[int, tuple[str, str]] = {}
    for i in range(first_data, len(lines)):  # a loop over the file's lines: one match each
        line = lines[i].strip()
        if not line or line.startswith("%"):
            continue
        values, reason = _record(line, attributes, left_out)
        if values is not None:
            rows.append(values)
            numbers.append(i + 1)
        else:
            shown = line if len(line) <= _SHOWN else line[:_SHOWN] + "..."
            found[i] = (MALFORMED_LINE, f"{reason}: {shown!r}")  # the line's index: _reject_table adds 1
    frame = pd.DataFrame(rows, columns=range(len(attributes)), dtype=object)
    columns = {}
    for j, attribute in enumerate(attributes):
        column = frame[j]
        if attribute.name in text_columns or attribute.kind == "string":
            column = column.where(column != MISSING, None)
        elif attribute.kind == "numeric":
            column = _numbers(column)
        columns[attribute.name] = column
    return TextTable(pd.DataFrame(columns), np.array(numbers, dtype=np.int64), _reject_table(found))


def read_arff_attributes(path: str | Path, *, encoding: str = "utf-8") -> list[Attribute]:
    """The ``@attribute`` declarations of the ARFF file ``path``, in order."""
    path = Path(path)
    return _header(_lines(path, encoding), path)[0]


def _lines(path: Path, encoding: str) -> list[str]:
    """The file's lines, decoded from ``encoding``; a file not in it is one error naming
    ``--encoding`` and its first bad line (module docstring)."""
    raw = path.read_bytes()
    data = _as_utf8(raw, path, encoding)
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:  # one error, as for a CSV file in another encoding
        first_bad = data.count(b"\n", 0, error.start) + 1
        raise ValueError(f"{path} is not valid utf-8 text (line {first_bad}): pass the file's encoding with --encoding,"
                         f" e.g. --encoding {suggested_encoding(raw)}") from None


def _header(lines: list[str], path: Path) -> tuple[list[Attribute], int]:
    """The attributes and the index of the first line after ``@data``."""
    attributes: list[Attribute] = []
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        keyword = line.split(None, 1)[0].lower()
        if keyword == "@data":
            if not attributes:
                raise ValueError(f"{path}: no @attribute before @data (line {i + 1})")
            return attributes, i + 1
        if keyword == "@attribute":
            attributes.append(_attribute(line[len(keyword):], path, i + 1))
        elif keyword not in ("@relation", "@end"):
            raise ValueError(f"{path}, line {i + 1}: {line[:_SHOWN]!r} is not an ARFF header line"
                             " (@relation, @attribute or @data)")
    raise ValueError(f"{path} has no @data line: not an ARFF file")


def _attribute(text: str, path: Path, line: int) -> Attribute:
    match = _NAME_AND_TYPE.match(text)
    if match is None:
        raise ValueError(f"{path}, line {line}: an @attribute needs a name and a type")
    name = _unescaped(match[1] if match[1] is not None else match[2] if match[2] is not None else match[3])
    kind = match[4].strip()
    if kind.startswith("{"):
        if not kind.endswith("}"):
            raise ValueError(f"{path}, line {line}: attribute {name!r}'s values {kind[:_SHOWN]!r} have no closing '}}'")
        values, reason = _values(kind[1:-1])
        if values is None:
            raise ValueError(f"{path}, line {line}: attribute {name!r}'s values: {reason}")
        return Attribute(name, "nominal", tuple(values))
    word = kind.split(None, 1)[0].lower() if kind else ""
    if word in _NUMERIC:
        return Attribute(name, "numeric")
    if word in ("string", "date"):
        return Attribute(name, word)
    if word == "relational":
        raise ValueError(f"{path}, line {line}: attribute {name!r} is relational (a bag of instances per record);"
                         " graphlabel reads numeric, nominal, string and date attributes")
    raise ValueError(f"{path}, line {line}: attribute {name!r} has the unknown type {kind[:_SHOWN]!r}")


def _values(line: str) -> tuple[list[str] | None, str | None]:
    """The comma-separated values of ``line``, or why they are none."""
    if "'" not in line and '"' not in line:  # most lines: no quote, so no comma inside a value
        return [value.strip() for value in line.split(",")], None
    if '"' not in line and "\\" not in line and " ," not in line and "\t," not in line:
        # Weka's own quoting ('value', no blank before a comma), read by the csv module in C
        try:
            return next(csv.reader([line], quotechar="'", skipinitialspace=True, strict=True)), None
        except csv.Error:
            pass  # blanks after a closing quote, or a quote not closed: the expression below says which
    values: list[str] = []
    position = 0
    while True:
        match = _VALUE.match(line, position)
        if match is None:
            return None, "a quote is not closed, or text follows a closing quote"
        quoted = match[1] if match[1] is not None else match[2]
        values.append(_unescaped(quoted) if quoted is not None else match[3])
        if match[4] != ",":
            return values, None
        position = match.end()


# What a sparse instance's left-out attribute holds, by kind (nominal: its first declared value).
_LEFT_OUT = {"numeric": "0", "string": "", "date": MISSING}


def _left_out(attributes: list[Attribute]) -> list[str]:
    """The value of each attribute a sparse instance leaves out (module docstring), once per
    file: each sparse line copies it."""
    return [_LEFT_OUT[attribute.kind] if attribute.kind != "nominal" else attribute.values[0]
            for attribute in attributes]


def _sparse_values(line: str, attributes: list[Attribute],
                   left_out: list[str]) -> tuple[list[str] | None, str | None]:
    """The dense values of the sparse instance ``line`` (``{index value, ...}``), or why
    they are none (``left_out``: what the attributes it does not name hold)."""
    if not line.endswith("}"):
        return None, "a sparse instance ({index value, ...}) whose '}' does not end the line"
    inner = line[1:-1].strip()
    values = left_out.copy()
    given: set[int] = set()
    position = 0
    while inner:  # a loop over the line's pairs
        match = _PAIR.match(inner, position)
        if match is None:
            return None, "a sparse pair that is not 'index value', or a quote not closed"
        index = int(match[1])
        if index >= len(attributes) or index in given:
            return None, (f"sparse index {index} is given twice" if index in given else
                          f"sparse index {index} where the header declares {len(attributes)} attributes (0 to"
                          f" {len(attributes) - 1})")
        given.add(index)
        quoted = match[2] if match[2] is not None else match[3]
        values[index] = _unescaped(quoted) if quoted is not None else match[4]
        if match[5] != ",":
            break
        position = match.end()
    return values, None


def _record(line: str, attributes: list[Attribute], left_out: list[str]) -> tuple[list[str] | None, str | None]:
    """One data line's values, or why it is no record (``left_out``: ``_left_out(attributes)``)."""
    if line.startswith("{"):
        values, reason = _sparse_values(line, attributes, left_out)
        if values is None:
            return None, reason
    else:
        values, reason = _values(line)
        if values is None:
            return None, reason
        if len(values) != len(attributes):
            return None, f"{len(values)} values where the header declares {len(attributes)} attributes"
    for value, attribute in zip(values, attributes):
        if attribute.kind == "nominal" and value not in attribute.accepted:
            declared = ", ".join(attribute.values[:8]) + (", ..." if len(attribute.values) > 8 else "")
            return None, f"{attribute.name} holds {value!r}, not one of its declared values {{{declared}}}"
    return values, None


def _unescaped(text: str) -> str:
    return _ESCAPE.sub(lambda match: _ESCAPED.get(match[1], match[1]), text) if "\\" in text else text


def _numbers(column: pd.Series) -> pd.Series:
    """A numeric attribute's values as floats (``?`` missing), or as text when one is not a
    number (the records' rules then reject that row with its reason)."""
    missing = column == MISSING
    numbers = pd.to_numeric(column.where(~missing, None), errors="coerce")
    if (numbers.isna() == missing).all():
        return numbers.astype(float)
    return column.where(~missing, None)
