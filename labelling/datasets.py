"""Real labelled data sets for the benchmarks and tests: scikit-learn's bundled ones and
Weka's example ARFF files (Debian's ``weka`` package, unpacked by ``make data``).

Every loader returns ``(X, y, classes)``: float features, class indices 0..C-1 and the
class names. Numeric features are returned as they are (scaling is the caller's, since the
papers differ); nominal attributes are one value each, see ``load_arff``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

# ``make data`` unpacks the ARFF files here; GRAPHLABEL_DATA points elsewhere.
DATA_DIR = Path(os.environ.get("GRAPHLABEL_DATA", Path(__file__).resolve().parent.parent / ".data"))
# The Weka examples that are one table each; segment is two files (challenge + test).
WEKA_SETS = ("diabetes", "ionosphere", "vote", "segment", "glass", "iris", "breast-cancer", "credit-g", "soybean")


class DataNotFetched(FileNotFoundError):
    """The ARFF files are not there: ``make data`` fetches them."""


def weka_path(name: str) -> Path:
    path = DATA_DIR / "weka" / f"{name}.arff"
    if not path.exists():
        raise DataNotFetched(f"{path} is missing: run `make data` (unpacks Debian's weka examples)")
    return path


def load_arff(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One of Weka's example data sets as ``(X, y, classes)``; the class is the last attribute.

    Nominal attributes with two values (vote's y/n) become 0/1 with a missing value ('?') at
    0.5, the midpoint (Blum & Chawla 2001 do not say how they treated vote's '?'; dropping
    the rows would leave 232 of the 435 the paper's L+U uses); nominal attributes with more
    values are one-hot encoded (missing: all zero). Numeric missing values are the column mean.
    Read by ``labelling.arfffiles``, the reader ``graphlabel ingest`` uses: scipy's refuses
    soybean (a declared value with a leading blank, ``' same-lst-sev-yrs'``).
    """
    from labelling.arfffiles import read_arff_attributes, read_arff_table

    parts = ["segment-challenge", "segment-test"] if name == "segment" else [name]
    attributes = read_arff_attributes(weka_path(parts[0]))
    target = attributes[-1].name
    frames = []
    for part in parts:
        table = read_arff_table(weka_path(part), text_columns=[target])
        if len(table.rejects):
            raise ValueError(f"{weka_path(part)}: {table.rejects['reason'].iloc[0]}")
        frames.append(table.frame)
    frame = pd.concat(frames, ignore_index=True)
    classes, y = np.unique(frame.pop(target).to_numpy(dtype=str), return_inverse=True)
    columns = []
    for attribute in attributes[:-1]:
        if attribute.kind == "numeric":
            values = frame[attribute.name].astype(float)
            columns.append(values.fillna(values.mean()).to_numpy()[:, None])
            continue
        text = frame[attribute.name].to_numpy(dtype=str)
        declared = attribute.values
        if len(declared) == 2:
            columns.append(np.where(text == declared[1], 1.0, np.where(text == declared[0], 0.0, 0.5))[:, None])
        else:
            columns.append((text[:, None] == np.asarray(declared)[None, :]).astype(float))
    return np.hstack(columns), y.astype(np.int64), classes


def load(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A data set by name: ``digits``, ``wdbc`` (scikit-learn's bundled copies) or a Weka one."""
    if name in ("digits", "wdbc"):
        from sklearn.datasets import load_breast_cancer, load_digits

        bunch = load_digits() if name == "digits" else load_breast_cancer()
        return bunch.data.astype(float), bunch.target.astype(np.int64), np.asarray(bunch.target_names)
    if name not in WEKA_SETS:
        raise ValueError(f"unknown data set {name!r}; choose digits, wdbc or one of {WEKA_SETS}")
    return load_arff(name)


def standardise(X: np.ndarray) -> np.ndarray:
    """z-scores per column (constant columns stay 0)."""
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
