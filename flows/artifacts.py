"""What a labelling run shows in the Prefect UI: a table of its numbers (headline first,
named and rounded rows), a markdown report with a link to each stage's task run, and the
reliability plot (accuracy per confidence bin on the held-out labels, with each bin's count
and the ECE) or, without a holdout, the confidence histogram, as an image. A failed run
publishes its report too (status and error), so a dataset's latest report never shows an
older success as if it were the last word.

Artifact keys are ``label-DATASET-metrics`` / ``-report`` / ``-reliability`` (lowercase,
as Prefect requires), so the Artifacts page keeps one history per dataset; each
description carries the run's headline.

Publishing is three API calls and one small figure: about 0.2 s (bench/cli.py
``--with-server`` measures it beside the labelling), no waiting for the server to list the
task runs (their ids are recorded as the flow runs them, ``flows.direct.STAGE_RUNS``). An
incremental run that relabelled nothing publishes no new plot: the predictions it would
draw are the last one's.
"""

from __future__ import annotations

import base64
import io
import re
import textwrap

import pandas as pd
from prefect import task
from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact
from prefect.settings import PREFECT_UI_URL

from graphstore import LabelRunRecord
from labelling.reporting import headline_text, metrics_rows, run_report_markdown, summarise_run


def artifact_key(dataset: str, what: str) -> str:
    """Prefect keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]+", "-", f"label-{dataset}-{what}".lower()).strip("-")


def stage_links(stages: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(task run name, UI link) of each stage the flow ran, in the order it ran them."""
    base = (PREFECT_UI_URL.value() or "").rstrip("/")
    return [(name, f"{base}/runs/task-run/{task_run_id}") for name, task_run_id in stages]


def plot_png(reliability: pd.DataFrame | None, histogram: dict[str, int], ece: float | None = None,
             title: str = "") -> bytes:
    """The reliability diagram when a holdout scored the run (each bin's accuracy against
    its mean confidence, the number of held-out labels in it written beside the point, the
    ECE in the title), else the confidence histogram with each bar's count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    if reliability is not None and len(reliability):
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfectly calibrated")
        ax.plot(reliability["mean_confidence"], reliability["accuracy"], marker="o", markersize=7,
                label="this run (one point per confidence bin)")
        for x, y, n in zip(reliability["mean_confidence"], reliability["accuracy"], reliability["count"]):
            ax.annotate(f"n={n}", (x, y), textcoords="offset points", xytext=(6, -14), fontsize=10)
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("confidence (mean of the bin)", fontsize=12)
        ax.set_ylabel("accuracy on the held-out labels", fontsize=12)
        n = int(reliability["count"].sum())
        ece_text = f", ECE {ece:.3f}" if ece is not None else ""
        ax.set_title(f"{title}reliability on {n} held-out labels{ece_text}", fontsize=13)
        ax.legend(loc="upper left", fontsize=10)
    else:
        bars = ax.bar(list(histogram), list(histogram.values()), color="#4c72b0")
        ax.bar_label(bars, fmt="{:,.0f}", fontsize=10, padding=2)
        ax.set_xlabel("confidence", fontsize=12)
        ax.set_ylabel("nodes", fontsize=12)
        ax.set_title(f"{title}confidence of {sum(histogram.values()):,} nodes"
                     " (no holdout: no reliability plot)", fontsize=13)
        ax.tick_params(axis="x", labelsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


def failed_png(message: str) -> bytes:
    """A plain image saying the run failed, so the plot artifact is not an older run's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = textwrap.wrap(message, 80)[:8]
    fig = plt.figure(figsize=(8, 0.6 + 0.3 * len(lines)))
    fig.text(0.02, 0.5, "\n".join(lines), fontsize=12, color="#b00020", va="center")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()


@task(name="publish-ingest-report", task_run_name="publish-ingest-report")
def publish_ingest_report(summary: dict) -> str:
    """The ingest run's counts as a table artifact: stored rows, rejected rows per kind of
    reason, and where the rejects file is."""
    rows = [{"what": "stored", "rows": summary["stored"]}, {"what": "rejected", "rows": summary["rejected"]}]
    rows += [{"what": f"rejected: {kind}", "rows": n} for kind, n in summary.get("reject_reasons", {}).items()]
    if summary.get("rejects_file"):
        rows.append({"what": f"rejects file: {summary['rejects_file']}", "rows": summary["rejected"]})
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
    headline = headline_text(summary)
    report = run_report_markdown(summary)
    if stages:
        report += "\n\n## Stages\n\n" + "\n".join(f"- [{name}]({url})" for name, url in stage_links(stages))
    ids = {
        "metrics": create_table_artifact(metrics_rows(summary), key=artifact_key(dataset, "metrics"),
                                         description=headline),
        "report": create_markdown_artifact(report, key=artifact_key(dataset, "report"), description=headline),
    }
    if summary["incremental"] and not summary["metrics"].get("n_region"):
        # nothing relabelled: the stored predictions, and so the last plot, are unchanged;
        # drawing it again would cost more than the run (matplotlib's import, bench/cli.py)
        return {name: str(value) for name, value in ids.items()}
    if summary["status"] == "failed":
        png = failed_png(f"run {run.run_id[:8]} failed: {summary['error']}")
    else:
        png = plot_png(reliability, summary["confidence_histogram"], summary["holdout_ece"],
                       title=f"{dataset} · {run.solver}: ")
    ids["plot"] = create_image_artifact("data:image/png;base64," + base64.b64encode(png).decode(),
                                        key=artifact_key(dataset, "reliability"), description=headline)
    return {name: str(value) for name, value in ids.items()}
