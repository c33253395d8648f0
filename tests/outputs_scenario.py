"""Issue 17's outputs as a user meets them, on scikit-learn's wine data: per-class scores,
export, the review loop and drop-dataset, through the `graphlabel` command. One scenario,
run on the embedded store (tests/test_outputs.py, in-process) and on a live Neo4j + GDS
(tests/test_neo4j_live_outputs.py, a process per command)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from graphstore.queries import load_query


@dataclass
class Ran:
    exit_code: int
    output: str


#: `invoke(*args, ok=True)`: runs `graphlabel ARGS` (with the store), asserts exit 0 (ok) or
#: exit 1 with one error line (not ok), returns what it printed.
Invoke = Callable[..., Ran]


def wine_csv(path, flipped: int = 6, seed: int = 0) -> tuple[str, pd.DataFrame]:
    """Wine (178 entities, 13 features, 3 classes) as records, z-scored so no column
    dominates the distances; a third of the labels kept, ``flipped`` of those wrong on
    purpose. Returns the file and the truth (key, true label, given label)."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    rng = np.random.default_rng(seed)
    keys = [f"w{i:03d}" for i in range(len(y))]
    names = np.array([f"class_{v}" for v in y], dtype=object)
    given = names.copy()
    kept = np.sort(rng.choice(len(y), size=60, replace=False))
    given[np.setdiff1d(np.arange(len(y)), kept)] = None
    flip = kept[:flipped]
    given[flip] = [f"class_{(y[i] + 1) % 3}" for i in flip]
    frame = pd.DataFrame(X, columns=[f"f{i:02d}" for i in range(X.shape[1])])
    frame.insert(0, "id", keys)
    frame["label"] = given
    frame.to_csv(path, index=False)
    return str(path), pd.DataFrame({"key": keys, "true": names, "given": given})


def run_id_of(output: str) -> str:
    return re.search(r", run ([0-9a-f-]{36})", " ".join(output.split())).group(1)


def score_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.startswith("score_")]


def check_scores(frame: pd.DataFrame, classes: list[str]) -> None:
    """The export's scores: a column per class, rows summing to 1, the runner-up the best
    other class, the margin the difference of the two scores."""
    assert score_columns(frame) == [f"score_{c}" for c in classes]
    predicted = frame["predicted_label"].notna()
    assert predicted.all()
    scores = frame[score_columns(frame)].to_numpy()
    np.testing.assert_allclose(scores.sum(axis=1), 1.0, atol=1e-9)
    assert (scores >= 0).all()
    position = {c: i for i, c in enumerate(classes)}
    own = frame["predicted_label"].map(position).to_numpy()
    runner = frame["label_runner_up"].map(position).to_numpy()
    assert (own != runner).all()
    rows = np.arange(len(frame))
    np.testing.assert_allclose(frame["label_margin"], scores[rows, own] - scores[rows, runner], atol=1e-9)
    others = np.where(np.eye(len(classes), dtype=bool)[own], -np.inf, scores)
    np.testing.assert_allclose(scores[rows, runner], others.max(axis=1))
    # harmonic's scores are written on the class-mass scale its confidences read (labelling/
    # scores.py); where a step after the scores chose the label (a flagged given label's
    # leave-one-out class, the centred arg-max of three densely labelled classes), the margin
    # is negative. Such nodes were 4 of 178 in the full run and 3 of an incremental run's 47;
    # scores written as F alone moved 7 of those 47
    moved = scores.argmax(axis=1) != own
    np.testing.assert_array_equal(frame["label_margin"].to_numpy() < 0, moved)
    assert moved.mean() <= 0.1
    # sharpened by the confidence temperature too: a node's score of its label is its
    # confidence, but a flagged given label's (its confidence is its leave-one-out's)
    kept = ~frame["label_noise"].fillna(False).astype(bool).to_numpy()
    np.testing.assert_allclose(scores[rows, own][kept], frame["label_confidence"].to_numpy()[kept], atol=1e-9)


