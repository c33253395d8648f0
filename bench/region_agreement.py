"""An incremental run's region against a full run of the same store, after one given label
changed: how many region nodes get another label than the full run gives them.

    python -m bench region_agreement                     # both label layouts, 8 changes each
    python -m bench region_agreement --refit-class-mass  # the regions as solved before

Why: ``bench/incremental.py`` compares the new entities only, and on the digits their 2 hops
reach 95% of the graph; a changed given label makes a small region, where harmonic's class
masses refitted on the region's nodes moved a third to a half of it
(``labelling/regions.py``, ``REGION_SOLVER_PARAMS``).

Settings: scikit-learn's digits in a fresh embedded store, the labelling flow with its
defaults (harmonic, 10-NN), two label layouts: 10 given labels per class (seed 0) with the
pixels unscaled, and a label on every 10th row with the default scaling (the README's
Neo4j example). For each of 8 given labels spread over the dataset: a copy of the labelled
store, that label changed to the class 3 above it, one incremental run (2 hops) and, on a
second copy, one full run; the region is the nodes the incremental run wrote.
``--refit-class-mass`` solves the regions with the run's own ``class_mass`` (the code before
this benchmark).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits

from ._common import Report

DATASET = "digits"
CHANGES = 8


def _frame(layout: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, str]:
    X, y = load_digits(return_X_y=True)
    if layout == "10 per class, unscaled":
        rng = np.random.default_rng(0)
        labelled = np.zeros(len(y), dtype=bool)
        for c in range(10):
            labelled[rng.choice(np.flatnonzero(y == c), 10, replace=False)] = True
        scale = "none"
    else:
        labelled, scale = np.arange(len(y)) % 10 == 0, "standard"
    frame = pd.DataFrame(X).add_prefix("pixel_")
    frame.insert(0, "label", [str(v) if kept else None for v, kept in zip(y, labelled)])
    frame.insert(0, "key", [f"d{i:04d}" for i in range(len(y))])
    return frame, y, labelled, scale


def _predictions(store: str) -> pd.DataFrame:
    from graphstore import open_store

    with open_store(store) as opened:
        return opened.query("MATCH (e:Entity) WHERE e.dataset = $d RETURN e.key AS key, e.predicted_label AS p,"
                            " e.label_run_id AS run", {"d": DATASET}).set_index("key")


def _layout(layout: str, folder: Path) -> dict:
    from flows.labelling import labelling_flow
    from graphstore import open_store
    from labelling.records import parse_records

    frame, y, labelled, scale = _frame(layout)
    base = str(folder / "labelled")
    with open_store(base, create=True) as store:
        store.write_nodes(DATASET, parse_records(frame, key="key", features="pixel_*", label="label").nodes)
    labelling_flow(DATASET, store_uri=base, full=True, publish=False, scale=scale)
    truth = pd.Series(y.astype(str), index=frame["key"])
    region_nodes = differ = right_incremental = right_full = 0
    for target in np.flatnonzero(labelled)[:: max(1, labelled.sum() // CHANGES)][:CHANGES]:
        incremental, full = str(folder / f"inc{target}"), str(folder / f"full{target}")
        shutil.copytree(base, incremental)
        changed = frame.copy()
        changed.loc[target, "label"] = str((y[target] + 3) % 10)
        with open_store(incremental) as store:
            store.write_nodes(DATASET, parse_records(changed, key="key", features="pixel_*", label="label").nodes)
        shutil.copytree(incremental, full)
        summary = labelling_flow(DATASET, store_uri=incremental, publish=False, build_graph=False)
        labelling_flow(DATASET, store_uri=full, full=True, publish=False, build_graph=False)
        after = _predictions(incremental)
        region = after.index[after["run"] == summary["run_id"]]
        before_full = _predictions(full)["p"].loc[region]
        region_nodes += len(region)
        differ += int((after["p"].loc[region] != before_full).sum())
        right_incremental += int((after["p"].loc[region] == truth.loc[region]).sum())
        right_full += int((before_full == truth.loc[region]).sum())
    return {"layout": layout, "changes": CHANGES, "region nodes": region_nodes,
            "differ from the full run": differ, "share differing": differ / max(region_nodes, 1),
            "region accuracy, incremental": right_incremental / max(region_nodes, 1),
            "region accuracy, full": right_full / max(region_nodes, 1)}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench region_agreement")
    parser.add_argument("--refit-class-mass", action="store_true",
                        help="solve regions with the run's class_mass, as before REGION_SOLVER_PARAMS")
    args = parser.parse_args(argv)
    from prefect.testing.utilities import prefect_test_harness

    import labelling.regions

    override = {} if args.refit_class_mass else labelling.regions.REGION_SOLVER_PARAMS
    rows = []
    with prefect_test_harness(), mock.patch.object(labelling.regions, "REGION_SOLVER_PARAMS", override), \
            tempfile.TemporaryDirectory() as folder:
        for layout in ("10 per class, unscaled", "every 10th row, standardised"):
            rows.append(_layout(layout, Path(folder) / layout.split(",")[0].replace(" ", "_")))
            print(rows[-1], flush=True)
    name = "region_agreement_refit" if args.refit_class_mass else "region_agreement"
    report = Report(name, "An incremental run's region against a full run, after one changed given label")
    report.note(f"Settings: `python -m bench region_agreement {' '.join(argv)}`; digits, harmonic defaults, "
                "2 hops, each change on its own copy of the labelled store.")
    report.table("Summed over the changes", pd.DataFrame(rows))
    print(f"written to {report.save()}")
