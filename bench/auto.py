"""``solve(problem, method="auto")`` against every single solver it could pick and the
cheaper others, on digits, segment and WDBC: accuracy on the hidden labels and time in
harmonic runs.

    python -m bench auto                 # seeds 0-4
    python -m bench auto --seeds 5-9     # the check seeds (auto's rule was chosen on 0-4)
    python -m bench auto --full          # seeds 0-9
    python -m bench auto --scoring log_probability   # auto's other score
    python -m bench auto --generated     # hard_data's overlap / unequal sizes, 5,000 nodes
    python -m bench auto --ceiling       # auto with mincut and maxmargin too, and no budget

Labels: 10 per class (digits, segment) and 28 per class (WDBC, about 10%), 10% of them
flipped (``flip_labels``), as the noise-flag benchmark; graph ``knn_graph(X, 10)``
(segment and WDBC z-scored). Single solvers, each with its defaults: auto's candidates
(``solvers.auto.CANDIDATES``), NMF with γ = midpoint (a candidate until this benchmark
showed it never best), and ``mincut`` and ``maxmargin`` (9-22 harmonic runs each, too dear
to cross-validate in auto's budget of 10). ``spectral`` and ``lcsnc`` cost 230-4,100
harmonic runs on these sets and are left out. "best single" is the single solver with
the best mean accuracy over the seeds, fixed in hindsight with the hidden labels: what
auto tries to match without them. The peers run on the same problem in the same loop.

``--ceiling`` asks what selection by cross-validation can reach on these labels at all: auto
with ``mincut`` and ``maxmargin`` among its candidates (inside the CV mincut without noise
flags, maxmargin with its defaults) and a budget of 1,000 harmonic runs, so that every
candidate is scored; the rule (one standard error) and the folds are auto's.
"""

from __future__ import annotations

import argparse
import os
import time
from unittest import mock

import numpy as np
import pandas as pd

import solvers.auto
from labelling.sampling import flip_labels, keep_per_class
from similarity import knn_graph
from solvers import LabelProblem, solve
from solvers.auto import CANDIDATES

from ._common import Report, real_set, seed_range

#: ``--ceiling``: the candidates auto's budget leaves out, and their parameters inside the CV
CEILING_CANDIDATES = (("mincut", "mincut", {}), ("maxmargin", "maxmargin", {}))
CEILING_CV_PARAMETERS = {"mincut": {"noise": "none"}}
CEILING_BUDGET = 1_000.0
# (label, method, parameters): single solvers measured beside auto but not among its candidates
REFERENCES: tuple[tuple[str, str, dict], ...] = (
    ("nmf, γ=midpoint", "nmf", {"gamma": "midpoint"}),
    ("mincut", "mincut", {}),
    ("maxmargin", "maxmargin", {}),
)


def _shown(candidate: dict) -> float | str:
    """A candidate's score, or why it has none."""
    if candidate["score"] is not None:
        return candidate["score"]
    return "= default" if candidate["status"].startswith("the default") else "skipped (time)"


def _real(seeds: range):
    """digits, segment, WDBC: 10 given labels per class (28 on WDBC), 10% of them flipped."""
    for name, per_class in (("digits", 10), ("segment", 10), ("wdbc", 28)):
        X, y = real_set(name)
        W = knn_graph(X, 10)
        C = int(y.max()) + 1
        for seed in seeds:
            rng = np.random.default_rng(seed)
            kept = keep_per_class(y, per_class, rng)
            noisy, _ = flip_labels(y, kept, 0.1, C, rng)
            yield name, seed, LabelProblem(W, np.where(kept, noisy, -1), X=X), y


def _generated(seeds: range):
    """``bench/hard_data.py``'s "overlap" and "unequal sizes" sets at 5,000 nodes, 1% and 10%
    of the nodes labelled at random (no flips), as that benchmark labels them."""
    from labelling.sampling import random_labels

    from .hard_data import generated

    for name in ("overlap", "unequal sizes"):
        X, y = generated(name, 5_000, 0)
        W = knn_graph(X, 10)
        for fraction in (0.01, 0.1):
            for seed in seeds:
                kept = random_labels(y, fraction, np.random.default_rng(seed))
                yield f"{name}, {fraction:.0%}", seed, LabelProblem(W, np.where(kept, y, -1), X=X), y


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench auto")
    parser.add_argument("--full", action="store_true", help="seeds 0-9")
    parser.add_argument("--scoring", default="accuracy", choices=("accuracy", "balanced_accuracy", "log_probability"),
                        help="auto's score of a held-out given label (default: auto's default)")
    parser.add_argument("--seeds", type=seed_range, default=None, help="a range such as 5-9 (default 0-4)")
    parser.add_argument("--generated", action="store_true",
                        help="hard_data's overlap and unequal-size sets at 5,000 nodes instead (seeds 0-1)")
    parser.add_argument("--ceiling", action="store_true",
                        help=f"mincut and maxmargin among auto's candidates, a budget of {CEILING_BUDGET:,.0f} harmonic"
                             " runs (module docstring)")
    args = parser.parse_args(argv)
    if not args.ceiling:
        run(args)
        return
    with (mock.patch.object(solvers.auto, "CANDIDATES", CANDIDATES + CEILING_CANDIDATES),
          mock.patch.dict(solvers.auto.CV_PARAMETERS, CEILING_CV_PARAMETERS)):
        run(args)


