"""What a labelling run shows in the Prefect UI: a table of its numbers (headline first,
named and rounded rows), a markdown report with a link to each stage's task run, and its
reliability plot (accuracy per confidence bin on the held-out labels, the number of labels
in each bin and the ECE) or, without a holdout, its confidence histogram, with the numbers
drawn. A failed run publishes the three too (status and error), so a dataset's latest
report never shows an older success as if it were the last word.

The plot is a markdown artifact with the PNG inside and its numbers in a table below:
Prefect's image artifact prints its URL under the image, and a data URL of 40 kB ran off
the page, over the run's details beside it (seen in Chromium, Prefect 3.8.8's UI).

Artifact keys are ``label-DATASET-metrics`` / ``-report`` / ``-reliability`` (lowercase,
as Prefect requires), so the Artifacts page keeps one history per dataset; each
description carries the run's headline, numbers first (the artifact list shows about 50
characters of it).

Publishing is three API calls and one small figure (bench/cli.py ``--with-server``
measures it beside the labelling): 0.4 to 0.6 s for wine and the digits on the shared
2-core VM at a load of 2 to 3, about 0.2 s of it the plot, against 0.8 to 1.0 s of
labelling (export, solve, write-back); no waiting for the server to list the
task runs (their ids are recorded as the flow runs them, ``flows.direct.STAGE_RUNS``). An
incremental run that relabelled nothing publishes no new plot: the predictions it would
draw are the last one's.
"""

from __future__ import annotations

import base64
import io
import re
import textwrap

import numpy as np
import pandas as pd
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.settings import PREFECT_UI_URL

from graphstore import LabelRunRecord
from labelling.records import NAMED_CLASSES
from labelling.reporting import (
    headline_text,
    metrics_rows,
    run_report_markdown,
    short_run_id,
    summarise_run,
)
from labelling.wording import named


def artifact_key(dataset: str, what: str) -> str:
    """Prefect keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]+", "-", f"label-{dataset}-{what}".lower()).strip("-")


def stage_links(stages: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(task run name, UI link) of each stage the flow ran, in the order it ran them."""
    base = (PREFECT_UI_URL.value() or "").rstrip("/")
    return [(name, f"{base}/runs/task-run/{task_run_id}") for name, task_run_id in stages]


def _bins(index: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """Lower edges and widths of bins named ``"0.5-0.6"`` (``labelling.evaluation``)."""
    edges = np.array([[float(x) for x in str(name).split("-")] for name in index]).reshape(-1, 2)
    return edges[:, 0], edges[:, 1] - edges[:, 0]


def _reliability_figure(reliability: pd.DataFrame, ece: float | None, title: str):
    """Guo et al. (2017)'s reliability diagram: per confidence bin, a bar of the accuracy
    on the held-out labels in it and a black line at their mean confidence (a calibrated
    run's line sits on its bar's top, and both on the diagonal), each bar's accuracy written
    at its foot; below, the number of held-out labels in each bin, so a bar of one label is
    not read like one of 185. A line through the bins, as drawn before, jumped between
    bins of 1 and 2 labels like a trend; its counts sat on the axis' tick labels."""
    from matplotlib.figure import Figure

    lows, widths = _bins(reliability.index)
    middles = lows + widths / 2
    accuracy, confidence = reliability["accuracy"].to_numpy(float), reliability["mean_confidence"].to_numpy(float)
    counts = reliability["count"].to_numpy(int)
    fig = Figure(figsize=(8, 6.5))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.1]})
    top.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfectly calibrated")
    top.bar(lows, accuracy, width=widths, align="edge", color="#4c72b0", edgecolor="white",
            label="accuracy in the bin")
    top.hlines(confidence, lows + 0.01, lows + widths - 0.01, colors="black", linewidth=2.5,
               label="their mean confidence")
    for x, y in zip(middles, accuracy):  # at the bar's foot: its top may carry the black line
        top.text(x, 0.02, f"{y:.2f}", ha="center", va="bottom", fontsize=10, color="white" if y > 0.09 else "black")
    top.set_ylim(0, 1.02)
    top.set_yticks(np.linspace(0, 1, 6))
    top.set_ylabel("accuracy", fontsize=12)
    # above the plot, not on it: a bar may stand anywhere
    top.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=9, frameon=False)
    n = int(counts.sum())
    ece_text = f": ECE {ece:.3f}" if ece is not None else ""
    top.set_title(f"{title}reliability on {n:,} held-out labels{ece_text}", fontsize=13, pad=24)
    top.grid(alpha=0.3)
    bars = bottom.bar(lows, counts, width=widths, align="edge", color="#8c8c8c", edgecolor="white")
    bottom.bar_label(bars, labels=[f"{c:,}" for c in counts], fontsize=10, padding=2)
    bottom.set_ylim(0, max(counts.max(initial=1) * 1.35, 1))
    bottom.set_ylabel("held-out\nlabels", fontsize=12)
    bottom.set_xlabel("confidence", fontsize=12)
    bottom.set_xlim(0, 1)
    bottom.set_xticks(np.linspace(0, 1, 11))
    bottom.grid(alpha=0.3, axis="x")
    bottom.yaxis.set_major_formatter("{x:,.0f}")
    fig.subplots_adjust(left=0.125, right=0.97, top=0.875, bottom=0.085, hspace=0.1)  # see plot_png
    return fig


