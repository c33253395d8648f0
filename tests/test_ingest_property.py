"""Property-based test of whole ingests (issue 14): a dataset receives a sequence of CSV and
Parquet batches whose feature count changes from one ingest to the next, with malformed
CSV lines (an extra field, a quote never closed, a byte that is not UTF-8), blank lines,
broken cells and repeated keys. Each batch goes through the ingest flow into a real Kùzu
store, and for every batch

    stored + rejected = input rows

where a CSV file's input rows are its records plus its malformed lines (blank lines hold
nothing), and each rejected row is in the rejects file with its line or row number. Across
batches the store keeps one feature length (the first stored), and holds exactly the
last valid values of each key. A batch whose feature columns are not the ones the dataset
was first stored with (a CSV's ``x0..x2`` after ``x0, x1``, or after a Parquet file's list
column ``vec``) is refused whole with its reason and stores nothing
(``labelling.feature_columns``); a list column of another length is judged row by row.

The oracle here is written one row at a time in plain Python, from the rules of
``labelling.records`` and ``labelling.textfiles``.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labelling.feature_columns import FeatureColumnsDiffer
from labelling.records import NoValidRecords

pytestmark = pytest.mark.usefixtures("prefect_harness")

KEYS = ["a", "b", "c", " d ", "7", "7.0", "", "e"]  # " d " is "d", "7.0" is "7", "" is no key
LABELS = ["p", "q", ""]
MALFORMED = ("extra field", "open quote", "latin-1")


def key_text(raw: str) -> str | None:
    text = raw.strip()
    if text.endswith(".0") and text[:-2].isdigit():
        text = text[:-2]
    return text or None


@st.composite
def batch(draw):
    """One ingest: its format, feature count, rows, and (CSV) the lines slipped in."""
    kind = draw(st.sampled_from(["csv", "parquet"]))
    dim = draw(st.sampled_from([2, 3]))
    n = draw(st.integers(0, 8))
    rows = []
    for _ in range(n):
        key = draw(st.sampled_from(KEYS))
        length = dim if kind == "csv" or draw(st.integers(0, 9)) else dim + 1  # a ragged list now and then
        values = [float(draw(st.integers(-3, 3))) for _ in range(length)]
        broken = draw(st.integers(0, 9)) == 0  # "abc" in a CSV cell, NaN in a Parquet list
        rows.append((key, values, broken, draw(st.sampled_from(LABELS))))
    extra = draw(st.lists(st.sampled_from(MALFORMED + ("blank",)), max_size=3)) if kind == "csv" else []
    positions = [draw(st.integers(0, n)) for _ in extra]
    return kind, dim, rows, list(zip(positions, extra)), draw(st.booleans())


def write(folder: Path, index: int, kind: str, dim: int, rows, extra, crlf: bool) -> tuple[Path, str, list]:
    """The batch as a file; returns the path, the --features argument, and per input row
    ("row", row) or ("malformed", line number) in file order (blank lines left out)."""
    if kind == "parquet":
        frame = pd.DataFrame({"k": [r[0] for r in rows],
                              "vec": [[math.nan if broken and j == 0 else v for j, v in enumerate(values)]
                                      for _, values, broken, _ in rows],
                              "lab": [r[3] or None for r in rows]})
        path = folder / f"batch{index}.parquet"
        frame.to_parquet(path)
        return path, "vec", [("row", r) for r in rows]
    header = ",".join(["k", *[f"x{j}" for j in range(dim)], "lab"]).encode()
    lines, order = [header], []
    slipped = sorted(extra, key=lambda item: item[0])
    for i in range(len(rows) + 1):
        while slipped and slipped[0][0] == i:
            what = slipped.pop(0)[1]
            if what == "blank":
                lines.append(b"  ")
                continue
            body = {"extra field": b"zz," + b"1," * (dim + 1) + b"p",
                    "open quote": b'zz,"1' + b",1" * (dim - 1) + b",p",
                    "latin-1": b"z\xe9" + b",1" * dim + b",p"}[what]
            lines.append(body)
            order.append(("malformed", len(lines)))
        if i < len(rows):
            key, values, broken, label = rows[i]
            cells = ["abc" if broken and j == 0 else repr(v) for j, v in enumerate(values)]
            lines.append(",".join([key, *cells, label]).encode())
            order.append(("row", rows[i]))
    path = folder / f"batch{index}.csv"
    path.write_bytes((b"\r\n" if crlf else b"\n").join(lines) + b"\n")
    return path, ",".join(f"x{j}" for j in range(dim)), order


def outcome(rows, dim: int | None):
    """Per well-formed row: None if stored, else True (rejected); and the stored values."""
    decided, values = [], []
    for key, features, broken, label in rows:
        k = key_text(key)
        bad = k is None or broken or (dim is not None and len(features) != dim)
        decided.append(bad)
        values.append((k, [float(v) for v in features], label or None))
    if dim is None:  # a Parquet list column sets its own length: the most common one (smallest on a tie)
        lengths = pd.Series([len(f) for _, f, _, _ in rows]).value_counts()
        common = min(lengths.index, key=lambda d: (-lengths[d], d)) if len(lengths) else None
        decided = [bad or len(f) != common for bad, (_, f, _, _) in zip(decided, rows)]
    copies: dict[str, list[int]] = {}
    for i, bad in enumerate(decided):
        if not bad:
            copies.setdefault(values[i][0], []).append(i)
    for positions in copies.values():
        same = all(values[p][1:] == values[positions[0]][1:] for p in positions[1:])
        for p in positions[1:] if same else positions:
            decided[p] = True
    return decided, values


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(batch(), min_size=2, max_size=4))
def test_mixed_batches_lose_no_row_and_keep_one_feature_length(batches):
    from flows.labelling import ingest_flow
    from graphstore import open_store

    with tempfile.TemporaryDirectory() as tmp:
        folder, store = Path(tmp), str(Path(tmp) / "store")
        held: dict[str, tuple] = {}
        dim, columns = None, None  # the dataset's feature length and columns, once something is stored
        for index, (kind, batch_dim, rows, extra, crlf) in enumerate(batches):
            path, features, order = write(folder, index, kind, batch_dim, rows, extra, crlf)
            rejects_path = folder / f"rejects{index}.csv"
            well_formed = [item for what, item in order if what == "row"]
            malformed = [item for what, item in order if what == "malformed"]
            # the dataset's length once something is stored; before, a CSV batch has its columns
            decided, values = outcome(well_formed, dim if dim is not None else (batch_dim if kind == "csv" else None))
            n_input = len(order)
            n_stored = decided.count(False)
            undecodable_only = kind == "csv" and well_formed == [] and malformed and all(
                b"\xe9" in path.read_bytes().splitlines()[line - 1] for line in malformed)
            refused = columns is not None and features != columns and not undecodable_only
            try:
                summary = ingest_flow(str(path), "mixed", "k", features, "lab", store_uri=store,
                                      rejects_path=str(rejects_path))
            except FeatureColumnsDiffer as error:
                assert refused, (kind, features, columns, error)
                assert "the feature columns are not the ones dataset 'mixed' was ingested with" in str(error)
                continue
            except NoValidRecords as error:
                assert not refused, (kind, features, columns)
                assert n_stored == 0, (kind, order)
                assert len(error.rejects) == n_input  # every input row, each with its reason
                assert error.rejects["reason"].map(bool).all()
                continue
            except ValueError as error:
                assert undecodable_only, (kind, order, error)
                assert "--encoding" in str(error), (kind, order, error)
                continue
            assert not refused, (kind, features, columns)
            assert summary["stored"] + summary["rejected"] == n_input
            assert summary["stored"] == n_stored, (kind, batch_dim, dim, order)
            if summary["rejected"]:
                rejected = pd.read_csv(rejects_path, keep_default_na=False)
                assert len(rejected) == summary["rejected"]
                assert rejected["reason"].map(bool).all()
                if kind == "csv":
                    assert set(malformed) <= set(rejected["row"])  # malformed lines by their line number
            for bad, value in zip(decided, values):
                if not bad:
                    held[value[0]] = (value[1], value[2])
            if dim is None and n_stored:
                dim = batch_dim if kind == "csv" else len(next(v for b, v in zip(decided, values) if not b)[1])
                columns = features
        with open_store(store, create=True) as graph_store:
            graph = graph_store.read_subgraph("mixed")
            assert graph_store.feature_lengths("mixed") == ({dim: len(held)} if held else {})
        stored = {k: (list(map(float, graph.features[i])), graph.labels[i]) for i, k in enumerate(graph.keys)}
        assert stored == held
