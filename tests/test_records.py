"""Bad input gets a clear error and loses nothing: every rejected row has its reason."""

import numpy as np
import pandas as pd
import pytest

from labelling.records import NoValidRecords, parse_records


def test_valid_and_rejected_rows_add_up_with_reasons(tmp_path):
    csv = tmp_path / "records.csv"
    csv.write_text(
        "id,f1,f2,label\n"
        "a,1.0,2.0,cat\n"
        ",1.0,2.0,dog\n"          # missing key
        "c,x,2.0,dog\n"           # non-numeric
        "d,1.0,,dog\n"            # NaN feature
        "a,1.0,2.0,cat\n"         # duplicate key, same values: the first row is stored
        "f,inf,1.0,\n"            # infinite
        "007,5.0,6.0,\n"          # key stays '007', no label
    )
    parsed = parse_records(csv, key="id", features="f1,f2", label="label")
    assert parsed.nodes.column("key").to_pylist() == ["a", "007"]
    assert parsed.nodes.column("label").to_pylist() == ["cat", None]
    assert parsed.nodes.column("features").to_pylist() == [[1.0, 2.0], [5.0, 6.0]]
    assert parsed.rows.tolist() == [2, 8]  # CSV rows are file line numbers, the header is line 1
    reasons = dict(zip(parsed.rejects["row"], parsed.rejects["reason"]))
    assert set(reasons) == {3, 4, 5, 6, 7}
    assert "missing key" in reasons[3]
    assert "non-numeric feature f1='x'" in reasons[4]
    assert "missing (NaN) feature f2" in reasons[5]
    assert reasons[6] == "duplicate key 'a': same values as row 2, which is stored"
    assert "infinite feature f1" in reasons[7]
    assert parsed.n_valid + len(parsed.rejects) == 7
    assert parsed.reject_counts == {"missing key": 1, "non-numeric feature": 1, "missing feature": 1,
                                    "infinite feature": 1, "duplicate key": 1}


def test_conflicting_duplicates_are_all_rejected_and_broken_copies_do_not_count():
    frame = pd.DataFrame({
        "k": ["a", "b", "a", "c", "c", "b", "d", "d"],
        "x": [1.0, 2.0, 1.0, 3.0, 3.0, 2.0, np.nan, 4.0],
        "lab": ["p", "q", "p", "p", "q", "q", "p", "p"],
    })
    parsed = parse_records(frame, key="k", features="x", label="lab")
    # a: same twice → first kept; b: same → first kept; c: labels differ → both out;
    # d: row 6 is broken on its own, so row 7 is the only valid copy and is stored
    assert parsed.nodes.column("key").to_pylist() == ["a", "b", "d"]
    assert parsed.rows.tolist() == [0, 1, 7]
    reasons = dict(zip(parsed.rejects["row"], parsed.rejects["reason"]))
    assert set(reasons) == {2, 3, 4, 5, 6}
    assert reasons[3] == reasons[4] == "duplicate key 'c' with conflicting values in rows 3, 4: none of them is stored"
    assert reasons[5] == "duplicate key 'b': same values as row 1, which is stored"
    assert reasons[6] == "missing (NaN) feature x"
    assert parsed.reject_counts == {"missing feature": 1, "duplicate key": 4}


def test_labels_outside_the_classes_are_rejected_and_unlabeled_rows_pass():
    frame = pd.DataFrame({"k": ["a", "b", "c", "d", "e"], "x": [1.0, 2.0, 3.0, 4.0, np.inf],
                          "lab": ["cat", "Cat", None, 3.0, "bird"]})
    parsed = parse_records(frame, key="k", features="x", label="lab", classes=["cat", "dog", 3])
    assert parsed.nodes.column("key").to_pylist() == ["a", "c", "d"]
    assert parsed.nodes.column("label").to_pylist() == ["cat", None, "3"]  # 3.0 and class 3 are "3"
    reasons = dict(zip(parsed.rejects["row"], parsed.rejects["reason"]))
    assert reasons[1] == "label 'Cat' not in classes ['cat', 'dog', '3']"  # case matters
    assert reasons[4] == "infinite feature x; label 'bird' not in classes ['cat', 'dog', '3']"
    assert parsed.rejects["kind"].tolist() == ["label not in classes", "infinite feature; label not in classes"]
    assert parsed.reject_counts == {"infinite feature": 1, "label not in classes": 2}
    many = [f"c{i}" for i in range(20)]
    parsed = parse_records(frame, key="k", features="x", label="lab", classes=many)
    assert parsed.rejects["reason"][0].endswith("'c7', ...] (20 in all)")


