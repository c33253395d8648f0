"""The embedded store's two engines end to end: ``graphlabel ingest``, ``build-graph`` and
``label`` with their defaults (bench/e2e.py's commands and data), run on ladybug (the
default engine) and on kuzu 0.11.3 (``GRAPHLABEL_ENGINE``), alternating engine by engine
for ``--rounds`` rounds, each command a fresh process and each round a fresh store. For
each engine: the median and range of each command's wall time and peak resident memory,
the median of the stages ``label`` prints, and whether its predictions are the other
engine's (``graphlabel export`` of each store, not timed; the engine must not change an
answer).

    python -m bench e2e_engines                       # 100k entities, 1 round
    python -m bench e2e_engines --full --rounds 2     # 1M entities (the README's figure)

The machine is shared: the ratio of the two engines' medians, measured in the same run,
is the figure to read.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd

from ._common import Report
from .e2e import DATASET, PIPELINE, STAGE_ROW, graphlabel_commands, labelled_entities, timed

#: The default engine first; both are dependencies of graphlabel.
ENGINES = ("ladybug", "kuzu")


def run_engine(engine: str, data: Path, folder: Path) -> tuple[list[dict], pd.DataFrame]:
    """The three commands on a new store of ``engine``: a row per command and stage, and
    the exported predictions (key, predicted label, noise flag)."""
    env = {**os.environ, "GRAPHLABEL_ENGINE": engine, "PREFECT_HOME": str(folder / "prefect"),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    graphlabel = str(Path(sys.executable).with_name("graphlabel"))
    rows = []
    for name, args in graphlabel_commands(data, folder / "store"):
        print(f"  {engine}: graphlabel {name}...", flush=True)
        done = timed([graphlabel, *args], env, folder)
        if done["exit"] != 0:
            raise SystemExit(f"graphlabel {name} on {engine} failed ({done['exit']}):"
                             f" {(done['stderr'] or done['stdout'])[-800:]}")
        rows.append({"engine": engine, "what": f"graphlabel {name}", "seconds": done["seconds"],
                     "peak MiB": done["peak MiB"]})
        rows += [{"engine": engine, "what": f"{name}: {stage}", "seconds": float(seconds)}
                 for stage, seconds in STAGE_ROW.findall(done["stdout"])]
    exported = folder / "export.parquet"
    done = timed([graphlabel, "export", "--dataset", DATASET, "--output", str(exported), "--store",
                  str(folder / "store")], env, folder)
    if done["exit"] != 0:
        raise SystemExit(f"graphlabel export on {engine} failed: {(done['stderr'] or done['stdout'])[-800:]}")
    answers = pd.read_parquet(exported, columns=["key", "predicted_label", "label_noise"]).sort_values("key")
    return rows, answers.reset_index(drop=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench e2e_engines")
    parser.add_argument("--full", action="store_true", help="1M entities (default 100k)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of both engines, alternating")
    args = parser.parse_args(argv)
    n = 1_000_000 if args.full else 100_000
    report = Report("e2e_engines_full" if args.full else "e2e_engines",
                    "The embedded store's engines end to end with the defaults: ladybug 0.22 (the default) and"
                    " kuzu 0.11.3; graphlabel ingest, build-graph, label (harmonic with noise flags, 10-NN"
                    " graph) on bench/e2e.py's data: 32 features, 10 classes, 1% given labels of which 10%"
                    " flipped")
    rows, answers = [], {}
    with tempfile.TemporaryDirectory(prefix="graphlabel-engines-") as tmp:
        frame, _, _ = labelled_entities(n)
        data = Path(tmp) / "entities.parquet"
        frame.to_parquet(data, index=False)
        del frame
        for round_number in range(args.rounds):
            for engine in ENGINES:
                folder = Path(tmp) / f"{engine}-{round_number}"
                folder.mkdir()
                measured, answers[engine] = run_engine(engine, data, folder)
                rows += [{**row, "round": round_number} for row in measured]
    measured = pd.DataFrame(rows)
    commands = measured[measured["what"].str.startswith("graphlabel ")]
    totals = (commands.groupby(["engine", "round"], as_index=False)
              .agg(seconds=("seconds", "sum"), **{"peak MiB": ("peak MiB", "max")})
              .assign(what="graphlabel, all three"))
    order = [f"graphlabel {name}" for name in PIPELINE] + ["graphlabel, all three"]
    summary = []
    for what, group in pd.concat([commands, totals]).groupby("what"):
        row: dict = {"command": what}
        for engine in ENGINES:
            seconds = group.loc[group["engine"] == engine, "seconds"]
            row[f"{engine} s"] = seconds.median()
            row[f"{engine} range"] = f"{seconds.min():.1f}-{seconds.max():.1f}"
            row[f"{engine} peak MiB"] = group.loc[group["engine"] == engine, "peak MiB"].median()
        row["ladybug / kuzu"] = row["ladybug s"] / row["kuzu s"]
        summary.append(row)
    table = pd.DataFrame(summary).set_index("command").loc[order].reset_index()
    report.table(f"{n:,} entities: each command, median (and range) of {args.rounds} round(s) per engine",
                 table, floatfmt=".2f")
    stages = (measured[~measured["what"].str.startswith("graphlabel ")]
              .pivot_table(index="what", columns="engine", values="seconds", aggfunc="median").reset_index())
    stages["ladybug / kuzu"] = stages["ladybug"] / stages["kuzu"]
    report.table(f"{n:,} entities: the stages the commands printed (medians)", stages, floatfmt=".2f")
    same = answers["ladybug"].equals(answers["kuzu"])
    report.note(f"Predictions and noise flags of the last round identical on both engines: {'yes' if same else 'NO'}"
                f" ({len(answers['ladybug']):,} nodes).")
    report.save()
