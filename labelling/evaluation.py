"""Scores the demo, the tests and the benchmarks share: noise-flag quality and calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd


def noise_scores(flagged: np.ndarray, flipped: np.ndarray) -> dict[str, float]:
    """Precision, recall and F1 of noise flags against the labels known to be wrong.

    Both arrays are boolean over the same nodes (typically the given labels only).
    """
    flagged = np.asarray(flagged, dtype=bool)
    flipped = np.asarray(flipped, dtype=bool)
    tp = int(np.sum(flagged & flipped))
    precision = tp / flagged.sum() if flagged.sum() else 0.0
    recall = tp / flipped.sum() if flipped.sum() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "flagged": int(flagged.sum()),
        "flipped": int(flipped.sum()),
        "caught": tp,
        "precision": float(precision),
        "recall": float(recall),
        "f1": float(f1),
    }


def reliability_table(confidence: np.ndarray, correct: np.ndarray, n_bins: int = 10) -> pd.DataFrame:
    """Accuracy per confidence bin: a calibrated solver has accuracy ≈ mean confidence in each."""
    confidence = np.asarray(confidence, dtype=float)
    correct = np.asarray(correct, dtype=bool)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1]), 0, n_bins - 1)
    frame = pd.DataFrame({"bin": which, "confidence": confidence, "correct": correct})
    table = frame.groupby("bin").agg(
        count=("correct", "size"), mean_confidence=("confidence", "mean"), accuracy=("correct", "mean")
    )
    table.index = [f"{edges[b]:.1f}-{edges[b + 1]:.1f}" for b in table.index]
    return table


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, n_bins: int = 10) -> float:
    """Mean |accuracy - confidence| over bins, weighted by bin size (ECE)."""
    table = reliability_table(confidence, correct, n_bins)
    weights = table["count"] / table["count"].sum()
    return float(np.sum(weights * np.abs(table["accuracy"] - table["mean_confidence"])))
