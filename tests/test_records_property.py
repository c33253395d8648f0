"""Property-based tests of record validation: random malformed batches lose nothing.

Each batch mixes good rows with missing, blank and repeated keys; NaN, infinite, blank,
non-numeric and list features; feature lists of the wrong length; labels in and out of
the allowed classes. An oracle written here in plain Python (one row at a time, no pandas)
says what should happen to each row, and the tests check that every input row ends up in
exactly one place, the node rows or the rejects, with the kinds of reason the oracle
expects, that the values stored equal the input, and, through a real Kùzu store, that
what the store holds afterwards is exactly the valid rows.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections import Counter, defaultdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphstore import open_store
from labelling.records import (
    DUPLICATE_KEY,
    INFINITE_FEATURE,
    MISSING_FEATURE,
    MISSING_KEY,
    NON_NUMERIC,
    REJECT_KINDS,
    UNKNOWN_CLASS,
    WRONG_LENGTH,
    NoValidRecords,
    parse_records,
    reject_counts,
)

CLASSES = ["cat", "dog"]
NOT_NUMBERS = ["abc", "1,5", "x1", "--1", "nan"]  # "nan" as text in a DataFrame is not a number

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
good_cell = st.one_of(finite, finite.map(repr))  # numbers, and numbers written as text
bad_cell = st.one_of(
    st.none(), st.just(math.nan), st.sampled_from([math.inf, -math.inf, "inf", "-inf"]),
    st.sampled_from(["", "  "]), st.sampled_from(NOT_NUMBERS),
)


def cells(with_lists: bool):
    """Mostly good cells, so that batches hold valid rows as well as broken ones; a list in
    a cell only where it cannot turn the batch into a list column (several columns, or
    inside a list)."""
    bad = st.one_of(bad_cell, st.just([1.0, 2.0])) if with_lists else bad_cell
    return st.integers(0, 9).flatmap(lambda i: good_cell if i < 8 else bad)


# a few repeated keys to make duplicates likely, blank and missing keys, and any text
key_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6)
key_repeated = st.sampled_from(["a", "b", " a ", "007", "7", "7.0", " 7. "])
key_blank = st.one_of(st.none(), st.sampled_from(["", "   "]))
key = st.integers(0, 9).flatmap(lambda i: key_repeated if i < 3 else key_text if i < 8 else key_blank)
label = st.one_of(st.none(), st.sampled_from(["cat", "dog", " cat", "bird", "Dog", ""]))


@st.composite
def column_batches(draw):
    """A DataFrame with a key, ``dim`` feature columns and a label column."""
    dim = draw(st.integers(1, 3))
    n = draw(st.integers(0, 20))
    cell = cells(with_lists=dim > 1)
    rows = [(draw(key), [draw(cell) for _ in range(dim)], draw(label)) for _ in range(n)]
    frame = pd.DataFrame({
        "k": pd.Series([r[0] for r in rows], dtype=object),
        **{f"x{j}": pd.Series([r[1][j] for r in rows], dtype=object) for j in range(dim)},
        "lab": pd.Series([r[2] for r in rows], dtype=object),
    })
    return frame, rows, [f"x{j}" for j in range(dim)]


@st.composite
def list_batches(draw):
    """A DataFrame whose features are one column of lists (ragged on purpose), or None."""
    n = draw(st.integers(0, 20))
    vector = st.one_of(st.lists(cells(with_lists=True), min_size=0, max_size=4), st.none())
    rows = [(draw(key), draw(vector), draw(label)) for _ in range(n)]
    frame = pd.DataFrame({
        "k": pd.Series([r[0] for r in rows], dtype=object),
        "vec": pd.Series([r[1] for r in rows], dtype=object),
        "lab": pd.Series([r[2] for r in rows], dtype=object),
    })
    return frame, rows, ["vec"]


# -- the oracle: what should happen to each row, one row at a time ------------------------


def text(value):
    """Keys and labels as the records module documents them: stripped text, None if blank,
    an all-zero fraction dropped ("7.0" is "7")."""
    if value is None:
        return None
    value = str(value).strip()
    integral = re.fullmatch(r"(-?\d+)\.0*", value)
    return (integral.group(1) if integral else value) or None


def cell_value(value, csv=False):
    """(kind of problem or None, float). In a CSV file "nan" is one of pandas' missing-value
    markers, which feature columns keep."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or (csv and value == "nan"):
        return MISSING_FEATURE, None
    if isinstance(value, str) and not value.strip():
        return MISSING_FEATURE, None
    if isinstance(value, list) or value in NOT_NUMBERS:
        return NON_NUMERIC, None
    number = float(value)
    if math.isinf(number):
        return INFINITE_FEATURE, None
    return None, number


def expected_outcome(rows, classes, list_column, csv=False):
    """Per row: (set of reject kinds, key, features, label); an empty set means stored."""
    # a column without a single list is an ordinary (all-missing) feature column
    list_column = list_column and any(isinstance(v, list) for _, v, _ in rows)
    if not list_column:
        rows = [(k, [None] if v is None else v, lab) for k, v, lab in rows]
    else:
        lengths = Counter(len(v) for _, v, _ in rows if v)
        expected_dim = min(lengths, key=lambda d: (-lengths[d], d)) if lengths else 1
    out = []
    for raw_key, raw_features, raw_label in rows:
        kinds, values = set(), []
        k, lab = text(raw_key), text(raw_label)
        if k is None:
            kinds.add(MISSING_KEY)
        if list_column and (raw_features is None or len(raw_features) != expected_dim):
            kinds.add(WRONG_LENGTH)
        else:
            for value in raw_features:
                problem, number = cell_value(value, csv)
                if problem:
                    kinds.add(problem)
                values.append(number)
        if classes is not None and lab is not None and lab not in classes:
            kinds.add(UNKNOWN_CLASS)
        out.append([kinds, k, values, lab])
    copies = defaultdict(list)
    for i, (kinds, k, _, _) in enumerate(out):
        if not kinds:
            copies[k].append(i)
    for positions in copies.values():
        if len(positions) < 2:
            continue
        first = out[positions[0]]
        same = all(out[p][2] == first[2] and out[p][3] == first[3] for p in positions[1:])
        for p in positions[1:] if same else positions:
            out[p][0].add(DUPLICATE_KEY)
    return out


