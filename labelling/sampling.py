"""Label hiding and label flipping, the way the demo and the benchmarks set up experiments."""

from __future__ import annotations

import numpy as np


def random_labels(y: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Each node labelled with probability ``fraction``; one more of any class left without."""
    kept = rng.random(len(y)) < fraction
    for c in np.unique(y):  # a loop over classes
        if not kept[y == c].any():
            kept[rng.choice(np.flatnonzero(y == c))] = True
    return kept


def keep_per_class(y: np.ndarray, per_class: int, rng: np.random.Generator) -> np.ndarray:
    """Mask keeping ``per_class`` randomly chosen labels of every class (all of a smaller class)."""
    y = np.asarray(y)
    keep = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):  # a loop over classes, not nodes
        members = np.flatnonzero(y == c)
        keep[rng.choice(members, size=min(per_class, len(members)), replace=False)] = True
    return keep


def flip_labels(
    y: np.ndarray, given: np.ndarray, fraction: float, n_classes: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Flip ``round(fraction · #given)`` of the given labels to another class, uniformly.

    Returns the noisy labels and the boolean mask of the flipped nodes.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must lie in [0, 1], got {fraction}")
    y = np.asarray(y).copy()
    candidates = np.flatnonzero(given)
    chosen = rng.choice(candidates, size=int(round(fraction * len(candidates))), replace=False)
    shift = rng.integers(1, n_classes, size=len(chosen))  # never 0: a flip always changes the class
    y[chosen] = (y[chosen] + shift) % n_classes
    flipped = np.zeros(len(y), dtype=bool)
    flipped[chosen] = True
    return y, flipped


def flip_labels_per_class(
    y: np.ndarray, given: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Binary-style per-class flipping (the LC-SNC protocol): ``fraction`` of each class's
    given labels move to a uniformly chosen other class."""
    y = np.asarray(y).copy()
    classes = np.unique(y[given])
    flipped = np.zeros(len(y), dtype=bool)
    for c in classes:
        members = np.flatnonzero(given & (y == c))
        chosen = rng.choice(members, size=int(round(fraction * len(members))), replace=False)
        flipped[chosen] = True
    others = np.flatnonzero(flipped)
    originals = y[others]
    for i, c in zip(others, originals):  # few nodes (the flipped ones); picks a different class
        y[i] = rng.choice(classes[classes != c])
    return y, flipped