def _histogram_figure(histogram: dict[str, int], title: str, what: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5.5))
    ax = fig.subplots()
    bars = ax.bar(list(histogram), list(histogram.values()), color="#4c72b0")
    ax.bar_label(bars, fmt="{:,.0f}", fontsize=10, padding=2)
    ax.set_ylim(0, max(max(histogram.values(), default=1) * 1.12, 1))
    ax.set_xlabel("confidence", fontsize=12)
    ax.set_ylabel("nodes", fontsize=12)
    ax.set_title(f"{title}confidence of {sum(histogram.values()):,} {what}", fontsize=13)
    ax.tick_params(axis="x", labelsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.yaxis.set_major_formatter("{x:,.0f}")
    fig.subplots_adjust(left=0.11, right=0.98, top=0.93, bottom=0.1)  # see plot_png
    return fig


def plot_png(reliability: pd.DataFrame | None, histogram: dict[str, int], ece: float | None = None,
             title: str = "", what: str = "nodes") -> bytes:
    """The reliability diagram when a holdout scored the run (``_reliability_figure``),
    else the confidence histogram of the run's ``what`` with each bar's count.

    Drawn on a ``matplotlib.figure.Figure`` without pyplot, as matplotlib advises outside a
    GUI: pyplot keeps global figures, and importing it reads its style library inside
    ``warnings.catch_warnings(record=True)``, which before Python 3.14 takes the warnings of
    every thread. Imported beside a running solve (``_warm_publishing``), it swallowed the
    solver's warning that its labelling was no better than a guess (a CI run)."""
    if reliability is not None and len(reliability):
        fig = _reliability_figure(reliability, ece, title)
    else:
        fig = _histogram_figure(histogram, title, what)
    # the figures set their margins themselves: tight_layout draws the figure once more to
    # measure it, a third of the plot's cost (0.29 s against 0.20 s, measured on this VM)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()


def plot_markdown(summary: dict, reliability: pd.DataFrame | None, run_id: str) -> str:
    """The plot artifact's markdown: a line saying how to read it, the PNG, and the plotted
    numbers as a table; for a failed run, its error and no plot."""
    title = f"{summary['dataset']} · {summary['solver']}"
    if summary["status"] == "failed":
        # in a code block: an error's `x_*` or `**` must not turn into emphasis; wrapped at
        # 80 characters, as the UI's code block does not wrap (it cut the line at the edge)
        error = (summary["error"] or "no error recorded").replace("```", "'''")
        error = "\n".join(textwrap.fill(line, 80) for line in error.splitlines())
        return f"# {title}: run `{short_run_id(run_id)}` failed, nothing to plot\n\n```text\n{error}\n```\n"
    incremental = summary["incremental"]
    what = "relabelled nodes" if incremental else "nodes"
    png = plot_png(reliability, summary["confidence_histogram"], summary["holdout_ece"], f"{title}: ", what)
    image = f"![{title}](data:image/png;base64,{base64.b64encode(png).decode()})"
    if reliability is not None and len(reliability):
        lines = [f"# {title}: reliability on {int(reliability['count'].sum()):,} held-out labels", "",
                 "Each bar is the accuracy of the held-out labels whose confidence falls in its bin, the black"
                 " line their mean confidence: a calibrated run's line sits on its bar, on the diagonal."
                 " The ECE is the gap, weighted by the labels in each bin (lower plot): a bin of a few"
                 " labels says little.", "", image, "",
                 "| confidence | held-out labels | accuracy | mean confidence |", "|---|---|---|---|"]
        lines += [f"| {name} | {int(row['count']):,} | {row['accuracy']:.3f} | {row['mean_confidence']:.3f} |"
                  for name, row in reliability.iterrows()]
    else:
        histogram = summary["confidence_histogram"]
        total = sum(histogram.values())
        lines = [f"# {title}: confidence of {total:,} {what}", "",
                 "No holdout scored this run, so there is no reliability plot: `graphlabel label --holdout 0.2`"
                 " (or `holdout` in a schedule's job) hides a fifth of the given labels to score it.", "", image,
                 "", "| confidence | nodes | share |", "|---|---|---|"]
        lines += [f"| {name} | {n:,} | {n / total:.1%} |" for name, n in histogram.items()] if total else []
    return "\n".join(lines) + "\n"


@task(name="publish-ingest-report", task_run_name="publish-ingest-report")
def publish_ingest_report(summary: dict) -> str:
    """The ingest run's counts as a table artifact: stored rows, rejected rows per kind of
    reason, and where the rejects file is; then the given labels: the stored rows' per class,
    and what the file did to the dataset's (the notes the command line prints: a walk
    through the UI found the artifact with the row counts alone)."""
    rows = [{"what": "stored", "rows": summary["stored"]}, {"what": "rejected", "rows": summary["rejected"]}]
    rows += [{"what": f"rejected: {kind}", "rows": n} for kind, n in summary.get("reject_reasons", {}).items()]
    if summary.get("rejects_file"):
        rows.append({"what": f"rejects file: {summary['rejects_file']}", "rows": summary["rejected"]})
    rows.append({"what": "stored with a given label", "rows": summary.get("labelled", 0)})
    largest = sorted((summary.get("label_classes") or {}).items(), key=lambda item: (-item[1], item[0]))
    rows += [{"what": f"given label {name!r}", "rows": n} for name, n in largest[:NAMED_CLASSES]]
    if "given_labels_before" in summary:
        rows += [{"what": "the dataset's given labels before this file", "rows": summary["given_labels_before"]},
                 {"what": "the dataset's given labels after it", "rows": summary["given_labels_after"]}]
    for what, key in (("classes new to the dataset with a single given label", "new_single_classes"),
                      ("reviewed labels this file replaced", "replaced_reviews")):
        if summary.get(key):
            rows.append({"what": f"{what}: {named(list(summary[key]))}", "rows": len(summary[key])})
    return str(create_table_artifact(rows, key=artifact_key(summary["dataset"], "ingest"),
                                     description=f"ingest of {summary['dataset']!r}: {summary['stored']:,} stored,"
                                                 f" {summary['rejected']:,} rejected"))


@task(name="publish-artifacts", task_run_name="publish-artifacts")
def publish_artifacts(run: LabelRunRecord, reliability: pd.DataFrame | None,
                      stages: list[tuple[str, str]]) -> dict[str, str]:
    """Publish the run's numbers table, markdown report (with a link to each stage) and plot;
    for a failed run, the same three saying so and why."""
    dataset = run.dataset
    summary = summarise_run(run)
    headline = headline_text(summary, named=False)
    report = run_report_markdown(summary)
    if stages:
        report += "\n\n## Stages\n\n" + "\n".join(f"- [{name}]({url})" for name, url in stage_links(stages))
    ids = {
        "metrics": create_table_artifact(metrics_rows(summary), key=artifact_key(dataset, "metrics"),
                                         description=headline),
        "report": create_markdown_artifact(report, key=artifact_key(dataset, "report"), description=headline),
    }
    if summary["incremental"] and not summary["metrics"].get("n_region") and summary["status"] != "failed":
        # nothing relabelled: the stored predictions, and so the last plot, are unchanged;
        # drawing it again would cost more than the run (matplotlib's import, bench/cli.py)
        return {name: str(value) for name, value in ids.items()}
    ids["plot"] = create_markdown_artifact(plot_markdown(summary, reliability, run.run_id),
                                           key=artifact_key(dataset, "reliability"), description=headline)
    return {name: str(value) for name, value in ids.items()}
