"""A dataset's predictions as one table for the tools downstream (``graphlabel export``).

One row per node, sorted by key: ``key``, ``given_label``, ``predicted_label``,
``label_confidence``, one ``score_<class>`` column per class (``labelling.scores`` says
what the numbers are), ``label_runner_up``, ``label_margin``, ``label_noise``,
``label_noise_score``, ``label_run_id``, ``label_solver``, ``labelled_at`` and
``label_accepted`` (the given label a reviewer accepted).

Decisions:

- The nodes carry their latest prediction only, and an incremental run writes only the
  nodes it relabelled, so the nodes of one dataset can hold the scores of several runs,
  each in its run's class order (``LabelRun.classes``). The score columns are the union of
  those classes, sorted; each run's scores go to their classes' columns, and a class a
  node's run did not know scores null for that node (never 0, which would be a claim).
- ``run``: only the nodes whose prediction that run wrote and still carry (a later run
  that relabelled a node replaced it). A run that no node carries any more is an error
  naming it, not an empty file.
- Per-class columns in Parquet too, not a list column: the same table in both formats,
  and one a spreadsheet or a dataframe reads without knowing the class order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from graphstore import GraphStore
from graphstore.errors import NotFound

FORMATS = ("parquet", "csv")
SCORE_PREFIX = "score_"


def resolve_run(store: GraphStore, dataset: str, run: str) -> str:
    """The whole id of the dataset's run ``run`` (its id, or a unique start or end of it, as
    ``graphlabel report`` shows it); ``NotFound`` naming it otherwise."""
    runs = store.read_runs(dataset=dataset, limit=1_000_000)
    ids = runs["run_id"].astype(str)
    piece = run.removeprefix("…").removeprefix("...")
    exact = ids[ids == piece]
    found = exact if len(exact) else ids[ids.str.startswith(piece) | ids.str.endswith(piece)] if piece else exact
    if len(found) > 1:
        raise NotFound(f"run id {run!r} is the start or end of {len(found)} runs of {dataset!r}"
                       f" ({', '.join(found.head(3))}, ...): give more of it")
    if not len(found):
        raise NotFound(f"no run {run!r} of dataset {dataset!r} (graphlabel report --dataset {dataset} lists them)")
    return str(found.iloc[0])


def export_frame(store: GraphStore, dataset: str, run: str | None = None) -> pd.DataFrame:
    """The export table of ``dataset`` (module docstring).

    Raises
    ------
    NotFound
        The dataset has no node; ``run`` is no run of it, or no node carries its
        predictions any more.
    """
    table = store.read_export(dataset)
    if not table.num_rows:
        raise store.unknown_dataset(dataset)
    if run is not None:
        run_id = resolve_run(store, dataset, run)
        table = table.filter(pc.equal(table.column("label_run_id"), run_id))
        if not table.num_rows:
            raise NotFound(f"run {run_id!r} of {dataset!r} wrote no prediction the nodes still carry (later"
                           " runs relabelled them): export without --run for the latest predictions")
    table = table.take(pc.sort_indices(table.column("key")))
    run_ids = [r for r in pc.unique(table.column("label_run_id")).to_pylist() if r is not None]
    run_classes = {r: _classes_of(store, r) for r in run_ids}
    classes = sorted({name for names in run_classes.values() for name in names})
    scores = np.full((table.num_rows, len(classes)), np.nan)
    run_of = table.column("label_run_id")
    lists = table.column("label_scores").combine_chunks()
    for run_id, names in run_classes.items():  # one pass per run, not per node
        rows = np.flatnonzero(pc.fill_null(pc.equal(run_of, run_id), False).to_numpy(zero_copy_only=False)
                              & lists.is_valid().to_numpy(zero_copy_only=False))
        if not len(rows) or not names:
            continue
        picked = lists.take(pa.array(rows))
        lengths = pc.list_value_length(picked).to_numpy(zero_copy_only=False)
        if not np.all(lengths == len(names)):
            continue  # scores of another class count than the run records: not mapped to columns
        values = pc.list_flatten(picked).to_numpy(zero_copy_only=False).reshape(len(rows), len(names))
        scores[np.ix_(rows, np.searchsorted(classes, names))] = values
    frame = table.drop_columns(["label_scores"]).to_pandas()
    score_frame = pd.DataFrame(scores, columns=[f"{SCORE_PREFIX}{name}" for name in classes])
    at = frame.columns.get_loc("label_confidence") + 1
    return pd.concat([frame.iloc[:, :at], score_frame, frame.iloc[:, at:]], axis=1)


def _classes_of(store: GraphStore, run_id: str) -> list[str]:
    runs = store.read_runs(run_id=run_id, limit=1)
    return list(runs["classes"].iloc[0]) if len(runs) else []


#: the endings an export's path may have, and the format each names
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def export_format(file_format: str | None, output: str | Path | None) -> str:
    """The format to write: ``file_format`` when given, else the one ``output``'s ending names
    (``SUFFIXES``), else Parquet (no output: ``DATASET.parquet``).

    Raises ValueError for a format not in ``FORMATS``, for a given format that the output's
    ending contradicts (``--format parquet --output out.csv``), and for an output whose
    ending names no format when none is given: ``--output out.csv`` alone once wrote
    Parquet into out.csv, the format's default.
    """
    suffix = Path(output).suffix.lower() if output is not None else ""
    named = SUFFIXES.get(suffix)
    if file_format is None:
        if output is not None and named is None:
            raise ValueError(f"cannot tell the format of {str(output)!r} from its ending: end it in .parquet or"
                             " .csv, or give --format")
        return named or "parquet"
    if file_format not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {file_format!r}")
    if named is not None and named != file_format:
        raise ValueError(f"--format {file_format} but --output {str(output)!r} ends in {suffix} ({named}):"
                         " drop one of them")
    return file_format


def export_path(dataset: str, file_format: str, output: str | Path | None) -> Path:
    """Where an export is written: ``output``, else ``DATASET.parquet`` / ``DATASET.csv``."""
    return Path(output) if output is not None else Path(f"{dataset}.{file_format}")


def output_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be written, found before any work: a file where a folder of it
    should be (``--output wine.csv/x.csv`` said Python's ``[Errno 20] Not a directory``
    after the whole export); None when it can be tried. Missing folders are made."""
    for folder in Path(path).parents:
        if folder.exists():
            return None if folder.is_dir() else f"--output {str(path)!r}: {str(folder)!r} is a file, not a folder"
    return None


def write_export(frame: pd.DataFrame, path: str | Path, file_format: str) -> Path:
    """Write the export table as Parquet or CSV (nulls empty) at ``path``; returns it."""
    if file_format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {file_format!r}")
    path = Path(path)
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)
    if file_format == "csv":
        frame.to_csv(path, index=False)
    else:
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    return path
