"""Parsing in batches gives what parsing the whole input gives: the same nodes, the same
rejects with the same reasons and row numbers (labelling/record_batches.py)."""

import re
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from labelling.record_batches import parse_record_batches, parsed_whole
from labelling.records import PYTHON_WHITESPACE, NoValidRecords, _as_text, parse_records


def _by_row(parsed) -> tuple[list, pd.DataFrame]:
    """Nodes as (row, key, features, label, ...) sorted by row, and the rejects."""
    nodes = parsed.nodes.to_pylist()
    return sorted(zip(parsed.rows.tolist(), map(repr, nodes))), parsed.rejects.reset_index(drop=True)


def _same(source, batch_rows, **options):
    whole = parse_records(source, **options)
    batched = parse_record_batches(source, batch_rows=batch_rows, **options)
    assert batched.n_records == whole.n_valid + len(whole.rejects)
    parts = parsed_whole(batched)
    nodes, rejects = _by_row(parts)
    expected_nodes, expected_rejects = _by_row(whole)
    assert nodes == expected_nodes
    pd.testing.assert_frame_equal(rejects, expected_rejects, check_dtype=False)
    return whole


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["x1", "x2", "x3"])
    frame.insert(0, "id", [f"k{i}" for i in range(n)])
    frame["label"] = np.where(rng.random(n) < 0.3, rng.choice(["a", "b"], n), None)
    return frame


def test_duplicates_across_batches_are_judged_as_in_the_whole_file(tmp_path):
    frame = _frame(40)
    frame["x1"] = frame["x1"].astype(str)  # numbers as text in Parquet, so one can be "oops"
    frame.loc[35] = frame.loc[2]  # an identical copy in another batch: the first is stored
    frame.loc[30, ["id", "x1"]] = ["k5", "9.0"]  # a conflicting copy of k5 in another batch: both rejected
    frame.loc[12, ["id", "x1"]] = ["k7", "oops"]  # a broken copy of k7: rejected for itself, k7 is stored
    frame.loc[20, "id"] = ""  # a missing key
    path = tmp_path / "records.parquet"
    frame.to_parquet(path, index=False)
    whole = _same(path, 7, key="id", features="x*", label="label")
    reasons = dict(zip(whole.rejects["row"], whole.rejects["kind"]))
    assert reasons == {3 + 33: "duplicate key", 6: "duplicate key", 31: "duplicate key", 13: "non-numeric feature",
                       21: "missing key"}
    for batch_rows in (1, 3, 40, 1000):
        _same(frame, batch_rows, key="id", features="x*", label="label")


def test_a_csv_with_malformed_lines_and_classes(tmp_path):
    lines = ["id,x1,x2,label"] + [f"r{i},{i},{i * 2},{'ab'[i % 2]}" for i in range(30)]
    lines[5] = "r4,1,2,a,extra"  # malformed: more fields than the header
    lines[9] = "r1,1,2,a"  # a conflicting copy of r1
    lines[17] = "r16,1,2,c"  # outside the classes
    path = tmp_path / "records.csv"
    path.write_text("\n".join(lines) + "\n")
    whole = _same(path, 4, key="id", features="x1,x2", label="label", classes=["a", "b"])
    assert set(whole.rejects["row"]) == {6, 10, 3, 18}


def test_a_feature_list_column_takes_the_whole_inputs_common_length(tmp_path):
    # the first batch is mostly of length 3, the whole input of length 2
    lists = [[1.0, 2.0, 3.0]] * 4 + [[1.0, 2.0]] * 10 + [[1.0], None]
    frame = pd.DataFrame({"id": [f"k{i}" for i in range(len(lists))], "f": lists})
    whole = _same(frame, 4, key="id", features="f")
    assert whole.n_valid == 10


def test_categories_confidence_and_text_free_options(tmp_path):
    frame = _frame(25)
    frame["color"] = np.where(np.arange(25) % 5 == 0, None, np.where(np.arange(25) % 2, "red", "blue"))
    frame["trust"] = np.where(frame["label"].notna(), 0.5, np.nan)
    frame.loc[3, "trust"] = 0.7  # a confidence without a label
    path = tmp_path / "records.parquet"
    frame.to_parquet(path)  # with pandas' index stored: it is not a column of the records
    _same(path, 6, key="id", features="*", label="label", categorical="color", label_confidence="trust")


def test_an_input_without_a_valid_record_gives_batches_without_nodes(tmp_path):
    frame = pd.DataFrame({"id": ["", "", "b"], "x": [1.0, 2.0, np.nan]})
    with pytest.raises(NoValidRecords):
        parse_records(frame, key="id", features="x")
    parsed = parsed_whole(parse_record_batches(frame, key="id", features="x", batch_rows=2))
    assert parsed.n_valid == 0
    assert len(parsed.rejects) == 3


def test_problems_of_the_call_raise_before_any_batch(tmp_path):
    with pytest.raises(ValueError, match="no column 'nope'"):
        parse_record_batches(_frame(3), key="nope", features="x*")
    with pytest.raises(ValueError, match="batch_rows"):
        parse_record_batches(_frame(3), key="id", features="x*", batch_rows=0)


def test_python_whitespace_is_what_str_strip_removes():
    assert PYTHON_WHITESPACE == "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())


def _reference_text(value):
    """key_text's rule for text, as the general path writes it (Python's re and strip)."""
    if value is None:
        return None
    text = re.sub(r"^(-?\d+)\.0*$", r"\1", value.strip())
    return text or None


@pytest.mark.parametrize("values", [
    ["7.0", " 7. ", "-3.00", "+7", "1e3", "9.50", "007", "", "  ", None, "a b", "\u0667.0", "\u3000x\u3000",
     "7.0\n", "\x1c7\x1f", "٣.00", "1.0.0", "-.0", "x\u200b"],
])
def test_the_arrow_path_of_key_text_matches_the_rule(values):
    got = _as_text(pd.Series(values, dtype=object)).tolist()
    assert got == [_reference_text(v) for v in values]
    assert pa.array(got, pa.string()).null_count == sum(v is None for v in got)
