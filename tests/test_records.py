"""Bad input gets a clear error and loses nothing: every rejected row has its reason."""

import numpy as np
import pandas as pd
import pytest

from graphlabel.records import NoValidRecords, parse_records


def test_valid_and_rejected_rows_add_up_with_reasons(tmp_path):
    csv = tmp_path / "records.csv"
    csv.write_text(
        "id,f1,f2,label\n"
        "a,1.0,2.0,cat\n"
        ",1.0,2.0,dog\n"          # missing key
        "c,x,2.0,dog\n"           # non-numeric
        "d,1.0,,dog\n"            # NaN feature
        "a,3.0,4.0,cat\n"         # duplicate key
        "f,inf,1.0,\n"            # infinite
        "007,5.0,6.0,\n"          # key stays '007', no label
    )
    parsed = parse_records(csv, key="id", features="f1,f2", label="label")
    assert parsed.nodes.column("key").to_pylist() == ["a", "007"]
    assert parsed.nodes.column("label").to_pylist() == ["cat", None]
    assert parsed.nodes.column("features").to_pylist() == [[1.0, 2.0], [5.0, 6.0]]
    reasons = dict(zip(parsed.rejects["row"], parsed.rejects["reason"]))
    assert set(reasons) == {1, 2, 3, 4, 5}
    assert "missing key" in reasons[1]
    assert "non-numeric feature f1='x'" in reasons[2]
    assert "missing (NaN) feature f2" in reasons[3]
    assert "duplicate key 'a'" in reasons[4]
    assert "infinite feature f1" in reasons[5]
    assert parsed.n_valid + len(parsed.rejects) == 7


def test_list_feature_column_with_wrong_lengths(tmp_path):
    frame = pd.DataFrame({"k": ["a", "b", "c", "d"],
                          "vec": [[1.0, 2.0, 3.0], [1.0, 2.0], [4.0, 5.0, 6.0], [1.0, None, 2.0]]})
    path = tmp_path / "r.parquet"
    frame.to_parquet(path)
    parsed = parse_records(path, key="k", features="vec")
    assert parsed.nodes.column("key").to_pylist() == ["a", "c"]
    reasons = dict(zip(parsed.rejects["row"], parsed.rejects["reason"]))
    assert "wrong feature length: got 2, expected 3" in reasons[1]
    assert "NaN" in reasons[3]


def test_expected_dimension_is_enforced():
    frame = pd.DataFrame({"k": ["a"], "x": [1.0], "y": [2.0]})
    with pytest.raises(NoValidRecords) as caught:
        parse_records(frame, key="k", features="x,y", expected_dim=3)
    assert "wrong feature length: got 2, expected 3" in caught.value.rejects["reason"][0]


def test_nothing_valid_raises_with_every_reject_attached():
    frame = pd.DataFrame({"k": [None, None], "x": ["a", 1.0]})
    with pytest.raises(NoValidRecords, match="none of the 2 records") as caught:
        parse_records(frame, key="k", features="x")
    assert len(caught.value.rejects) == 2


def test_glob_feature_columns_and_integral_float_labels():
    frame = pd.DataFrame({"k": [1, 2], "px_0": [0.0, 1.0], "px_1": [1.0, 0.0], "lab": [3.0, np.nan]})
    parsed = parse_records(frame, key="k", features="px_*", label="lab")
    assert parsed.nodes.column("key").to_pylist() == ["1", "2"]
    assert parsed.nodes.column("label").to_pylist() == ["3", None]


def test_unknown_columns_are_named_in_the_error():
    frame = pd.DataFrame({"k": [1], "x": [1.0]})
    with pytest.raises(ValueError, match="no column matches feature 'z'"):
        parse_records(frame, key="k", features="z")
    with pytest.raises(ValueError, match="no column 'lbl'"):
        parse_records(frame, key="k", features="x", label="lbl")
