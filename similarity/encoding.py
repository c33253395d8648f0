"""What a similarity graph measures distances on: the numeric features scaled, the
categorical columns one-hot, fitted once when the graph is built and reused for the
entities an incremental run adds (never refitted: a new node must be measured in the
units its neighbours were).

``FeatureEncoding`` holds the fitted numbers; ``GraphSpec`` carries them (its ``scale``
field names the scaler, the fitted numbers travel with the spec to the ``GraphBuild``
record, as σ does).

Scaling (``scale``)
-------------------
- ``standard``: ``(x - mean) / std`` per column, scikit-learn's ``StandardScaler``
  (population std, ``ddof=0``; a column of zero spread keeps scale 1, as
  ``sklearn.preprocessing._data._handle_zeros_in_scale`` does).
- ``robust``: ``(x - median) / (q75 - q25)``, scikit-learn's ``RobustScaler`` with its
  defaults (``quantile_range=(25, 75)``, numpy's linear interpolation; zero IQR keeps 1).
- ``none``: the features as stored.

Why numpy and not the scikit-learn classes: the fitted numbers must be written to the
store's record as plain lists and applied again inside Neo4j's GDS projection
(``(x - center) / width`` in ``gds_project*.neo4j.cypher``), so what is fitted is those
two vectors, nothing more; a pickled scaler could not be applied by the database. The
tests check the numbers against ``StandardScaler`` / ``RobustScaler``.

Categorical columns
-------------------
The vocabulary of each categorical column is the sorted set of values seen at fit time.
For kNN (and the δ/mincut-3 graphs with ``metric="euclidean"`` or ``"cosine"``) each
column becomes its one-hot indicators beside the scaled numeric columns (scikit-learn's
``OneHotEncoder``, unscaled: a mismatch costs 2 in squared distance, as a 1-std
difference on two numeric columns). A value outside the vocabulary is refused
(``unseen``): the flows then rebuild the graph rather than measure an entity in units
the graph does not have (``flows.incremental``).

``metric="hamming"`` (δ, δ₀, δ½ and mincut-3 graphs, categorical columns only) is
Blum & Chawla (2001) §5.1's information-gain-weighted Hamming distance: the paper gives
the similarity ``w(x, y) = Π_{a: x(a) ≠ y(a)} c / (1 + exp(b · gain_a))``. What it leaves
open, and what is decided here:

- Distance, not similarity: the δ rules threshold a distance, so ``d = -ln w =
  Σ_{a: x(a) ≠ y(a)} ln((1 + exp(b · gain_a)) / c)``, a weighted Hamming distance with
  attribute weight ``ω_a = ln(1 + exp(b · gain_a)) - ln c``.
- ``b = 1``, ``c = 1`` (the paper: "the specific choice of constants b and c does not
  affect algorithm performance"; with c = 1 every mismatch costs at least ln 2 > 0, so
  the distance stays a metric). Gains in bits (ID3's log base 2).
- ``gain_a`` on the given labels only (the paper computes it "over the" labelled data),
  each distinct value of ``a`` a branch (ID3).
- The distance is computed as ``||z(x) - z(y)||²`` with ``z`` the one-hot scaled by
  ``sqrt(ω_a / 2)`` (a mismatch on ``a`` contributes exactly ``ω_a``), so the existing
  Euclidean searches build the graphs: the nearest neighbours (mincut-3) and the
  single-linkage merge order (δ₀, δ½) are those of the Euclidean distance on ``z``; a
  user's ``δ`` is compared with ``d`` itself (radius ``sqrt(δ)`` on ``z``).
- Numeric columns beside ``hamming`` are refused: the paper uses it on all-categorical
  data, and a sum of a Hamming and a Euclidean term would need a weighting it does not give.

References
----------
A. Blum and S. Chawla. Learning from labelled and unlabelled data using graph mincuts.
ICML 2001, §5.1 (the information-gain weighting).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

SCALES = ("standard", "robust", "none")
DEFAULT_SCALE = "standard"


def check_scale(scale: Any) -> str:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {list(SCALES)}, got {scale!r}")
    return str(scale)


def _widths(spread: np.ndarray) -> np.ndarray:
    """A column of zero (or non-finite) spread keeps width 1 (scikit-learn's rule)."""
    spread = np.asarray(spread, dtype=np.float64)
    return np.where(np.isfinite(spread) & (spread > 10 * np.finfo(np.float64).eps), spread, 1.0)


def information_gain(categories: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """ID3's information gain (bits) of each categorical column about the given labels,
    on the rows that have one (``labels`` None elsewhere). Blum & Chawla (2001) §5.1."""
    given = pd.Series(labels, dtype=object).notna().to_numpy()
    y = pd.factorize(pd.Series(labels, dtype=object)[given])[0]
    n_cols = categories.shape[1] if categories.ndim == 2 else 0
    if not given.any() or n_cols == 0:
        return np.zeros(n_cols)

    def entropy(counts: np.ndarray) -> np.ndarray:
        p = counts / np.maximum(counts.sum(axis=-1, keepdims=True), 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.where(p > 0, p * np.log2(p), 0.0).sum(axis=-1)

    n_classes = int(y.max()) + 1
    base = entropy(np.bincount(y, minlength=n_classes).astype(float))
    gains = np.empty(n_cols)
    for j in range(n_cols):  # a loop over columns; each is vectorised over the rows
        values = pd.factorize(pd.Series(categories[given, j], dtype=object))[0]
        table = np.zeros((values.max() + 1, n_classes))
        np.add.at(table, (values, y), 1.0)
        share = table.sum(axis=1) / len(y)
        gains[j] = base - float(share @ entropy(table))
    return np.maximum(gains, 0.0)


@dataclass(frozen=True)
class FeatureEncoding:
    """Fitted numbers: per numeric column a ``center`` and a ``width`` (``(x - center) /
    width``), per categorical column its ``vocabulary`` (sorted values seen at fit)."""

    scale: str = "none"
    center: tuple[float, ...] = ()
    width: tuple[float, ...] = ()
    vocabulary: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        check_scale(self.scale)
        if len(self.center) != len(self.width):
            raise ValueError(f"center and width must have one value per column, got {len(self.center)} and"
                             f" {len(self.width)}")

    @classmethod
    def fit(cls, features: np.ndarray | None, categories: np.ndarray | None, scale: str) -> FeatureEncoding:
        """Fit ``scale`` on ``features`` (n, d) and the vocabulary on ``categories`` (n, c)."""
        scale = check_scale(scale)
        X = np.zeros((0, 0)) if features is None else np.asarray(features, dtype=np.float64)
        d = X.shape[1] if X.ndim == 2 else 0
        if scale == "standard" and d:
            center, width = X.mean(axis=0), _widths(X.std(axis=0))
        elif scale == "robust" and d:
            q25, median, q75 = np.percentile(X, [25, 50, 75], axis=0)
            center, width = median, _widths(q75 - q25)
        else:  # "none": nothing fitted, the features as stored
            center, width = np.zeros(0), np.zeros(0)
        vocabulary: tuple[tuple[str, ...], ...] = ()
        if categories is not None and categories.ndim == 2 and categories.shape[1]:
            vocabulary = tuple(tuple(sorted(pd.unique(categories[:, j]).tolist()))
                               for j in range(categories.shape[1]))
        return cls(scale, tuple(map(float, center)), tuple(map(float, width)), vocabulary)

    @property
    def n_onehot(self) -> int:
        return sum(len(values) for values in self.vocabulary)

    def onehot_pairs(self) -> tuple[list[int], list[str]]:
        """(column, value) of each one-hot indicator, in order: what the GDS projection
        compares ``categories[column]`` with."""
        columns = [j for j, values in enumerate(self.vocabulary) for _ in values]
        values = [value for column in self.vocabulary for value in column]
        return columns, values

    def unseen(self, categories: np.ndarray | None) -> list[tuple[int, int, str]]:
        """``(row, column, value)`` of every categorical value outside the vocabulary."""
        if categories is None or not self.vocabulary:
            return []
        found = []
        for j, values in enumerate(self.vocabulary):  # a loop over columns
            outside = ~pd.Series(categories[:, j], dtype=object).isin(values).to_numpy()
            found += [(int(i), j, str(categories[i, j])) for i in np.flatnonzero(outside)]
        return sorted(found)

    def _onehot(self, categories: np.ndarray | None, n: int, weights: np.ndarray | None = None) -> np.ndarray:
        blocks = []
        for j, values in enumerate(self.vocabulary):
            codes = pd.Categorical(categories[:, j], categories=list(values)).codes  # type: ignore[index]
            if (codes < 0).any():
                row = int(np.flatnonzero(codes < 0)[0])
                raise ValueError(f"categorical column {j} holds {categories[row, j]!r} (row {row}), a value"  # type: ignore[index]
                                 f" the graph was not built with ({list(values)[:8]}): rebuild the graph")
            block = np.zeros((n, len(values)))
            block[np.arange(n), codes] = 1.0 if weights is None else weights[j]
            blocks.append(block)
        return np.hstack(blocks) if blocks else np.zeros((n, 0))

    def transform(self, features: np.ndarray | None, categories: np.ndarray | None) -> np.ndarray:
        """Scaled numeric columns, then the one-hot of the categorical ones (kNN's input)."""
        n = len(features) if features is not None else (len(categories) if categories is not None else 0)
        X = np.zeros((n, 0)) if features is None else np.asarray(features, dtype=np.float64)
        if self.center and X.shape[1] != len(self.center):
            raise ValueError(f"the graph was built on {len(self.center)} numeric features, these rows have"
                             f" {X.shape[1]}")
        if self.center:  # one new (n, d) array, not three (a 1M × 32 copy is 244 MiB)
            X = np.subtract(X, np.asarray(self.center))
            X /= np.asarray(self.width)
        onehot = self._onehot(categories, n)
        return np.hstack([X, onehot]) if onehot.shape[1] else X

    def hamming_embedding(self, categories: np.ndarray | None, labels: np.ndarray,
                          n_numeric: int) -> np.ndarray:
        """``z`` with ``||z(x) - z(y)||²`` the information-gain-weighted Hamming distance
        (module docstring: b = c = 1, gains on the given labels)."""
        if n_numeric:
            raise ValueError(f"metric 'hamming' reads categorical columns only, and this dataset has {n_numeric}"
                             " numeric features: use metric 'euclidean' (one-hot beside the scaled numbers)")
        if categories is None or not self.vocabulary:
            raise ValueError("metric 'hamming' needs categorical columns (ingest --categorical COLS)")
        omega = np.log1p(np.exp(information_gain(categories, labels)))  # ln((1 + e^{b gain}) / c), b = c = 1
        return self._onehot(categories, len(categories), np.sqrt(omega / 2.0))

    def as_record(self) -> dict[str, Any]:
        return {"scale": self.scale, "scale_center": list(self.center), "scale_width": list(self.width),
                "vocabulary": [list(values) for values in self.vocabulary]}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> FeatureEncoding:
        """The encoding of a ``GraphBuild`` record; a record from before scaling existed
        was built on the features as stored (``scale="none"``)."""
        return cls(record.get("scale") or "none", tuple(record.get("scale_center") or ()),
                   tuple(record.get("scale_width") or ()),
                   tuple(tuple(values) for values in record.get("vocabulary") or ()))
