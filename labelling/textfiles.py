"""CSV and TSV files read so that no line is lost without a word: every record keeps the
line number it starts on, a line that is not a record (an extra field, a quote never
closed, bytes that are not text in the file's encoding) becomes a rejected row with its
line number and reason, and the rest is parsed by pandas' C parser.

Why not pandas alone: ``read_csv`` stops the whole file at the first malformed line
(``Expected 4 fields in line 3, saw 5``, ``EOF inside string``) or the first undecodable
byte, and silently shifts columns when every line has one field more than the header
(the first column becomes the index). Its ``on_bad_lines`` callback only exists in the
Python engine, and tells neither the line number nor why. So:

- First pandas reads the file strictly (``index_col=False``, a length warning is an
  error). When that works and the file has as many data lines as records (no blank
  line, no quoted line break), record i is on line i + 2: that is all, and most files
  cost one pandas parse and one count of line breaks.
- Otherwise the lines are checked here and pandas gets only the well-formed ones:
  in a file without a quote character each line is a record, and fields are counted
  per line from the separator positions with numpy (no Python loop); in a file with
  quotes (a field may hold separators or line breaks), Python's ``csv`` reader, in
  strict mode, walks the records to learn where each starts and how many fields it has.
  A record that fails (a quote never closed, text after a closing quote) is rejected as
  its first line, and reading resumes on the next line, so one stray quote costs one
  line, not the rest of the file.

Decisions
---------
- Line numbers count from 1, the header being line 1; a record spanning lines (a quoted
  line break) has the number of its first line. A line that holds only blanks is no
  record (pandas skips it too) and is not reported.
- More fields than the header is malformed. Fewer is not: pandas reads the missing
  trailing fields as empty, and a missing feature is then rejected for that reason,
  while a missing trailing label just leaves the row unlabelled.
- Encoding: UTF-8 by default (a byte-order mark is dropped). Lines that are not valid
  UTF-8 are rejected one by one, with a reason that names ``--encoding``. When the header
  or every data line is undecodable the file is in another encoding: one error naming
  the file and ``--encoding``. Another encoding (``encoding="latin-1"``) is decoded
  whole; a byte it cannot decode is that error too.
- Line ends: LF, CRLF, and CR alone in a file that has no LF (old Mac files); in an
  unquoted file a lone CR between LF lines ends a line, as pandas reads it.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

MALFORMED_LINE = "malformed line"
UNDECODABLE = "undecodable text"
_BOM = codecs.BOM_UTF8
_SHOWN = 60  # characters of a rejected line quoted in its reason


@dataclass(frozen=True)
class TextTable:
    """The records of a CSV/TSV file.

    Attributes
    ----------
    frame : pandas.DataFrame
        The well-formed records, as pandas parsed them.
    lines : numpy.ndarray of int64
        The file line (from 1, the header is line 1) each row of ``frame`` starts on.
    rejects : pandas.DataFrame
        One row per line that is no record: ``row`` (its line number), ``key`` (None),
        ``kind`` (``MALFORMED_LINE`` or ``UNDECODABLE``) and ``reason``.
    """

    frame: pd.DataFrame
    lines: np.ndarray
    rejects: pd.DataFrame


def _reject_table(found: dict[int, tuple[str, str]]) -> pd.DataFrame:
    rows = sorted(found)
    return pd.DataFrame({"row": np.array(rows, dtype=np.int64) + 1, "key": pd.Series([None] * len(rows), dtype=object),
                         "kind": [found[i][0] for i in rows], "reason": [found[i][1] for i in rows]})


def _as_utf8(raw: bytes, path: Path, encoding: str) -> bytes:
    """The file's bytes as UTF-8 (another encoding decoded whole), without a byte-order mark."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r} (--encoding): e.g. utf-8, latin-1, cp1252, utf-16")\
            from None
    if name == "utf-8":
        return raw[len(_BOM):] if raw.startswith(_BOM) else raw
    try:
        return raw.decode(encoding).removeprefix("\ufeff").encode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not valid {encoding} text (byte 0x{raw[error.start]:02x} at offset"
                         f" {error.start}): pass the file's encoding with --encoding") from None


def _normalise_line_ends(data: bytes, quote: bytes) -> bytes:
    if b"\r" not in data:
        return data
    if b"\n" not in data:
        return data.replace(b"\r", b"\n")  # CR-only line ends
    if quote not in data:
        return re.sub(rb"\r(?!\n)", b"\n", data)  # a lone CR ends a line, as pandas reads it
    return data