@pytest.mark.parametrize("classes, error", [
    ("cat,dog", TypeError), (5, TypeError), ([], ValueError), (["cat", ""], ValueError),
    (["cat", None], ValueError), (["cat", np.nan], ValueError),
])
def test_bad_classes_are_refused_before_reading(classes, error, tmp_path):
    with pytest.raises(error, match="classes"):
        parse_records(tmp_path / "not-read.csv", key="k", features="x", classes=classes)


def test_na_words_are_text_in_key_and_label_columns_of_a_csv(tmp_path):
    csv = tmp_path / "r.csv"
    csv.write_text("id,x,label\nNA,1.0,None\nnull,NA,a\n ,2.0,b\nok,,n/a\nfine,3.0,\n")
    parsed = parse_records(csv, key="id", features="x", label="label")
    assert parsed.nodes.column("key").to_pylist() == ["NA", "fine"]
    assert parsed.nodes.column("label").to_pylist() == ["None", None]
    reasons = dict(zip(parsed.rejects["row"], parsed.rejects["reason"]))
    assert reasons == {3: "missing (NaN) feature x", 4: "missing key", 5: "missing (NaN) feature x"}


def test_blank_and_list_feature_values_are_named():
    frame = pd.DataFrame({"k": ["a", "b", "c"], "x": [" ", [1, 2], "2.5"], "y": [1, 2, "1e3"]})
    parsed = parse_records(frame, key="k", features="x,y")
    assert parsed.nodes.column("features").to_pylist() == [[2.5, 1000.0]]
    reasons = dict(zip(parsed.rejects["row"], parsed.rejects["reason"]))
    assert reasons == {0: "missing (NaN) feature x", 1: "non-numeric feature x=[1, 2]"}


def test_list_feature_column_with_wrong_lengths(tmp_path):
    frame = pd.DataFrame({"k": ["a", "b", "c", "d"],
                          "vec": [[1.0, 2.0, 3.0], [1.0, 2.0], [4.0, 5.0, 6.0], [1.0, None, 2.0]]})
    path = tmp_path / "r.parquet"
    frame.to_parquet(path)
    parsed = parse_records(path, key="k", features="vec")
    assert parsed.nodes.column("key").to_pylist() == ["a", "c"]
    reasons = dict(zip(parsed.rejects["row"], parsed.rejects["reason"]))
    assert "wrong feature length: got 2, expected 3" in reasons[2]  # Parquet rows count from 1
    assert reasons[4] == "missing (NaN) value at position 1 of feature list vec"
    parsed = parse_records(frame, key="k", features="vec", expected_dim=2)
    assert parsed.nodes.column("key").to_pylist() == ["b"]
    assert parsed.rejects["reason"][0] == "wrong feature length: got 3, expected 2"
    frame = pd.DataFrame({"k": ["a", "b", "c"], "vec": [[1.0, "x"], [1.0, np.inf], None]})
    with pytest.raises(NoValidRecords) as caught:
        parse_records(frame, key="k", features="vec")
    assert caught.value.rejects["reason"].tolist() == [
        "non-numeric value 'x' at position 1 of feature list vec",
        "infinite value at position 1 of feature list vec",
        "wrong feature length: got none, expected 2",
    ]


