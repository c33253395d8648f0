"""Run reports: one summary of a ``LabelRun``, shown in the terminal (``graphlabel report``)
or as markdown (the flow's Prefect artifact).

Both renderings come from the same list of sections (``report_sections``), so the
terminal and the Prefect UI always show the same numbers.

Examples
--------
>>> from graphstore import open_store
>>> with open_store(".graphlabel") as store:                      # doctest: +SKIP
...     summary = run_summary(store, "0b6f...")
...     print(run_report_markdown(summary))
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import textwrap
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pandas as pd

from graphstore.errors import NotFound
from graphstore.runs import LabelRunRecord

from .liveness import end_unseen
from .wording import counted

#: How the report names a recorded library where its distribution name reads as something else
#: ("neo4j 6.4.1" beside a Neo4j 5.26 server read as the server's version on the walk).
LIBRARY_NAMES = {"neo4j": "neo4j (Python driver)"}
#: Metrics shown in their own rows or table (or repeated there: the given, unlabelled and
#: flagged counts are the run's own fields); the others go to "other metrics".
SHOWN_METRICS = ("class_counts", "mean_confidence", "holdout_accuracy", "n_unreachable", "confidence_histogram",
                 "n_holdout", "holdout_ece", "full_run_reason", "incremental", "n_labeled", "n_unlabeled",
                 "n_flagged", "unreached_share", "holdout_balanced_accuracy", "holdout_majority_class",
                 "holdout_majority_accuracy", "holdout_classes", "run_warnings", "no_better_than_guessing")
#: The names "other metrics" gives the metrics a person reads; a metric without one (a
#: solver's own, ``solver_*``, or a stage time) is named from its key (``metric_name``).
METRIC_NAMES = {
    # pairs, not relationships: GDS writes a mutual pair both ways, so Neo4j holds more
    # relationships than the graph solved over has edges (17,970 against 12,637 on the digits)
    "n_edges": "node pairs joined (edges solved over)",
    "n_edges_built": "relationships built by this run",
    "n_components": "connected components",
    "n_solver_batches": "solver batches",
    "n_unlabeled_components": "components without a given label",
    "n_single_class_nodes": "nodes in one-class components (no solve needed)",
    "n_without_edges": "nodes without a relationship",
    "n_lone_labels": "given labels alone in their class (not checked for noise)",
    "n_nodes": "nodes in the dataset",
    "n_changed": "changed nodes",
    "n_new": "new nodes",
    "n_region": "nodes relabelled",
    "n_boundary": "labelled nodes held fixed around them",
    "n_edges_added": "relationships added",
    "sigma": "Gaussian bandwidth (sigma)",
    "auto_chosen": "solver chosen by auto",
    "auto_folds": "auto: cross-validation folds",
    "auto_scoring": "auto: candidates scored by",
    "auto_reason": "auto: default kept because",
    "auto_budget_harmonic_runs": "auto: budget (harmonic solves)",
    "auto_scores": "auto: score of",
}
MISSING = "—"
#: Characters per row of a warning in the metrics table (its value column, in a window
#: 1,400 pixels wide, shows about 60).
WARNING_WIDTH = 55
#: Characters of a run id shown where room is short (the runs table, titles): its last 8
#: hex digits, random in a UUID 4 (the CLI's runs) and a UUID 7 (the ids Prefect's server
#: gives the runs its scheduler creates) alike. The first 8 of a UUID 7 are its creation
#: time and are the same for every run a schedule creates in one go (measured: 8 scheduled
#: runs all began ``01a20f3e``). ``report --run`` takes a unique start or end of an id.
RUN_ID_SHOWN = 8
#: The unequal-classes warning names the classes whose held-out labels the run finds fewer
#: of than this share, when the accuracy is no better than always answering the most common
#: given label, or at least ``BALANCED_GAP`` above the balanced accuracy.
MIN_RECALL = 0.5
BALANCED_GAP = 0.1
#: Fewer held-out labels than this: the accuracy is said to be uncertain (its 95% interval
#: is wider than ±0.1 at an accuracy of 0.9 below about 35 labels).
MIN_HOLDOUT = 30
#: A larger share of flagged given labels is said to point at the graph or the classes,
#: not at a few wrong labels.
MAX_FLAGGED_SHARE = 0.2

Section = tuple[str, tuple[str, ...], list[tuple[Any, ...]]]


# -- the summary --------------------------------------------------------------------------


def _run_fields(run: Mapping[str, Any] | LabelRunRecord) -> dict[str, Any]:
    if isinstance(run, LabelRunRecord):
        return {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}
    if not isinstance(run, Mapping):
        raise TypeError(f"run must be a mapping or a LabelRunRecord, got {type(run).__name__}")
    return dict(run)


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _timestamp(value: Any) -> pd.Timestamp | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    value = pd.Timestamp(value)
    return value.tz_convert("UTC").tz_localize(None) if value.tzinfo is not None else value


def summarise_run(run: Mapping[str, Any] | LabelRunRecord) -> dict[str, Any]:
    """The report's content from one run.

    Parameters
    ----------
    run : mapping or LabelRunRecord
        A row of ``GraphStore.read_runs`` (as a dict), the record a flow wrote, or a summary
        this function returned (summarising a summary gives the same summary).

    Returns
    -------
    dict
        The run's fields (``run_id``, ``dataset``, ``solver``, ``status``, ``error``,
        ``started_at``, ``finished_at``, ``parameters``, ``metrics``, ``timings``,
        ``versions``, ``n_nodes``, ``n_labeled``, ``n_flagged``) and what is derived from
        them: ``duration_seconds`` (``duration_at_least``: it is only a lower bound),
        ``n_unlabeled``, ``noise_share`` (flagged / given labels), ``mean_confidence``,
        ``holdout_accuracy``, ``n_unreachable``, ``class_distribution`` (list of
        ``(class, nodes, share)``, largest first) and ``other_metrics``. Values a run did
        not record are None.
    """
    fields = _run_fields(run)
    metrics = dict(fields.get("metrics") or {})
    started, finished = _timestamp(fields.get("started_at")), _timestamp(fields.get("finished_at"))
    n_nodes, n_labeled, n_flagged = (_number(fields.get(name)) for name in ("n_nodes", "n_labeled", "n_flagged"))
    counts = {str(label): int(n) for label, n in (metrics.get("class_counts") or {}).items()}
    total = sum(counts.values())
    distribution = [(label, n, n / total) for label, n in
                    sorted(counts.items(), key=lambda item: (-item[1], item[0]))] if total else []
    return {
        "run_id": fields.get("run_id"),
        "dataset": fields.get("dataset"),
        "solver": fields.get("solver"),
        "status": fields.get("status") or "completed",
        "error": fields.get("error") or None,
        "started_at": started,
        "finished_at": finished,
        "duration_seconds": (finished - started).total_seconds() if started is not None and finished is not None
        else None,
        # a run whose process was found gone: it ended after its last sign of life
        "duration_at_least": end_unseen(fields.get("error")),
        "parameters": dict(fields.get("parameters") or {}),
        "metrics": metrics,
        "timings": {str(k): float(v) for k, v in (fields.get("timings") or {}).items()},
        "versions": {str(k): str(v) for k, v in (fields.get("versions") or {}).items()},
        "n_nodes": None if n_nodes is None else int(n_nodes),
        "n_labeled": None if n_labeled is None else int(n_labeled),
        "n_flagged": None if n_flagged is None else int(n_flagged),
        "n_unlabeled": None if n_nodes is None or n_labeled is None else int(n_nodes - n_labeled),
        "noise_share": n_flagged / n_labeled if n_flagged is not None and n_labeled else None,
        "mean_confidence": _number(metrics.get("mean_confidence")),
        "holdout_accuracy": _number(metrics.get("holdout_accuracy")),
        "n_unreachable": None if _number(metrics.get("n_unreachable")) is None else int(metrics["n_unreachable"]),
        "n_holdout": None if _number(metrics.get("n_holdout")) is None else int(metrics["n_holdout"]),
        "holdout_ece": _number(metrics.get("holdout_ece")),
        "holdout_balanced_accuracy": shown_balanced_accuracy(metrics),
        "holdout_majority_class": metrics.get("holdout_majority_class"),
        "holdout_majority_accuracy": _number(metrics.get("holdout_majority_accuracy")),
        # (class, held-out labels, recall, precision), the most held out first
        "holdout_classes": sorted(((str(name), int(c["held_out"]), _number(c.get("recall")),
                                    _number(c.get("precision")))
                                   for name, c in (metrics.get("holdout_classes") or {}).items()),
                                  key=lambda row: (-row[1], row[0])),
        "confidence_histogram": {str(k): int(v) for k, v in (metrics.get("confidence_histogram") or {}).items()},
        "incremental": bool(metrics.get("incremental")),
        "full_run_reason": metrics.get("full_run_reason"),
        # the flow's own warnings (the graph built first, options not used, ...), as its log said them
        "run_warnings": [str(text) for text in metrics.get("run_warnings") or []],
        "class_distribution": distribution,
        "other_metrics": {k: v for k, v in sorted(metrics.items()) if k not in SHOWN_METRICS},
    }


def shown_balanced_accuracy(metrics: Mapping[str, Any]) -> float | None:
    """A run's balanced accuracy on its held-out labels, when they are of two classes or
    more (of one, it is the accuracy again), else None."""
    if len(metrics.get("holdout_classes") or {}) < 2:
        return None
    return _number(metrics.get("holdout_balanced_accuracy"))


def short_run_id(run_id: Any) -> str:
    """The run id as the runs table shows it: ``…`` and its last ``RUN_ID_SHOWN``
    characters (a short id whole)."""
    text = str(run_id)
    return text if len(text) <= RUN_ID_SHOWN else "…" + text[-RUN_ID_SHOWN:]


def run_summary(store, run_id: str) -> dict[str, Any]:
    """``summarise_run`` of the run ``run_id`` (its whole id, or a unique start or end of
    one run's id, as ``short_run_id`` shows it) read from ``store`` (a ``GraphStore``).

    Raises
    ------
    NotFound
        The store has no ``LabelRun`` with that id, or the piece starts or ends several.
    """
    runs = store.read_runs(run_id=run_id, limit=1)
    piece = run_id.removeprefix("…").removeprefix("...")
    if runs.empty and piece:  # a unique start, or end as the runs table shows them
        every = store.read_runs(limit=1_000_000)
        ids = every["run_id"].astype(str)
        runs = every[ids.str.startswith(piece) | ids.str.endswith(piece)]
        if len(runs) > 1:
            matched = runs["run_id"].astype(str).tolist()
            named = ", ".join(matched[:3]) + (", ..." if len(matched) > 3 else "")  # '...': runs left unnamed
            raise NotFound(f"run id {run_id!r} is the start or end of {len(runs)} runs ({named}):"
                           " give more of it")
    if runs.empty:
        raise NotFound(f"no run {run_id!r} in the store (graphlabel report --dataset NAME lists the runs)")
    return summarise_run(runs.iloc[0].to_dict())


# -- sections, shared by the terminal and markdown ----------------------------------------


def format_value(value: Any) -> str:
    """One cell: floats to 3 decimals, timestamps in UTC, None as a dash, dicts as JSON."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, pd.Timestamp):
        return f"{value:%Y-%m-%d %H:%M:%S} UTC"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _flatten(values: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Nested settings as dotted names; floats in full (a gamma of 1e-05 must not read 0.000)."""
    rows = []
    for name, value in values.items():
        if isinstance(value, Mapping) and value:
            rows.extend(_flatten(value, f"{prefix}{name}."))
        else:
            rows.append((f"{prefix}{name}", repr(value) if isinstance(value, float) else format_value(value)))
    return rows


def _parameter_rows(parameters: Mapping[str, Any], metrics: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The run's parameters as asked, and where the solver chose (``class_mass = "auto"``)
    what it chose, which it records as ``solver_NAME``: ``auto → smoothed``."""
    rows = _flatten({k: v for k, v in parameters.items() if k not in GRAPH_PARAMETERS})
    chosen = {f"solver_params.{name.removeprefix('solver_')}": value for name, value in metrics.items()
              if name.startswith("solver_") and isinstance(value, str)}
    return [(name, f"{value} → {chosen[name]}" if chosen.get(name, value) != value else value)
            for name, value in rows]


def _count(n: int | None) -> str:
    return MISSING if n is None else f"{n:,}"

def _of(part: int | None, whole: int | None, what: str = "") -> str:
    if part is None:
        return MISSING
    if not whole:
        return f"{part:,}"
    return f"{part:,} of {whole:,}{' ' + what if what else ''} ({part / whole:.1%})"


def run_kind(s: Mapping[str, Any]) -> str:
    """full or incremental, with the counts or the reason a person needs."""
    metrics = s["metrics"]
    if s["incremental"]:
        return (f"incremental: {_count(metrics.get('n_changed'))} changed ({_count(metrics.get('n_new'))} new),"
                f" {_count(metrics.get('n_region'))} relabelled of {_count(metrics.get('n_nodes'))}")
    return "full" + (f": {s['full_run_reason']}" if s["full_run_reason"] else "")


def headline_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What a person watching the job reads first: the accuracy on the held-out labels and
    its size, the flagged labels and their share, the unlabelled nodes reached, coverage."""
    s = summarise_run(summary)
    rows = [("status", s["status"])]
    if s["error"]:
        rows.append(("error", s["error"]))
        return rows
    if s["holdout_accuracy"] is not None:
        rows.append(("accuracy on held-out labels", f"{s['holdout_accuracy']:.3f} on {_count(s['n_holdout'])} labels"
                     + (f" (ECE {s['holdout_ece']:.3f})" if s["holdout_ece"] is not None else "")))
        if s["holdout_balanced_accuracy"] is not None:
            rows.append(("balanced accuracy (mean recall)", f"{s['holdout_balanced_accuracy']:.3f}; always answering"
                         f" {s['holdout_majority_class']!r} scores {s['holdout_majority_accuracy']:.3f}"))
    rows.append(("labels flagged as noisy", _of(s["n_flagged"], s["n_labeled"], "given")))
    unreachable = s["n_unreachable"] or 0
    if s["n_unlabeled"] is not None:
        rows.append(("unlabelled nodes reached", _of(max(s["n_unlabeled"] - unreachable, 0), s["n_unlabeled"])))
    if s["n_nodes"] is not None:
        rows.append(("coverage", _of(s["n_nodes"] - unreachable, s["n_nodes"], "nodes labelled")))
    rows.append(("mean confidence", format_value(s["mean_confidence"])))
    rows.append(("run", run_kind(s)))
    return rows


def statistics_warnings(summary: Mapping[str, Any] | LabelRunRecord, unreached: bool = True) -> list[str]:
    """Plain words where the numbers cannot carry the weight a reader may give them;
    without ``unreached``, not the one about nodes no label reaches (the flow's log says it
    in its own warning, with what to do)."""
    s = summarise_run(summary)
    out = []
    n, accuracy = s["n_holdout"], s["holdout_accuracy"]
    if accuracy is not None and n is not None and n < MIN_HOLDOUT:
        margin = 1.96 * math.sqrt(max(accuracy * (1 - accuracy), 0.25 / max(n, 1)) / max(n, 1))
        out.append(f"the accuracy rests on only {counted(n, 'held-out label')}: it is uncertain by about ±{margin:.2f}"
                   f" (95%); hold out {MIN_HOLDOUT} or more before trusting it")
    out += _unequal_classes_warnings(s)
    if s["noise_share"] is not None and s["noise_share"] > MAX_FLAGGED_SHARE:
        out.append(f"{s['noise_share']:.0%} of the given labels are flagged as noisy (more than"
                   f" {MAX_FLAGGED_SHARE:.0%}): the graph or the classes are more likely wrong than that many labels")
    if unreached and s["n_unreachable"] and s["n_nodes"]:
        out.append(f"{s['n_unreachable']:,} nodes ({s['n_unreachable'] / s['n_nodes']:.1%}) are reached by no"
                   f" label and have no prediction")
    return out


def report_warnings(summary: Mapping[str, Any] | LabelRunRecord) -> list[str]:
    """Every warning a run's report shows: the flow's own, which its record keeps (a graph
    built first, options the graph was not built with, nodes no label reaches...; before,
    only the log said them, after the report was published), then ``statistics_warnings``
    (the unreached nodes once: a record that kept the flow's warnings holds its own line)."""
    s = summarise_run(summary)
    return s["run_warnings"] + statistics_warnings(s, unreached="run_warnings" not in s["metrics"])


def _unequal_classes_warnings(s: Mapping[str, Any]) -> list[str]:
    """What the accuracy on the held-out labels hides when the classes' sizes differ: an
    accuracy no better than always answering the most common given label, or one far above
    the balanced accuracy because a class is mostly missed (spectral on a cosine graph of
    ReutersCorn's word counts: accuracy 0.974, 2 of the 22 held-out corn articles found)."""
    accuracy, balanced = s["holdout_accuracy"], s["holdout_balanced_accuracy"]
    baseline, majority = s["holdout_majority_accuracy"], s["holdout_majority_class"]
    if accuracy is None or balanced is None or baseline is None:
        return []
    missed = [f"{name!r} {round(recall * n):,} of {n:,}" for name, n, recall, _ in s["holdout_classes"]
              if recall is not None and recall < MIN_RECALL]
    few = (f"it finds less than {MIN_RECALL:.0%} of some classes' held-out labels: {', '.join(missed[:3])}"
           + (f" and {len(missed) - 3:,} more classes" if len(missed) > 3 else "")
           + " (the held-out labels per class in graphlabel report --run)")
    if accuracy <= baseline:
        said = (f"the accuracy ({accuracy:.3f}) is no better than always answering {majority!r}, the most common"
                f" given label ({baseline:.3f} of the held-out labels)")
        if missed:
            return [f"{said}, and {few}{_auto_remedy(s)}"]
        return [f"{said}, which never finds another class; this run finds at least {MIN_RECALL:.0%} of every"
                f" class's held-out labels: with classes this unequal, read the balanced accuracy ({balanced:.3f},"
                " the mean of the classes' recall)"]
    if missed and accuracy - balanced >= BALANCED_GAP:
        return [f"the accuracy ({accuracy:.3f}) rests on the most common classes, and the balanced accuracy (the"
                f" mean of the classes' recall) is {balanced:.3f}: {few}{_auto_remedy(s)}"]
    return []


def _auto_remedy(s: Mapping[str, Any]) -> str:
    """For ``--solver auto`` scored by accuracy, the scoring that chooses for every class."""
    asked = s["parameters"].get("requested_solver_params")
    scoring = asked.get("scoring", "accuracy") if isinstance(asked, Mapping) else "accuracy"
    if s["solver"] != "auto" or scoring != "accuracy":
        return ""
    return ("; auto chose by accuracy: --params '{\"scoring\": \"balanced_accuracy\"}' has it choose by the classes'"
            " mean recall")


def _metric(value: Any, name: str = "") -> str:
    """A metric's cell: 4 significant digits, counts with thousands separators, shares in
    per cent and durations in seconds (by the metric's name)."""
    if isinstance(value, bool) or value is None:
        return format_value(value)
    if isinstance(value, (int, float)) and name.endswith("_share"):
        return f"{value:.1%}"
    if isinstance(value, (int, float)) and name.endswith("_seconds"):
        return f"{value:.3f} s"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return format_value(value)


#: The graph the run used, as its build recorded it (``flows.labelling.graph_used``), shown
#: in their own table: the scale and the user's edges were among the parameters "as asked",
#: though the record holds the ones used there.
GRAPH_PARAMETERS = ("graph", "k", "metric", "weights", "scale", "delta", "sigma", "edges_type", "edges_property",
                    "edges_weight", "graph_built_at")


def metric_name(key: str) -> str:
    """The name a report gives the metric ``key``: its ``METRIC_NAMES`` entry, else the key
    in words (``solver_amg_fallbacks``: "solver: amg fallbacks", the solver's own number; a
    key ending ``_seconds`` is a time, shown in seconds)."""
    if key in METRIC_NAMES:
        return METRIC_NAMES[key]
    if "." in key:  # a mapping's entry (``_flatten_values``): ``auto_scores.lcsnc``
        head, entry = key.split(".", 1)
        return f"{metric_name(head)} {entry}" if head == "auto_scores" else f"{metric_name(head)}: {entry}"
    words = key.removesuffix("_seconds") + ("_time" if key.endswith("_seconds") else "")
    if words.startswith("solver_"):
        return "solver: " + words.removeprefix("solver_").replace("_", " ")
    return words.replace("_", " ")


def _graph_rows(parameters: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The graph the run used, rounded (a σ of 27.46, not 27.46446977460151) and its build
    time in UTC, to the second."""
    rows = []
    for name in GRAPH_PARAMETERS:
        value = parameters.get(name)
        if value is None:
            continue
        if name == "graph_built_at":
            rows.append(("built at", format_value(_timestamp(value))))
        else:
            rows.append((name, _metric(value)))
    return rows


def _run_rows(s: Mapping[str, Any]) -> list[tuple[str, str]]:
    duration = s["duration_seconds"]
    metrics = s["metrics"]
    failed = s["status"] == "failed"
    nodes = _count(s["n_nodes"])
    if s["incremental"] and metrics.get("n_nodes") is not None:
        nodes = f"{nodes} relabelled of {_count(metrics['n_nodes'])}"
    given = _of(s["n_labeled"], s["n_nodes"], "nodes")
    if s["n_holdout"]:
        given += f"; {s['n_holdout']:,} more held out to score the run"
    return [("run id", format_value(s["run_id"])), ("dataset", format_value(s["dataset"])),
            ("solver", format_value(s["solver"])), ("status", s["status"]),
            ("started", format_value(s["started_at"])), ("finished", format_value(s["finished_at"])),
            ("duration", MISSING if duration is None else
             f"at least {duration:.1f} s (to its last sign of life: its end was not seen)"
             if s["duration_at_least"] else f"{duration:.1f} s"),
            # a failed run stopped before it counted anything: its zeros are not counts
            ("nodes", MISSING if failed else nodes), ("given labels", MISSING if failed else given)]


def report_sections(summary: Mapping[str, Any]) -> list[Section]:
    """The report as ``(title, column headers, rows)`` sections, every cell a string: the
    headline and any warnings first, then the run, the distributions, stage times, graph,
    parameters, versions and the other metrics. Empty sections are left out."""
    s = summarise_run(summary)
    histogram = s["confidence_histogram"]
    total = sum(histogram.values())
    sections: list[Section] = [
        ("headline", ("what", "value"), headline_rows(s)),
        ("warnings", ("warning",), [(text,) for text in report_warnings(s)]),
        ("run", ("field", "value"), _run_rows(s)),
        ("class distribution (predicted)", ("class", "nodes", "share"),
         [(label, f"{n:,}", f"{share:.1%}") for label, n, share in s["class_distribution"]]),
        ("held-out labels per class", ("class", "held out", "recall", "precision"),
         [(name, f"{n:,}", format_value(recall), format_value(precision))
          for name, n, recall, precision in s["holdout_classes"]] if len(s["holdout_classes"]) > 1 else []),
        ("confidence", ("confidence", "nodes", "share"),
         [(bin_, f"{n:,}", f"{n / total:.1%}") for bin_, n in histogram.items()] if total else []),
        ("time per stage", ("stage", "seconds"), [(stage, f"{sec:.3f}") for stage, sec in s["timings"].items()]),
        ("graph used", ("parameter", "value"), _graph_rows(s["parameters"])),
        # as asked: a first run is full with full = false (the run section and the headline say
        # what the run did; a failed run's "full false" under a "· full" name read as a contradiction)
        ("parameters (as asked)", ("parameter", "value"), _parameter_rows(s["parameters"], s["other_metrics"])),
        ("versions", ("library", "version"),
         [(LIBRARY_NAMES.get(name, name), version) for name, version in s["versions"].items()]),
        ("other metrics", ("metric", "value"), [(metric_name(name), _metric(value, name))
                                                for name, value in _flatten_values(s["other_metrics"])]),
    ]
    return [section for section in sections if section[2]]


def _flatten_values(values: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for name, value in values.items():
        if isinstance(value, Mapping) and value:
            rows.extend(_flatten_values(value, f"{prefix}{name}."))
        else:
            rows.append((f"{prefix}{name}", value))
    return rows


def metrics_rows(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    """The run's numbers as named, rounded rows, headline first (the Prefect table
    artifact): headline, warnings, predicted classes, confidence bins, then the rest."""
    rows = []
    for name, text in [*headline_rows(summary), *(("warning", text) for text in report_warnings(summary))]:
        # a long text over rows of WARNING_WIDTH characters: Prefect's table cuts a long cell
        # at the column's edge, without wrapping (seen in Chromium, Prefect 3.8.8's UI; a
        # failed run's error was cut at "needs at least two classe", a walk through the UI)
        lines = textwrap.wrap(text, WARNING_WIDTH) if name in ("error", "warning") else [text]
        rows += [{"metric": name if i == 0 else "", "value": line} for i, line in enumerate(lines)]
    for title, _, section in report_sections(summary):
        if title == "class distribution (predicted)":
            rows += [{"metric": f"predicted {label}", "value": f"{n} ({share})"} for label, n, share in section]
        elif title == "held-out labels per class":
            rows += [{"metric": f"held-out {name}",
                      "value": f"recall {recall}, precision {precision} ({n} {'label' if n == '1' else 'labels'})"}
                     for name, n, recall, precision in section]
        elif title == "confidence":
            rows += [{"metric": f"confidence {bin_}", "value": f"{n} {'node' if n == '1' else 'nodes'} ({share})"}
                     for bin_, n, share in section]
        elif title == "other metrics":
            rows += [{"metric": name, "value": value} for name, value in section]
    return rows


def headline_text(summary: Mapping[str, Any] | LabelRunRecord, named: bool = True) -> str:
    """The headline in one line (the run's log); without ``named``, the numbers alone, so a
    card that shows the first 50 characters (Prefect's artifact list, where the artifact's
    key names the dataset) shows the accuracy, not the dataset's name again."""
    s = summarise_run(summary)
    name = f"{s['dataset']} · {s['solver']}: " if named else ""
    if s["error"]:
        return f"{name}failed: {' '.join(s['error'].split())[:200]}"
    parts = []
    if s["metrics"].get("no_better_than_guessing"):  # the run's warnings say it whole
        parts.append(f"no better than guessing {s['metrics']['no_better_than_guessing']}")
    if s["holdout_accuracy"] is not None:
        parts.append(f"accuracy {s['holdout_accuracy']:.3f} on {_count(s['n_holdout'])} held-out labels")
    flagged = f"{MISSING} labels" if s["n_flagged"] is None else counted(s["n_flagged"], "label")
    parts.append(f"{flagged} flagged" + (f" ({s['noise_share']:.1%})" if s["noise_share"] is not None else ""))
    if s["n_nodes"]:
        covered = (s["n_nodes"] - (s["n_unreachable"] or 0)) / s["n_nodes"]
        total = s["metrics"].get("n_nodes")
        if s["incremental"] and total is not None:  # the run's nodes are the relabelled region
            parts.append(f"{s['n_nodes']:,} of {total:,} nodes relabelled, {covered:.1%} of them labelled")
        else:
            parts.append(f"{covered:.1%} of {s['n_nodes']:,} nodes labelled")
    return name + "; ".join(parts)


def _markdown_cell(text: str) -> str:
    """``text`` as one table cell that shows it as it is: a paragraph's escapes
    (``_markdown_text``), and a '|' would end the cell."""
    return _markdown_text(text).replace("|", "\\|")


def run_report_markdown(run: Mapping[str, Any] | LabelRunRecord) -> str:
    """The run's summary as markdown (for ``prefect.artifacts.create_markdown_artifact``).

    Parameters
    ----------
    run : mapping or LabelRunRecord
        Anything ``summarise_run`` takes: a summary, a ``read_runs`` row, a record.

    Returns
    -------
    str
        A ``#`` title and one ``##`` table per section of ``report_sections`` (the warnings
        a list).
    """
    summary = summarise_run(run)
    # the whole id is in the run section; the title stays one line in the UI. The headline
    # table comes next (the artifact's description carries the headline in one line)
    lines = [f"# {summary['dataset']} · {summary['solver']}, {summary['status']}"
             f" (run `{short_run_id(summary['run_id'])}`)", ""]
    if summary["error"]:
        # a paragraph, where the headline's table cell ran off the Prefect UI's page at its
        # first hundred characters (a solver's advice, at the end, was not seen)
        lines += [f"> {_markdown_text(summary['error'])}", ""]
    for title, headers, rows in report_sections(summary):
        if title == "warnings":  # sentences, as a list: a table cut them at the page's edge
            lines += [f"## {title.capitalize()}", "", *(f"- {_markdown_text(text)}" for text, in rows), ""]
            continue
        lines += [f"## {title.capitalize()}", "",
                  "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(_markdown_cell(cell) for cell in _in_full_above(title, row)) + " |"
                  for row in rows]
        lines.append("")
    return "\n".join(lines)


#: The marks markdown acts on in a paragraph or a table cell: emphasis, code, HTML, links, a
#: heading or quote. An underscore inside a word (``gamma_g``, ``my_data``) is left as it is:
#: CommonMark reads no emphasis there, and the file stays readable as text.
MARKDOWN_MARKS = re.compile(r"[\\`*<>\[\]#]|(?<![^\W_])_|_(?![^\W_])")


def _markdown_text(text: str) -> str:
    """``text`` as one markdown paragraph that shows it as it is, the lines joined: the marks
    markdown acts on there escaped (``MARKDOWN_MARKS``), not the rest, so the file stays
    readable as text (a path keeps its slashes)."""
    return MARKDOWN_MARKS.sub(lambda mark: "\\" + mark.group(), " ".join(text.split()))


def _in_full_above(title: str, row: tuple) -> tuple:
    """The headline's error row of the markdown report names the paragraph that holds it."""
    return (row[0], "in full above") if title == "headline" and row[0] == "error" else row


# -- terminal (rich) ----------------------------------------------------------------------

STATUS_STYLE = {"completed": "green", "running": "yellow", "failed": "bold red"}


def _text(cell: str, style: str = ""):
    """A cell as plain text: a message like "bad value [x]" must not be read as rich markup."""
    from rich.text import Text

    return Text(cell, style=style)


def run_report_renderables(summary: Mapping[str, Any]) -> list:
    """The run's summary as rich renderables: a rule, then one titled table per section
    (the title on a line of its own: as a table's title it wrapped to the table's width,
    "class distribution" over "(predicted)")."""
    from rich.rule import Rule
    from rich.table import Table
    from rich.text import Text

    summary = summarise_run(summary)
    style = STATUS_STYLE.get(summary["status"], "")
    title = Text.assemble((f"run {short_run_id(summary['run_id'])}", "bold"),
                          f": {summary['dataset']} · {summary['solver']}, ", (summary["status"], style))
    out: list = [Rule(title)]
    for name, headers, rows in report_sections(summary):
        out.append(Text(name, style="bold"))
        table = Table(*headers, show_edge=False)
        for row in rows:
            emphasis = style if name in ("run", "headline") and row[0] in ("status", "error") else \
                "yellow" if name == "warnings" else ""
            table.add_row(*(_text(cell, emphasis) for cell in row))
        out.append(table)
    return out


def runs_table(runs: pd.DataFrame, title: str = "runs"):
    """A rich table of ``read_runs`` rows, newest first, one line per run, in 80 columns (one
    space between columns: with two, a 1,000,000-node maxmargin run took 87 and its time was cut):
    run ids cut to their last characters (``short_run_id``; ``report --run`` takes them),
    a failed run's numbers as dashes (its error: ``failed_runs``)."""
    from rich import box
    from rich.table import Table

    table = Table(title=f"{title} (times in UTC)", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 0, 0, 0),
                  pad_edge=False, show_edge=False)
    for name in ("run", "started", "status", "solver", "kind", "nodes", "flagged", "acc.", "time"):
        table.add_column(name, no_wrap=True, justify="right" if name in ("nodes", "flagged", "time") else "left")
    for row in runs.to_dict("records"):
        s = summarise_run(row)
        duration = s["duration_seconds"]
        failed = s["status"] == "failed"
        table.add_row(_text(short_run_id(s["run_id"])),
                      MISSING if s["started_at"] is None else f"{s['started_at']:%m-%d %H:%M}",
                      _text(s["status"], STATUS_STYLE.get(s["status"], "")), _text(format_value(s["solver"])),
                      "incr." if s["incremental"] else "full",
                      MISSING if failed else _count(s["n_nodes"]),
                      MISSING if failed else _count(s["n_flagged"]),
                      MISSING if failed or s["holdout_accuracy"] is None else f"{s['holdout_accuracy']:.3f}",
                      MISSING if duration is None else f"{'≥' * s['duration_at_least']}{duration:.1f} s")
    return table


def failed_runs(runs: pd.DataFrame) -> list[tuple[str, str]]:
    """(short run id, error) of the failed runs among ``read_runs`` rows."""
    return [(short_run_id(row["run_id"]), row.get("error") or "no error recorded")
            for row in runs.to_dict("records") if row.get("status") == "failed"]


def explained_node(store, dataset: str, key: str, limit: int = 10) -> tuple[dict[str, Any], pd.DataFrame]:
    """``store.explain(dataset, key, limit)``; ``NotFound`` names the dataset's typo
    (``unknown_dataset``) when no node belongs to it, else the key's."""
    try:
        return store.explain(dataset, key, limit)
    except NotFound:
        if not store.count_nodes(dataset):  # a typo in the dataset, not in the key
            raise store.unknown_dataset(dataset) from None
        raise


def explanation_renderables(node: Mapping[str, Any], neighbours: pd.DataFrame) -> list:
    """``GraphStore.explain``'s result as rich renderables: the node's label and provenance,
    the class shares of its weighted degree, and the strongest neighbours."""
    from rich.table import Table

    about = Table("field", "value", title=_text(f"node {node['key']!r} of dataset {node['dataset']!r}"),
                  title_justify="left", show_edge=False)
    noise, given = node.get("label_noise"), node.get("given_label")
    # a given label's own rows: how strongly the run doubts it (review ranks by it), and
    # whether a reviewer vouched for it (review then lists it no more)
    doubt = (("noise score", _number(node.get("label_noise_score"))),
             ("reviewed", "yes: a reviewer vouched for it" if node.get("label_accepted") == given else "no"))\
        if given is not None else ()
    for name, value in (("given label", given), ("predicted label", node.get("predicted_label")),
                        ("confidence", _number(node.get("label_confidence"))),
                        ("flagged as noisy", None if noise is None else bool(noise)), *doubt,
                        ("run id", node.get("label_run_id")), ("solver", node.get("label_solver")),
                        ("labelled at", node.get("labelled_at")),
                        ("neighbours", node.get("n_neighbours")), ("weighted degree", node.get("degree"))):
        about.add_row(name, _text(format_value(value)))
    by_scores, by_labels = node.get("score_shares", {}), node.get("class_shares", {})
    # by scores: an unlabelled neighbour's weight spread by its scores, as propagation
    # averages them; by labels: its given label, else its predicted one (README, explain)
    shares = Table("class", "by their scores", "by their labels",
                   title="the neighbours' vote: share of the weighted degree per class", title_justify="left")
    for label in [*by_scores, *(label for label in by_labels if label not in by_scores)]:
        mark = " ← predicted" if label is not None and label == node.get("predicted_label") else ""
        shares.add_row(_text(format_value(label) + mark), f"{by_scores.get(label, 0.0):.1%}",
                       f"{by_labels.get(label, 0.0):.1%}")
    strongest = Table("neighbour", "weight", "share", "given label", "predicted label", "agrees",
                      title=f"strongest {len(neighbours)} of {node.get('n_neighbours', len(neighbours))} neighbours",
                      title_justify="left")
    for row in neighbours.itertuples(index=False):
        strongest.add_row(_text(str(row.key)), f"{row.weight:.4g}", f"{row.share:.1%}",
                          _text(format_value(row.given_label)), _text(format_value(row.predicted_label)),
                          "yes" if row.agrees else "no")
    if "support_vectors" in node:
        per_class = ", ".join(f"{label} {share:.1%}" for label, share in node["support_class_shares"].items())
        support = Table("support vector", "trained as", "share", title=f"the SVM's pull at this node: strongest"
                        f" {len(node['support_vectors'])} of {node['n_support_vectors']} support vectors"
                        f" (per class: {per_class})", title_justify="left")
        for vector in node["support_vectors"]:
            support.add_row(_text(vector["key"] or "(an anchor)"), _text(vector["label"]), f"{vector['share']:.1%}")
        return [about, shares, strongest, support]
    if "cut_edges" not in node:
        return [about, shares, strongest]
    cut = Table("neighbour", "weight", "label", title=f"cut edges ({node.get('label_solver')}): weight"
                f" {node['cut_weight']:.4g} to the other side, {node['cut_share']:.1%} of the weighted degree",
                title_justify="left")
    for edge in node["cut_edges"]:
        cut.add_row(_text(str(edge["key"])), f"{edge['weight']:.4g}", _text(format_value(edge["label"])))
    return [about, shares, strongest, cut]


def jobs_renderables(jobs) -> list:
    """The jobs of a schedule (``graphlabel.schedule.Job``) as rich tables, one per job with
    every field, so ``serve --check`` shows what will run in 80 columns."""
    from rich.table import Table

    out = []
    for job in jobs:
        table = Table("field", title=_text(f"job {job.name}"), title_justify="left", show_edge=False)
        table.add_column("value", overflow="fold")  # a long store path wraps, never cut
        next_run = job.next_run  # computed as the server's scheduler computes it: once
        rows = (("dataset", job.dataset), ("schedule", job.schedule),
                *((("next run", next_run),) if next_run else ()), ("solver", job.solver),
                ("solver params", job.solver_params or None), ("graph", job.graph), ("k", job.k),
                ("metric", job.metric), ("weights", job.weights),
                # a schedule's run rebuilds the graph: scaled (and searched) as the job says
                ("scale", job.scale or "standard"), ("search", job.search or "auto"),
                *((("edges weight", job.edges_weight if job.edges_weight is not None else 1.0),)
                  if "+edges" in str(job.graph) else ()),
                ("sigma", job.sigma if job.sigma is not None else "from the data (median k-th neighbour distance)"),
                ("delta", job.delta), ("runs", "full" if job.full or job.holdout else
                                      "incremental (first run full)" if job.full is None else "incremental"),
                ("holdout", f"{job.holdout:.0%} of each class's given labels, rounded down"  # hold_out's quota
                             if job.holdout else None),
                ("keep runs", job.keep_runs if job.keep_runs else "all"),
                ("store", job.store_uri or "$GRAPHLABEL_STORE (else .graphlabel)"))
        for name, value in rows:
            table.add_row(name, _text(format_value(value)))
        out.append(table)
    return out


def _query_cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return MISSING
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, (list, tuple, dict)):
        return _json_text(value)
    if isinstance(value, float):  # numpy's float64 is one; 17 digits wrapped over two lines on the walk
        return f"{value:.6g}"
    return str(value)


def _json_ready(value: Any) -> Any:
    """A query's cell as JSON-ready data: floats in full, nulls (and NaN) as None, timestamps
    in ISO 8601, lists and maps (a node, a relationship) item by item."""
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, datetime):  # pandas' Timestamp is one
        return value.isoformat()
    if isinstance(value, dict):
        return {str(key): _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    return value.item() if hasattr(value, "item") and not isinstance(value, (bytes, str)) else value


def _json_text(value: Any) -> str:
    return json.dumps(_json_ready(value), ensure_ascii=False, default=str)


def query_table(frame: pd.DataFrame):
    """A query's rows as a rich table: every value in full (long ones wrap, never cut with
    an ellipsis) but floats, to 6 significant digits (``--format csv`` and ``json`` give
    them in full), nulls as a dash."""
    from rich.table import Table

    table = Table(show_edge=False)
    for column in frame.columns:
        table.add_column(str(column), overflow="fold")
    for row in frame.itertuples(index=False):
        table.add_row(*(_text(_query_cell(value)) for value in row))
    return table


def query_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A query's rows as JSON-ready dicts (``_json_ready``; ``json.dump(..., default=str)``
    writes the rest)."""
    return [{str(key): _json_ready(value) for key, value in row.items()}
            for row in frame.astype(object).to_dict("records")]


def query_csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A query's rows for CSV: a list or a map in a cell becomes JSON text, which other
    programs parse (Python's repr, "['a', 'b']", they cannot); nulls stay empty cells."""
    nested = [name for name in frame.columns if frame[name].dtype == object
              and frame[name].map(lambda value: isinstance(value, (list, tuple, dict))).any()]
    return frame.assign(**{str(name): frame[name].map(
        lambda value: _json_text(value) if isinstance(value, (list, tuple, dict)) else value) for name in nested})


def review_renderables(rows: pd.DataFrame, explained: list) -> list:
    """``graphlabel review``'s table in 80 columns: per flagged given label (most doubted
    first) its key, given and predicted label, noise score, and the neighbours' vote by
    scores (the classes' shares of its weighted degree, ``GraphStore.explain``'s
    ``score_shares``: the vote by labels showed flagged labels as backed by neighbours
    whose own labels leaned on them) with its strongest neighbours as ``key:label``."""
    from rich.table import Table

    table = Table("key", "given", "predicted", "noise", "neighbours' vote", "strongest neighbours",
                  title=f"{counted(len(rows), 'flagged given label')}, most doubted first", title_justify="left")
    for row, (node, neighbours) in zip(rows.itertuples(index=False), explained, strict=True):
        vote = ", ".join(f"{format_value(label)} {share:.0%}"
                         for label, share in list((node.get("score_shares") or node.get("class_shares", {}))
                                                  .items())[:2])
        strongest = ", ".join(f"{key}:{format_value(label)}"
                              for key, label in zip(neighbours["key"], neighbours["label"], strict=True))
        score = _number(row.label_noise_score)
        table.add_row(_text(str(row.key)), _text(format_value(row.given_label)),
                      _text(format_value(row.predicted_label)), "—" if score is None else f"{score:.2f}",
                      _text(vote), _text(strongest))
    return [table]
