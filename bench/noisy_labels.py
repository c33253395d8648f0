"""What harmonic's re-solve does with the labels its noise flags doubt (``noisy_labels``):
soften them (the default), drop them, or keep them as given.

    python -m bench noisy_labels                 # both tables (about 2 min on 2 cores)
    python -m bench noisy_labels --seeds 0-9     # the hard-data table over ten label draws
    python -m bench noisy_labels --labelled 0.1,0.3,0.5,0.8   # many labels, clean and flipped
    python -m bench noisy_labels --only glass,soybean --seeds 0-19  # the hard-data table on these sets

The flags are the same under every rule (they come before the re-solve); what changes is the
accuracy on the hidden labels, on two kinds of data:

1. Clean labels that the flags doubt: the real sets of ``bench/hard_data.py`` (digits;
   segment, WDBC, diabetes, ionosphere and vote z-scored), ``knn_graph(X, 10)``, 1% and 10%
   of the nodes labelled at random (``hard_data.random_labels``, seeds 0-2 as that table),
   against the best of LabelSpreading α = 0.2, α = 0.99 and scikit-network's diffusion on
   the same W (the peer that has the best mean over the seeds, as ``hard_data`` takes it).
   Here every flag is a false flag: what the rule costs when labels are right but atypical
   (vote's members who cross the party line).
2. Flipped labels: the noise-flag benchmark's protocol (``bench/noise_flags.py``: digits and
   segment with 10 and 30 labels per class, WDBC with 28, vote and diabetes with 20; labels
   flipped uniformly to another class at 0, 10 and 20%; seeds 100-109): what the rule buys
   when labels are wrong.
3. With ``--labelled``, instead: both at once as the labelled share grows (the real sets, the
   labelled nodes drawn at random at each share, 0, 10 and 20% of them flipped, seeds
   100-104), because ``bench/class_mass.py`` found the default 1-2 points below the best
   peer on segment and vote at 50% and 80% labelled with clean labels, and the question is
   whether the re-solve is the cause and a rule by the labelled share could avoid it.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

from labelling.sampling import flip_labels, keep_per_class, random_labels
from similarity import knn_graph
from solvers import LabelProblem, solve

from ._common import Report, real_set, seed_range
from .hard_data import REAL, peers

RULES = ("soften", "drop", "keep")
FLIPPED_SETS = (("digits", 10), ("segment", 10), ("wdbc", 28), ("digits", 30), ("segment", 30), ("vote", 20),
                ("diabetes", 20))


def _graph(name: str):
    X, y = real_set(name)
    return knn_graph(X, 10), y


def _accuracies(W, y_given, y, hidden) -> dict[str, float]:
    """Hidden-label accuracy of harmonic under each rule, and how many labels it flagged."""
    out = {}
    for rule in RULES:
        prediction = solve(LabelProblem(W, y_given, n_classes=int(y.max()) + 1), "harmonic", noisy_labels=rule)
        out[rule] = float(np.mean(prediction.labels[hidden] == y[hidden]))
    out["flagged"] = int(prediction.noisy.sum())
    return out


def clean_table(seeds, names=REAL) -> pd.DataFrame:
    rows = []
    for name in names:
        W, y = _graph(name)
        for fraction in (0.01, 0.1):
            per_seed, peer = [], []
            for seed in seeds:
                kept = random_labels(y, fraction, np.random.default_rng(seed))
                y_given, hidden = np.where(kept, y, -1), ~kept
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    runs = peers(W, y_given)
                peer.append({m: np.mean(r[0][hidden] == y[hidden]) for m, r in runs.items() if "Propagation" not in m})
                per_seed.append({**_accuracies(W, y_given, y, hidden), "labels": int(kept.sum())})
            peers_mean = pd.DataFrame(peer).mean()
            mean = pd.DataFrame(per_seed).mean()
            row = {"data": name, "labelled": f"{fraction:.0%}", "labels": mean["labels"], "flagged": mean["flagged"],
                   "flagged share": mean["flagged"] / mean["labels"],
                   "best peer": f"{peers_mean.idxmax()} {peers_mean.max():.3f}"}
            row.update({f"{rule} − best peer": mean[rule] - peers_mean.max() for rule in RULES})
            rows.append(row)
            print(f"  {name} {fraction:.0%}: " + ", ".join(f"{r} {row[f'{r} − best peer']:+.3f}" for r in RULES),
                  flush=True)
    return pd.DataFrame(rows)


def _flipped_cell(W, y, draw, flip: float, seeds, row: dict) -> dict:
    """``row`` with soften's mean hidden-label accuracy over ``seeds`` and the other rules less
    it: the labels ``draw(rng)`` keeps, ``flip`` of them flipped to another class."""
    C = int(y.max()) + 1
    per_seed = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        kept = draw(rng)
        noisy, _ = flip_labels(y, kept, flip, C, rng)
        per_seed.append(_accuracies(W, np.where(kept, noisy, -1), y, ~kept))
    mean = pd.DataFrame(per_seed).mean()
    row = {**row, "flipped": f"{flip:.0%}", "flagged": mean["flagged"], "soften": mean["soften"]}
    row.update({f"{rule} − soften": mean[rule] - mean["soften"] for rule in RULES[1:]})
    print(f"  {', '.join(str(v) for v in row.values())}", flush=True)
    return row


def flipped_table(seeds) -> pd.DataFrame:
    rows = []
    for name, per_class in FLIPPED_SETS:
        W, y = _graph(name)
        for flip in (0.0, 0.1, 0.2):
            rows.append(_flipped_cell(W, y, lambda rng: keep_per_class(y, per_class, rng), flip, seeds,
                                      {"data": name, "labels per class": per_class}))
    return pd.DataFrame(rows)


def labelled_table(fractions, seeds) -> pd.DataFrame:
    rows = []
    for name in REAL:
        W, y = _graph(name)
        for fraction in fractions:
            for flip in (0.0, 0.1, 0.2):
                rows.append(_flipped_cell(W, y, lambda rng: random_labels(y, fraction, rng), flip, seeds,
                                          {"data": name, "labelled": f"{fraction:.0%}"}))
    return pd.DataFrame(rows)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench noisy_labels")
    parser.add_argument("--seeds", default="0-2", help="label draws of the hard-data table (default 0-2)")
    parser.add_argument("--labelled", help="labelled shares, such as 0.1,0.5,0.8: the third table only")
    parser.add_argument("--only", help="comma-separated real sets (bench._common.real_set): the clean table only")
    args = parser.parse_args(argv)
    seeds = seed_range(args.seeds)
    if args.only:
        names = tuple(args.only.split(","))
        report = Report(f"noisy_labels_{'_'.join(names)}_seeds_{args.seeds}",
                        "harmonic's re-solve on clean labels: soften, drop or keep the flagged labels")
        report.table(f"Clean labels ({', '.join(names)}, knn_graph(X, 10), seeds {args.seeds}): hidden-label "
                     "accuracy of each rule less the best peer's (as below); flagged = given labels flagged, all "
                     "false flags here", clean_table(seeds, names))
        print(f"written to {report.save()}")
        return
    if args.labelled:
        report = Report("noisy_labels_labelled", "harmonic's re-solve as the labelled share grows")
        table = labelled_table([float(f) for f in args.labelled.split(",")], range(100, 105))
        report.table("Random labelled shares, labels flipped uniformly to another class (seeds 100-104): "
                     "hidden-label accuracy of soften (the default), and of the other rules less it", table,
                     floatfmt=".4f")
        print(f"written to {report.save()}")
        return
    report = Report("noisy_labels" if args.seeds == "0-2" else f"noisy_labels_seeds_{args.seeds}",
                    "harmonic's re-solve: soften, drop or keep the flagged labels")
    report.table(f"Clean labels (the real sets of bench/hard_data.py, seeds {args.seeds}): hidden-label accuracy "
                 "of each rule less the best peer's (the best mean of LabelSpreading α=0.2, α=0.99 and "
                 "scikit-network's diffusion); flagged = given labels flagged, all false flags here",
                 clean_table(seeds))
    report.table("Flipped labels (seeds 100-109): hidden-label accuracy of soften (the default), and of the "
                 "other rules less it", flipped_table(range(100, 110)), floatfmt=".4f")
    print(f"written to {report.save()}")