def run(args: argparse.Namespace) -> None:
    candidates = solvers.auto.CANDIDATES
    seeds = args.seeds or (range(10) if args.full else range(2) if args.generated else range(5))
    span = f"{seeds.start}-{seeds.stop - 1}"
    suffix = ("_generated" if args.generated else "") + ("" if span in ("0-4", "0-1") else f"_seeds_{span}")
    suffix += ("" if args.scoring == "accuracy" else f"_{args.scoring}") + ("_ceiling" if args.ceiling else "")
    budget = {"budget": CEILING_BUDGET} if args.ceiling else {}
    called = f"scoring={args.scoring!r}" + "".join(f", {key}={value:g}" for key, value in budget.items())
    report = Report(f"auto{suffix}", f"solve(method='auto', {called}) "
                                     f"against the single solvers, seeds {span}"
                                     + (", with mincut and maxmargin among its candidates" if args.ceiling else ""))
    load_at_start = os.getloadavg()[0]
    rows, choices = [], []
    singles = list(candidates) + [reference for reference in REFERENCES if reference not in candidates]
    if args.generated:  # mincut and maxmargin cost too much at 5,000 nodes for a check
        singles = [s for s in singles if s[1] not in ("mincut", "maxmargin")]
    for name, seed, problem, y in (_generated(seeds) if args.generated else _real(seeds)):
        hidden = ~problem.labeled
        start = time.perf_counter()
        solve(problem, "harmonic")
        unit = time.perf_counter() - start
        start = time.perf_counter()
        p = solve(problem, "auto", scoring=args.scoring, **budget)
        accuracy = np.mean(p.labels[hidden] == y[hidden])
        rows.append({"data": name, "seed": seed, "method": "auto", "accuracy": accuracy,
                     "harmonic runs": (time.perf_counter() - start) / unit})
        record = p.info["auto"]
        choices.append({"data": name, "seed": seed, "chosen": record["chosen"],
                        **{c["name"]: _shown(c) for c in record["candidates"]},
                        "best − default": record.get("best_minus_default"),
                        "standard error": record.get("standard_error")})
        for label, method, params in singles:
            start = time.perf_counter()
            q = solve(problem, method, **params)
            rows.append({"data": name, "seed": seed, "method": label,
                         "accuracy": np.mean(q.labels[hidden] == y[hidden]),
                         "harmonic runs": (time.perf_counter() - start) / unit})
    frame = pd.DataFrame(rows)
    mean = frame.groupby(["data", "method"], sort=False)[["accuracy", "harmonic runs"]].mean().reset_index()
    single = mean[mean["method"] != "auto"]
    best = single.loc[single.groupby("data")["accuracy"].idxmax(), ["data", "method", "accuracy"]]
    best = best.rename(columns={"method": "best single", "accuracy": "best single accuracy"})
    candidate_names = [c[0] for c in candidates]
    among = single[single["method"].isin(candidate_names)]
    best_candidate = among.loc[among.groupby("data")["accuracy"].idxmax(), ["data", "method", "accuracy"]]
    best_candidate = best_candidate.rename(columns={"method": "best candidate", "accuracy": "best candidate accuracy"})
    autos = mean[mean["method"] == "auto"].merge(best, on="data").merge(best_candidate, on="data")
    autos["auto − best single"] = autos["accuracy"] - autos["best single accuracy"]
    autos["auto − best candidate"] = autos["accuracy"] - autos["best candidate accuracy"]
    per_seed = frame[frame["method"] != "auto"]
    winners = per_seed.loc[per_seed.groupby(["data", "seed"])["accuracy"].idxmax()]
    stability = winners.groupby("data")["method"].agg(lambda m: ", ".join(f"{k} {v}" for k, v in
                                                                          m.value_counts().items()))
    labels = "labelled at random, none flipped" if args.generated else "10% of the given labels flipped"
    report.table(f"auto against the best single solver (means over seeds {span}; {labels}; time in default "
                 "harmonic runs on the same problem)", autos)
    report.table("Every method's mean accuracy and time (in default harmonic runs on the same problem)", mean)
    report.table("The best single solver per seed (how many seeds each won; ties to the first listed)",
                 stability.reset_index().rename(columns={"method": "best on the seed"}))
    report.table(f"auto's choice and its candidates' cross-validated scores per seed ({args.scoring} of the held-out "
                 "given labels)",
                 pd.DataFrame(choices))
    report.note(f"1-minute load average: {load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
                "(2 cores shared)")
    print(f"written to {report.save()}")