def check_parse(frame, rows, features, classes, list_column, source=None, numbers=None):
    """Parse the batch (``source`` if given, else ``frame``) and compare every row with the
    oracle; returns the parse (None when nothing was valid), the oracle's outcome per row
    and the rejects. ``numbers[i]`` is how the parse numbers input row i (a CSV file's
    line number; by default the position, as for a DataFrame)."""
    numbers = list(range(len(rows))) if numbers is None else list(numbers)
    position = {number: i for i, number in enumerate(numbers)}
    expected = expected_outcome(rows, classes, list_column, csv=source is not None)
    stored_rows = [numbers[i] for i, (kinds, *_) in enumerate(expected) if not kinds]
    try:
        parsed = parse_records(frame if source is None else source, key="k", features=features, label="lab",
                               classes=classes)
    except NoValidRecords as error:
        assert stored_rows == []
        rejects = error.rejects
        parsed = None
        node_rows = []
    else:
        rejects = parsed.rejects
        node_rows = parsed.rows.tolist()
    # every row exactly once: a node row or a reject
    assert sorted(node_rows + rejects["row"].tolist()) == sorted(numbers)
    assert node_rows == stored_rows
    for row, kinds, reason in zip(rejects["row"], rejects["kind"], rejects["reason"]):
        assert set(kinds.split("; ")) == expected[position[row]][0], (row, rows[position[row]], reason)
        assert reason  # a reason for every reject
    counts = Counter(kind for kinds, *_ in expected for kind in kinds)
    assert reject_counts(rejects) == {kind: counts[kind] for kind in REJECT_KINDS if counts[kind]}
    if parsed is not None:
        assert parsed.reject_counts == reject_counts(rejects)
        kept = [position[number] for number in stored_rows]
        assert parsed.nodes.column("key").to_pylist() == [expected[i][1] for i in kept]
        assert parsed.nodes.column("features").to_pylist() == [expected[i][2] for i in kept]
        assert parsed.nodes.column("label").to_pylist() == [expected[i][3] for i in kept]
    return parsed, expected, rejects


def csv_line_numbers(frame) -> list[int]:
    """The file line each row of ``frame`` starts on once written by ``to_csv`` with
    "\r\n" line ends: the header is line 1, and a quoted line break in a key moves the
    rows after it down."""
    text = frame.to_csv(index=False, lineterminator="\r\n")
    rows = [frame.iloc[[i]].to_csv(index=False, header=False, lineterminator="\r\n") for i in range(len(frame))]
    assert text == frame.iloc[:0].to_csv(index=False, lineterminator="\r\n") + "".join(rows)
    starts = np.cumsum([2] + [row.count("\n") for row in rows[:-1]]) if rows else []
    return [int(n) for n in starts]


@pytest.mark.parametrize("classes", [None, CLASSES], ids=["any-label", "classes"])
@settings(max_examples=150, deadline=None)
@given(batch=column_batches())
def test_every_row_of_a_column_batch_is_stored_or_rejected(batch, classes):
    check_parse(*batch, classes=classes, list_column=False)


@settings(max_examples=150, deadline=None)
@given(batch=list_batches(), classes=st.sampled_from([None, CLASSES]))
def test_every_row_of_a_list_batch_is_stored_or_rejected(batch, classes):
    check_parse(*batch, classes=classes, list_column=True)


@settings(max_examples=100, deadline=None)
@given(batch=column_batches(), classes=st.sampled_from([None, CLASSES]))
def test_every_row_of_a_csv_file_is_stored_or_rejected(batch, classes):
    frame, rows, features = batch
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/batch.csv"
        # "\r\n" so that the writer quotes a key holding a bare "\r" (with "\n" it does not,
        # and every CSV reader then ends the line there)
        frame.to_csv(path, index=False, lineterminator="\r\n")
        check_parse(frame, rows, features, classes=classes, list_column=False, source=path,
                    numbers=csv_line_numbers(frame))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=column_batches(), classes=st.sampled_from([None, CLASSES]))
def test_a_real_store_holds_exactly_the_valid_rows(batch, classes):
    frame, rows, features = batch
    parsed, expected, rejects = check_parse(frame, rows, features, classes=classes, list_column=False)
    # a store of its own per example (a pytest fixture would be shared by all examples)
    with tempfile.TemporaryDirectory() as folder, open_store(folder, create=True) as store:
        if parsed is not None:
            assert store.write_nodes("batch", parsed.nodes) == parsed.n_valid
        graph = store.read_subgraph("batch")
        held = {k: (list(map(float, graph.features[i])), graph.labels[i]) for i, k in enumerate(graph.keys)}
        assert len(held) == graph.n_nodes  # keys unique in the store
        valid = {k: (values, lab) for kinds, k, values, lab in expected if not kinds}
        assert held == valid
        rejected = set(rejects["row"])
        for i, (kinds, k, values, lab) in enumerate(expected):
            # stored (its key holds its values) or rejected, never both, never neither
            assert (i in rejected) != (not kinds)
            if not kinds:
                assert held[k] == (values, lab)
