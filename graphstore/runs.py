"""The ``LabelRun`` record: what a run writes, its codec to and from store rows, and the
retention rule (which runs pruning removes)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .schemas import check_limit

#: Life cycle of a run: written "running" when it starts, then "completed" or "failed".
RUN_STATUSES = ("running", "completed", "failed")
#: LabelRun properties stored as JSON text (Neo4j properties cannot hold maps), decoded on reading.
RUN_JSON_COLUMNS = ("parameters", "metrics", "timings", "versions", "process")
#: Columns of ``GraphStore.read_runs``, in order.
RUN_COLUMNS = ("run_id", "dataset", "solver", "status", "started_at", "finished_at", "n_nodes",
               "n_labeled", "n_flagged", "parameters", "metrics", "timings", "versions", "error", "process",
               "heartbeat_at", "classes")


@dataclass(frozen=True)
class LabelRunRecord:
    """What a labelling run writes as its ``LabelRun`` node.

    A run is written up to twice under one ``run_id``: ``status="running"`` when it starts
    (``finished_at`` None), then ``"completed"`` or ``"failed"`` (with ``error``) at the
    end; each write replaces the node's properties.

    Parameters
    ----------
    run_id, dataset, solver : str
    parameters, metrics : dict
        Stored as JSON text.
    timings : dict of str to float
        Seconds per stage.
    started_at : pandas.Timestamp
    finished_at : pandas.Timestamp or None
        None while the run is running.
    n_nodes, n_labeled, n_flagged : int
    status : {"running", "completed", "failed"}, default "completed"
    versions : dict of str to str
        Library versions the run used (``labelling.provenance.versions()``).
    error : str or None
        Message of a failed run.
    process : dict
        Where the run runs: ``host``, ``pid`` and the process's start time ``started``
        (seconds since the epoch), so that a run whose process is gone can be told from
        one still running (``labelling.liveness``).
    heartbeat_at : pandas.Timestamp or None
        The last time the running run wrote a sign of life (at its start and after each
        stage).
    classes : list of str
        The class names in the order of the ``label_scores`` the run wrote on its nodes
        (stored as JSON text; empty until the run has exported its problem).
    """

    run_id: str
    dataset: str
    solver: str
    parameters: dict[str, Any]
    metrics: dict[str, Any]
    timings: dict[str, float]
    started_at: pd.Timestamp
    finished_at: pd.Timestamp | None
    n_nodes: int
    n_labeled: int
    n_flagged: int
    status: str = "completed"
    versions: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    process: dict[str, Any] = field(default_factory=dict)
    heartbeat_at: pd.Timestamp | None = None
    classes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, got {self.status!r}")

    def properties(self) -> dict[str, Any]:
        """The run as the parameters of ``write_run.*.cypher``: dictionaries as JSON text,
        timestamps as naive UTC datetimes (both stores keep them without a zone)."""
        return {
            "run_id": self.run_id,
            "dataset": self.dataset,
            "solver": self.solver,
            "status": self.status,
            "parameters": json.dumps(self.parameters, sort_keys=True, default=str),
            "metrics": json.dumps(self.metrics, sort_keys=True, default=str),
            # in the order the stages ran, which the report shows (sorted, record_run came before solve)
            "timings": json.dumps(self.timings),
            "versions": json.dumps(self.versions, sort_keys=True, default=str),
            "error": None if self.error is None else str(self.error),
            "process": json.dumps(self.process, sort_keys=True, default=str),
            "heartbeat_at": naive_utc(self.heartbeat_at),
            "started_at": naive_utc(self.started_at),
            "finished_at": naive_utc(self.finished_at),
            "n_nodes": int(self.n_nodes),
            "n_labeled": int(self.n_labeled),
            "n_flagged": int(self.n_flagged),
            "classes": json.dumps([str(name) for name in self.classes]),
        }


def naive_utc(timestamp) -> Any:
    """A timestamp (pandas, datetime, or the Neo4j driver's DateTime) as a naive
    ``datetime`` in UTC; None stays None."""
    if hasattr(timestamp, "to_native"):  # neo4j.time.DateTime / LocalDateTime
        timestamp = timestamp.to_native()
    if timestamp is None or pd.isna(timestamp):
        return None
    timestamp = pd.Timestamp(timestamp)
    if timestamp.tzinfo is not None:
        timestamp = timestamp.tz_convert("UTC").tz_localize(None)
    return timestamp.to_pydatetime()


def _decode_json(value: Any) -> dict[str, Any]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return {}  # a run written before the column existed
    return json.loads(value) if isinstance(value, (str, bytes)) else dict(value)


def decode_classes(value: Any) -> list[str]:
    """A run's ``classes`` (JSON text) as a list; [] for a run written before they were recorded."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    return [str(name) for name in (json.loads(value) if isinstance(value, (str, bytes)) else value)]


def runs_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """``read_runs``' frame from rows of LabelRun properties: ``RUN_COLUMNS`` in order, JSON
    columns decoded to dicts ({} where absent), timestamps as naive pandas Timestamps, a
    missing status read as "completed" (runs written before statuses existed)."""
    rows = [dict(row) for row in rows]
    frame = pd.DataFrame({name: [row.get(name) for row in rows] for name in RUN_COLUMNS})
    for name in RUN_JSON_COLUMNS:
        frame[name] = [_decode_json(value) for value in frame[name]]
    frame["classes"] = [decode_classes(value) for value in frame["classes"]]
    for name in ("started_at", "finished_at", "heartbeat_at"):
        frame[name] = pd.to_datetime([naive_utc(value) for value in frame[name]])
    frame["status"] = frame["status"].where(frame["status"].notna(), "completed")
    frame["error"] = frame["error"].astype(object).where(frame["error"].notna(), None)
    for name in ("n_nodes", "n_labeled", "n_flagged"):
        frame[name] = pd.array(frame[name], dtype="Int64")
    return frame


def run_record(row: Mapping[str, Any]) -> LabelRunRecord:
    """A ``LabelRunRecord`` from one row of ``read_runs``' frame."""
    def timestamp(value):
        return None if value is None or pd.isna(value) else pd.Timestamp(value)

    def count(value) -> int:
        return 0 if value is None or pd.isna(value) else int(value)

    return LabelRunRecord(
        run_id=row["run_id"], dataset=row["dataset"], solver=row["solver"], parameters=dict(row["parameters"]),
        metrics=dict(row["metrics"]), timings=dict(row["timings"]), started_at=timestamp(row["started_at"]),
        finished_at=timestamp(row["finished_at"]), n_nodes=count(row["n_nodes"]), n_labeled=count(row["n_labeled"]),
        n_flagged=count(row["n_flagged"]), status=row["status"], versions=dict(row["versions"]), error=row["error"],
        process=dict(row["process"]), heartbeat_at=timestamp(row["heartbeat_at"]),
        classes=list(row.get("classes") or []))


def check_status(status: Any) -> str | None:
    if status is not None and status not in RUN_STATUSES:
        raise ValueError(f"run status must be one of {RUN_STATUSES}, got {status!r}")
    return status


def runs_to_prune(runs: pd.DataFrame, keep_last: int) -> list[str]:
    """Run ids that retention removes: the dataset's runs older than its ``keep_last``
    newest completed ones.

    ``runs`` has columns ``run_id``, ``status``, ``started_at`` (one dataset). Runs are
    ordered newest first by ``started_at`` (missing ones count as oldest), then by run id.
    Kept: the ``keep_last`` newest completed runs, every run newer than the oldest of those
    (a failed run from last night stays next to the runs around it), and every "running"
    run. The stores also keep the run the nodes' ``label_run_id`` points to, checked in
    the deleting transaction.
    """
    keep_last = check_limit(keep_last, "keep_last", minimum=0)
    if runs.empty:
        return []
    status = runs["status"].where(runs["status"].notna(), "completed")
    started = pd.to_datetime(runs["started_at"])
    ordered = (pd.DataFrame({"run_id": runs["run_id"].astype(str), "status": status,
                             "missing": started.isna(), "started": started})
               .sort_values(["missing", "started", "run_id"], ascending=[True, False, False],
                            kind="stable")
               .reset_index(drop=True))
    completed = ordered.index[ordered["status"] == "completed"]
    if len(completed) <= keep_last:
        return []
    # everything after the keep_last-th newest completed run (position `boundary`) goes
    boundary = completed[keep_last - 1] if keep_last else -1
    beyond = ordered.iloc[boundary + 1:]
    return beyond.loc[beyond["status"] != "running", "run_id"].tolist()