def _line_table(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive, without the LF) byte offsets of every line."""
    newlines = np.flatnonzero(arr == 10)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(arr)]))
    if starts[-1] == len(arr):  # the file ends with a line break: no empty last line
        starts, ends = starts[:-1], ends[:-1]
    return starts, ends


def _per_line(positions: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """How many of the sorted byte ``positions`` fall in each line."""
    return np.searchsorted(positions, ends) - np.searchsorted(positions, starts)


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", errors="replace").rstrip("\r")
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


#: Byte-order marks that name a file's encoding, longest first (UTF-32's starts with UTF-16's).
_ENCODING_MARKS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                   (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def suggested_encoding(raw: bytes) -> str:
    """The ``--encoding`` to suggest for a file that is not UTF-8: the one its byte-order
    mark names, else latin-1 (every byte decodes; a guess for a single-byte encoding)."""
    return next((name for mark, name in _ENCODING_MARKS if raw.startswith(mark)), "latin-1")


def _undecodable_lines(data: bytes, arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> dict[int, str]:
    """Lines that are not valid UTF-8 (checked one by one only when the whole is not)."""
    high = np.flatnonzero(arr >= 0x80)
    if not len(high):
        return {}
    try:
        data.decode("utf-8")
        return {}
    except UnicodeDecodeError:
        pass
    bad = {}
    for i in np.unique(np.searchsorted(starts, high, side="right") - 1):  # lines with non-ASCII bytes only
        line = data[starts[i]:ends[i]]
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as error:
            bad[int(i)] = (f"line {i + 1} is not valid utf-8 (byte 0x{line[error.start]:02x} at column"
                           f" {error.start + 1}); if the file is in another encoding, pass it with --encoding"
                           " (e.g. --encoding latin-1)")
    return bad


def _unquoted_records(arr, starts, ends, sep: bytes, n_fields: int, blank_bytes: bytes, skip: set[int]):
    """Records of a file without quotes: one per non-blank line; (good lines, malformed)."""
    separators = _per_line(np.flatnonzero(arr == sep[0]), starts, ends)
    # a line is blank when all its bytes are blanks (few: positions of those, not of the rest)
    is_blank = np.zeros(256, dtype=bool)
    is_blank[np.frombuffer(blank_bytes, np.uint8)] = True
    blanks = _per_line(np.flatnonzero(is_blank[arr]), starts, ends)
    data_lines = np.arange(1, len(starts))
    record = (blanks[1:] < (ends - starts)[1:]) & ~np.isin(data_lines, list(skip))
    fields = separators[1:] + 1
    too_many = record & (fields > n_fields)
    malformed = {int(i): (MALFORMED_LINE, f"line {i + 1} has {fields[i - 1]} fields, the header {n_fields}")
                 for i in data_lines[too_many]}
    return data_lines[record & ~too_many], malformed


def _quoted_records(data: bytes, n_lines: int, sep: str, n_fields: int, blanks: str, skip: set[int]):
    """Records of a file with quotes, walked by the ``csv`` reader (strict); (spans of the
    good records as (first line, lines), malformed first lines)."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    good, malformed = [], {}
    start = 1
    while start < n_lines:
        consumed: list[int] = []

        def feed(first=start, consumed=consumed):
            for i in range(first, n_lines):
                if i not in skip:
                    consumed.append(i)
                    yield lines[i] + "\n"

        reader = csv.reader(feed(), delimiter=sep, strict=True)
        restart = None
        while restart is None:
            mark = len(consumed)
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as error:
                first = consumed[mark] if len(consumed) > mark else start
                if "unexpected end of data" in str(error):
                    why = f"line {first + 1}: a quote opened on this line is never closed"
                else:
                    why = f"line {first + 1}: malformed quoting ({error})"
                malformed[first] = (MALFORMED_LINE, f"{why}: {_shown(lines[first].encode())}")
                restart = first + 1
                continue
            span = consumed[mark:]
            if not fields or (len(span) == 1 and not lines[span[0]].strip(blanks)):
                continue  # a blank line (only blanks, no separator: pandas skips it too)
            if len(fields) > n_fields:
                where = f"line {span[0] + 1}" if len(span) == 1 else f"lines {span[0] + 1}-{span[-1] + 1}"
                malformed[span[0]] = (MALFORMED_LINE, f"{where} has {len(fields)} fields, the header {n_fields}:"
                                                      f" {_shown(lines[span[0]].encode())}")
                restart = span[0] + 1 if len(span) > 1 else None  # re-read what a runaway quote swallowed
                continue
            good.append(span)
        if restart is None:
            break
        start = restart
    return good, malformed