def test_a_csv_column_of_list_text_is_a_feature_list(tmp_path):
    """A list column written to CSV by pandas ("[0.5, -1.0, 2.0]") or an array printed by
    numpy ("[0.5 -1.  2. ]") is read as a feature list; its bad rows are named as a Parquet
    list column's are. (It was "non-numeric feature" on every row, with the advice to move
    the column to --categorical.)"""
    frame = pd.DataFrame({"k": list("abcdefghi"), "vec": [
        [0.5, -1.0, 2.0], "[0.5 -1.  2. ]", " [1e3,2,3] ", "[1, 2]", "[1, x, 3]", "[nan, 1, 2]", "[]", "", "7"]})
    path = tmp_path / "lists.csv"
    frame.to_csv(path, index=False)
    parsed = parse_records(path, key="k", features="vec")
    assert parsed.nodes.column("key").to_pylist() == ["a", "b", "c"]
    assert parsed.nodes.column("features").to_pylist() == [[0.5, -1.0, 2.0], [0.5, -1.0, 2.0], [1000.0, 2.0, 3.0]]
    reasons = dict(zip(parsed.rejects["row"], parsed.rejects["reason"]))
    assert reasons == {5: "wrong feature length: got 2, expected 3",  # CSV rows count from 2 (the header is 1)
                       6: "non-numeric value 'x' at position 1 of feature list vec",
                       7: "missing (NaN) value at position 0 of feature list vec",
                       8: "wrong feature length: got 0, expected 3",
                       9: "wrong feature length: got none, expected 3",
                       10: "wrong feature length: got none, expected 3"}
    numbers = pd.DataFrame({"k": ["a", "b"], "x": ["1", "[2]"]})  # one list cell is enough, as in Parquet
    assert parse_records(numbers, key="k", features="x").nodes.column("features").to_pylist() == [[2.0]]


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
    with pytest.raises(ValueError, match=r"^no column matches feature 'z'; columns are \['k', 'x'\]$"):
        parse_records(frame, key="k", features="z")
    # said where the pattern would have taken the key or the label (`predict` of a renamed
    # column said it of a plain name)
    with pytest.raises(ValueError, match=r"^no column matches feature 'k\*' \(the key and label columns never do\)"):
        parse_records(frame, key="k", features="k*")
    with pytest.raises(ValueError, match="no column 'lbl'"):
        parse_records(frame, key="k", features="x", label="lbl")


def test_a_csv_separated_by_semicolons_is_named_as_such(tmp_path):
    """A spreadsheet's CSV where the decimal mark is a comma: the header is one column."""
    path = tmp_path / "semi.csv"
    path.write_text("id;x;y;label\na;1,5;2,0;p\nb;2,5;3,0;\n")
    with pytest.raises(ValueError) as refused:
        parse_records(path, key="id", features="x,y", label="label")
    assert str(refused.value) == (  # the cause first (it was the end of "no column 'id'; columns are [...]")
        "the file looks separated by ';' (its header: 'id;x;y;label'): a .csv file is read with ',' between values"
        " and '.' as the decimal mark, a .tsv file with tabs; save it with commas, or as .tsv")
    # one column, no separator in it: no separator hint, but the key that needs no column
    with pytest.raises(ValueError, match=r"columns are \['id'\]; for records without a key of their own the key '#'"
                                         r" numbers them by their line in the file$"):
        parse_records(pd.DataFrame({"id": ["a"]}), key="key", features="id")
    with pytest.raises(ValueError, match=r"no column 'lab'; columns are \['id'\]$"):  # not the key: no hint
        parse_records(pd.DataFrame({"id": ["a"]}), key="id", features="id", label="lab")


def test_a_column_of_text_in_every_record_is_named_once_and_others_are_not():
    frame = pd.DataFrame({"k": ["a", "b", "c"], "x": [1.0, 2.0, np.nan], "colour": ["red", "blue", "red"],
                          "size": ["S", "3", "L"]})
    with pytest.raises(NoValidRecords) as raised:
        parse_records(frame, key="k", features="x,colour,size")
    message = str(raised.value)
    # 'size' holds a number in one record: not named; 'x' is missing once: a reason, not a hint
    assert "; 'colour' holds text in every record: categorical columns go in --categorical (a text to embed" \
           " in --text), not in --features; first reasons: non-numeric feature colour='red'; non-numeric" \
           " feature size='S'; non-numeric feature colour='blue'" in message
    assert "size holds" not in message


def test_a_label_column_taken_as_a_feature_is_named():
    """--features '*' without --label takes a column of few labels: no number in any record,
    text in some (a newcomer's predict on the ingested file had no word of the label)."""
    frame = pd.DataFrame({"k": ["a", "b", "c"], "x": [1.0, 2.0, 3.0], "cls": ["p", None, None]})
    with pytest.raises(NoValidRecords) as raised:
        parse_records(frame, key="k", features="*")
    assert ("(non-numeric feature: 1, missing feature: 2); 'cls' holds no number in any record, text in some: a"
            " label column goes in --label, categorical columns in --categorical, not in --features; first"
            " reasons: ") in str(raised.value)
    frame["x"] = [1.0, np.nan, "?"]  # every record rejected, but x has a number: not named
    with pytest.raises(NoValidRecords) as raised:
        parse_records(frame, key="k", features="*")
    assert "x holds" not in str(raised.value)
