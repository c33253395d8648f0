"""``graphlabel copy-store`` against what a user did before it: moving a Kùzu store to
ladybug by running the pipeline again on the source file (``ingest``, ``build-graph``,
``label`` into a new ladybug store), which loses the runs, review decisions and models.

The Kùzu store is made first by the same three commands (``GRAPHLABEL_ENGINE=kuzu``, not
timed) on ``bench/e2e.py``'s data; then, alternating for ``--rounds`` rounds, each a fresh
process: ``copy-store`` into a new folder, and the three commands into another. Reported:
each way's wall time and peak resident memory (medians), and whether the copy's exported
predictions are the source's, row for row.

    python -m bench copy_store                   # 100k entities, 2 rounds
    python -m bench copy_store --n 1000000 --rounds 1

The machine is shared: read the ratio of the two ways, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd

from ._common import Report
from .e2e import DATASET, graphlabel_commands, labelled_entities, timed


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> dict:
    done = timed(argv, env, cwd)
    if done["exit"] != 0:
        raise SystemExit(f"{' '.join(argv[1:3])} failed ({done['exit']}): {(done['stderr'] or done['stdout'])[-800:]}")
    return done


def _answers(graphlabel: str, store: Path, env: dict[str, str], cwd: Path) -> pd.DataFrame:
    out = cwd / f"{store.name}.parquet"
    _run([graphlabel, "export", "--dataset", DATASET, "--output", str(out), "--store", str(store)], env, cwd)
    return pd.read_parquet(out).sort_values("key", ignore_index=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench copy_store")
    parser.add_argument("--n", type=int, default=100_000, help="entities (default 100k)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both ways, alternating")
    args = parser.parse_args(argv)
    report = Report("copy_store" if args.n == 100_000 else f"copy_store_{args.n}",
                    "Moving a Kùzu 0.11.3 store to ladybug 0.22: graphlabel copy-store, against ingest,"
                    " build-graph and label of the source file into a new ladybug store (the defaults; bench/e2e.py's"
                    " data: 32 features, 10 classes, 1% given labels of which 10% flipped)")
    graphlabel = str(Path(sys.executable).with_name("graphlabel"))
    rows, same = [], []
    with tempfile.TemporaryDirectory(prefix="graphlabel-copy-bench-") as tmp:
        folder = Path(tmp)
        env = {**os.environ, "PREFECT_HOME": str(folder / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        env.pop("PREFECT_API_URL", None)
        frame, _, _ = labelled_entities(args.n)
        data = folder / "entities.parquet"
        frame.to_parquet(data, index=False)
        del frame
        source = folder / "kuzu-store"
        print(f"  the Kùzu store of {args.n:,} entities...", flush=True)
        for _, command in graphlabel_commands(data, source):
            _run([graphlabel, *command], {**env, "GRAPHLABEL_ENGINE": "kuzu"}, folder)
        source_answers = _answers(graphlabel, source, env, folder)
        for round_number in range(args.rounds):
            copy = folder / f"copy-{round_number}"
            print(f"  round {round_number}: copy-store...", flush=True)
            done = _run([graphlabel, "copy-store", str(source), str(copy)], env, folder)
            rows.append({"way": "graphlabel copy-store", "round": round_number, "seconds": done["seconds"],
                         "peak MiB": done["peak MiB"]})
            same.append(_answers(graphlabel, copy, env, folder).equals(source_answers))
            shutil.rmtree(copy)
            again = folder / f"again-{round_number}"
            print(f"  round {round_number}: ingest, build-graph, label...", flush=True)
            seconds, peak = 0.0, 0.0
            for _, command in graphlabel_commands(data, again):
                done = _run([graphlabel, *command], {**env, "GRAPHLABEL_ENGINE": "ladybug"}, folder)
                seconds, peak = seconds + done["seconds"], max(peak, done["peak MiB"])
            rows.append({"way": "ingest + build-graph + label (the source file again)", "round": round_number,
                         "seconds": seconds, "peak MiB": peak})
            shutil.rmtree(again)
    measured = pd.DataFrame(rows)
    table = measured.groupby("way", sort=False).agg(seconds=("seconds", "median"), low=("seconds", "min"),
                                                    high=("seconds", "max"),
                                                    **{"peak MiB": ("peak MiB", "median")}).reset_index()
    table["× copy-store"] = table["seconds"] / table["seconds"].iloc[0]
    report.table(f"{args.n:,} entities, medians of {args.rounds} round(s), each command a fresh process", table,
                 floatfmt=".2f")
    report.note(f"The copy's exported predictions (keys, labels, confidences, scores, noise flags) identical to the"
                f" source's in {sum(same)} of {len(same)} rounds; the pipeline run again gives new runs, with no"
                " review decision or model of the source.")
    report.save()