def run_scenario(invoke: Invoke, query: Callable[[str, dict], pd.DataFrame], tmp_path, dataset: str,
                 other: str, other_csv: str) -> None:
    """The whole scenario (module docstring) on dataset ``dataset``, with ``other`` (the
    file ``other_csv``, the same columns) as the dataset drop-dataset must leave alone."""
    csv, truth = wine_csv(tmp_path / "wine.csv")
    classes = sorted(truth["true"].unique())
    invoke("ingest", csv, "--dataset", dataset, "--key", "id", "--label", "label", "--features", "f*")
    invoke("ingest", other_csv, "--dataset", other, "--key", "id", "--label", "label", "--features", "f*")
    invoke("build-graph", "--dataset", dataset, "--k", "8")
    first = run_id_of(invoke("label", "--dataset", dataset).output)
    invoke("label", "--dataset", other, "--full")
    other_before = query("MATCH (e:Entity) WHERE e.dataset = $dataset RETURN e.key AS key, e.predicted_label AS"
                         " predicted ORDER BY key", {"dataset": other})

    # -- export: CSV and Parquet read back, the same table
    out_csv, out_parquet = tmp_path / "out" / "wine.csv", tmp_path / "wine.parquet"
    # the format as the output's ending says (`--output wine.csv` alone once wrote Parquet into it)
    ran = invoke("export", "--dataset", dataset, "--output", str(out_csv))
    assert f"wrote 178 nodes of {dataset!r}" in ran.output
    invoke("export", "--dataset", dataset, "--format", "parquet", "--output", str(out_parquet))
    # an existing file is replaced only when asked: DATASET.parquet is often the ingested file
    written = out_csv.read_bytes()
    out_csv.write_text("the user's own file\n")
    refused = invoke("export", "--dataset", dataset, "--output", str(out_csv), ok=False)
    assert refused.exit_code == 1
    assert " ".join(refused.output.split()) == f"error: {out_csv} exists: --overwrite replaces it, or --output names" \
                                              " another file"
    assert out_csv.read_text() == "the user's own file\n"
    invoke("export", "--dataset", dataset, "--output", str(out_csv), "--overwrite")
    assert out_csv.read_bytes() == written
    assert out_csv.read_bytes()[:4] != b"PAR1"
    assert out_parquet.read_bytes()[:4] == b"PAR1"
    exported = pd.read_csv(out_csv, dtype={"given_label": object, "label_accepted": object})
    from_parquet = pd.read_parquet(out_parquet)
    assert list(exported.columns) == list(from_parquet.columns)
    assert exported["key"].tolist() == sorted(truth["key"])
    np.testing.assert_allclose(exported[score_columns(exported)], from_parquet[score_columns(exported)])
    check_scores(from_parquet, classes)
    assert (from_parquet["label_run_id"] == first).all()
    given = from_parquet["given_label"].notna()
    assert from_parquet.loc[~given, ["label_noise", "label_noise_score"]].isna().all().all()
    assert from_parquet.loc[given, "label_noise_score"].notna().all()
    accuracy = (from_parquet["predicted_label"] == truth.set_index("key").loc[from_parquet["key"], "true"].to_numpy())
    assert accuracy.mean() > 0.9
    runs = query("MATCH (r:LabelRun) WHERE r.run_id = $run RETURN r.classes AS classes", {"run": first})
    assert json.loads(runs["classes"].iloc[0]) == classes

    # -- review: the flagged given labels, most doubted first, with their neighbours
    flagged = from_parquet[from_parquet["label_noise"].fillna(False).astype(bool)]
    flagged = flagged.sort_values(["label_noise_score", "key"], ascending=[False, True])
    assert len(flagged) >= 3, flagged
    ran = invoke("review", "--dataset", dataset, "--limit", "3")
    listed = re.findall(r"^│ (w\d{3}) ", ran.output, flags=re.M)
    assert listed == flagged["key"].head(3).tolist(), ran.output
    top, second = listed[0], listed[1]
    true_top = truth.set_index("key").loc[top, "true"]
    old_top = truth.set_index("key").loc[top, "given"]

    # -- bad input: one line each, nothing written
    assert "is not one of dataset" in invoke("correct", top, "--dataset", dataset, "--label", "class_9",
                                             ok=False).output
    assert "no node with key 'w999'" in invoke("correct", "w999", "--dataset", dataset, "--label", classes[0],
                                               ok=False).output
    assert "already has the given label" in invoke("correct", top, "--dataset", dataset, "--label", old_top,
                                                   ok=False).output

    # -- decisions: a correction and an accept, written back and kept as history
    ran = invoke("correct", top, "--dataset", dataset, "--label", true_top, "--reviewer", "ann")
    assert f"corrected {top!r} (by ann): {old_top!r} → {true_top!r};" in ran.output
    ran = invoke("accept", second, "--dataset", dataset, "--reviewer", "bob")
    assert ran.output.strip().endswith("(by bob)"), ran.output
    ran = invoke("accept", second, "--dataset", dataset, "--reviewer", "bob")  # twice: one decision
    assert ran.output.strip().endswith(f"of {second!r} is already accepted: nothing recorded"), ran.output
    ran = invoke("review", "--dataset", dataset, "--limit", "50")
    listed = re.findall(r"^│ (w\d{3}) ", ran.output, flags=re.M)
    assert top not in listed, ran.output
    assert second not in listed, ran.output
    history = query(load_query("examples/label_history", "kuzu"), {"dataset": dataset, "key": top})
    assert history[["decision", "previous_label", "label", "reviewer"]].values.tolist() == [
        ["correct", old_top, true_top, "ann"]]
    accepted = query(load_query("examples/label_history", "kuzu"), {"dataset": dataset, "key": second})
    kept = truth.set_index("key").loc[second, "given"]
    assert accepted[["decision", "previous_label", "label", "reviewer"]].values.tolist() == [
        ["accept", kept, kept, "bob"]]

    # -- the next run sees the correction as a change, and uses it
    ran = invoke("label", "--dataset", dataset)
    assert "incremental run: 1 changed node (0 new) since the last run" in ran.output, ran.output
    relabelled = re.search(r"^relabelled (\d+) of ([\d,]+) nodes of ", ran.output, re.MULTILINE)
    assert relabelled, ran.output
    n_region = int(relabelled.group(1))
    second_run = run_id_of(ran.output)
    out_run = tmp_path / "run.parquet"
    invoke("export", "--dataset", dataset, "--run", second_run[-8:], "--output", str(out_run))
    of_run = pd.read_parquet(out_run)
    assert len(of_run) == n_region
    assert (of_run["label_run_id"] == second_run).all()
    row = of_run.set_index("key").loc[top]
    assert row["given_label"] == true_top
    assert row["predicted_label"] == true_top
    check_scores(of_run, classes)
    runs = query("MATCH (r:LabelRun) WHERE r.run_id = $run RETURN r.classes AS classes", {"run": second_run})
    assert json.loads(runs["classes"].iloc[0]) == classes  # the same class order as the first run
    assert "no run 'nope'" in invoke("export", "--dataset", dataset, "--run", "nope", ok=False).output
    assert "no dataset 'absent'" in invoke("export", "--dataset", "absent", ok=False).output

    # -- drop-dataset: refuses without a terminal or --yes, then removes only this dataset
    assert "add --yes" in invoke("drop-dataset", dataset, ok=False).output
    assert len(query("MATCH (e:Entity) WHERE e.dataset = $dataset RETURN e.key", {"dataset": dataset})) == 178
    ran = invoke("drop-dataset", dataset, "--yes")
    assert f"deleted dataset {dataset!r}: 178 nodes, 2 runs, 2 review decisions" in ran.output
    for cypher in ("MATCH (e:Entity) WHERE e.dataset = $dataset RETURN e.key",
                   "MATCH (r:LabelRun) WHERE r.dataset = $dataset RETURN r.run_id",
                   "MATCH (g:GraphBuild) WHERE g.dataset = $dataset RETURN g.dataset",
                   "MATCH (c:FeatureColumns) WHERE c.dataset = $dataset RETURN c.dataset",
                   "MATCH (d:LabelDecision) WHERE d.dataset = $dataset RETURN d.key",
                   "MATCH (a:Entity)-[r:SIMILAR]->(b:Entity) WHERE a.dataset = $dataset RETURN a.key"):
        assert query(cypher, {"dataset": dataset}).empty, cypher
    other_after = query("MATCH (e:Entity) WHERE e.dataset = $dataset RETURN e.key AS key, e.predicted_label AS"
                        " predicted ORDER BY key", {"dataset": other})
    pd.testing.assert_frame_equal(other_before, other_after)
    assert not query("MATCH (r:LabelRun) WHERE r.dataset = $dataset RETURN r.run_id",
                     {"dataset": other}).empty
    assert not query("MATCH (a:Entity)-[r:SIMILAR]->(b:Entity) WHERE a.dataset = $dataset RETURN count(r) AS n",
                     {"dataset": other})["n"].iloc[0] == 0
    assert f"no dataset {dataset!r}" in invoke("drop-dataset", dataset, "--yes", ok=False).output