def _pandas(data: bytes, sep: str, text_columns: list[str], na_values: list[str]) -> pd.DataFrame:
    """pandas' C parser on UTF-8 ``data``, strict: a malformed line, an undecodable byte or
    rows wider than the header (which ``index_col=False`` would cut, with a warning) raise."""
    columns = pd.read_csv(io.BytesIO(data), sep=sep, nrows=0, index_col=False, encoding="utf-8").columns
    na = {c: ([""] if c in text_columns else na_values) for c in columns}
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        return pd.read_csv(io.BytesIO(data), sep=sep, dtype={c: str for c in text_columns if c in columns},
                           keep_default_na=False, na_values=na, index_col=False, encoding="utf-8")


def _read_whole(data: bytes, sep: str, text_columns: list[str], na_values: list[str]) -> TextTable | None:
    """The file read by pandas alone, when it parses strictly and each data line is one
    record (so record i is on line i + 2); None otherwise."""
    try:
        frame = _pandas(data, sep, text_columns, na_values)
    except (pd.errors.ParserError, pd.errors.ParserWarning, UnicodeDecodeError, csv.Error):
        return None
    data_lines = data.count(b"\n") + (not data.endswith(b"\n")) - 1
    # a lone CR inside a quoted file is a line end to pandas but not to this count
    if len(frame) != data_lines or data.count(b"\r") != data.count(b"\r\n"):
        return None
    return TextTable(frame, np.arange(2, len(frame) + 2, dtype=np.int64), _reject_table({}))


def read_text_table(path: str | Path, sep: str, *, text_columns: list[str], na_values: list[str],
                    encoding: str = "utf-8") -> TextTable:
    """The records of the CSV/TSV file ``path`` (see the module docstring).

    ``text_columns`` are read as text with only an empty field missing; the other columns
    take ``na_values`` as missing-value markers.
    """
    path = Path(path)
    raw = path.read_bytes()
    if not raw or raw.isspace():  # scans only up to the first non-blank byte
        raise ValueError(f"{path} is empty: not even a header line")
    data = _normalise_line_ends(_as_utf8(raw, path, encoding), b'"')
    utf8 = codecs.lookup(encoding).name == "utf-8"
    quick = _read_whole(data, sep, text_columns, na_values)
    if quick is not None:
        return quick
    arr = np.frombuffer(data, dtype=np.uint8)
    starts, ends = _line_table(arr)
    undecodable = _undecodable_lines(data, arr, starts, ends) if utf8 else {}
    blank_bytes = b" \r" + (b"" if sep == "\t" else b"\t")
    n_data_lines = int(sum(1 for i in range(1, len(starts)) if data[starts[i]:ends[i]].strip(blank_bytes)))\
        if undecodable else 0
    if 0 in undecodable or (undecodable and len(undecodable) >= n_data_lines):
        first = min(undecodable)
        raise ValueError(f"{path} is not valid utf-8 text ({undecodable[first].split(';')[0]}): pass the file's"
                         f" encoding with --encoding, e.g. --encoding {suggested_encoding(raw)}")
    header = next(csv.reader([data[starts[0]:ends[0]].decode("utf-8").rstrip("\r")], delimiter=sep))
    found = {i: (UNDECODABLE, reason) for i, reason in undecodable.items()}
    keep = np.zeros(len(starts), dtype=bool)
    keep[0] = True
    if data.find(b'"', int(ends[0])) < 0:
        first_lines, malformed = _unquoted_records(arr, starts, ends, sep.encode(), len(header), blank_bytes,
                                                   set(undecodable))
        keep[first_lines] = True
    else:
        spans, malformed = _quoted_records(data, len(starts), sep, len(header), blank_bytes.decode(),
                                           set(undecodable))
        first_lines = np.array([span[0] for span in spans], dtype=np.int64)
        for span in spans:
            keep[span] = True
    found.update(malformed)
    if keep.all():
        text = data
    else:  # the header and the good records' lines, byte for byte
        sizes = np.append(starts[1:], len(arr)) - starts
        text = arr[np.repeat(keep, sizes)].tobytes()
    frame = _pandas(text, sep, text_columns, na_values)
    if len(frame) != len(first_lines):  # the check above and pandas must see the same records
        raise RuntimeError(f"{path}: {len(first_lines)} records found but pandas read {len(frame)}; please"
                           " report this file's layout")
    return TextTable(frame, np.asarray(first_lines, dtype=np.int64) + 1, _reject_table(found))
