"""What a labelling run shows in the Prefect UI: a table of its metrics, a markdown report
with a link to each stage's task run, and the reliability plot (accuracy per confidence
bin on the held-out labels) or, without a holdout, the confidence histogram, as an image.

Artifact keys are ``label-DATASET-metrics`` / ``-report`` / ``-reliability`` (lowercase,
as Prefect requires), so the Artifacts page keeps one history per dataset.
"""

from __future__ import annotations

import base64
import io
import re
import time

import pandas as pd
from prefect import get_client, task
from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.settings import PREFECT_UI_URL

from graphlabel.reporting import run_report_markdown
from graphstore import LabelRunRecord


def artifact_key(dataset: str, what: str) -> str:
    """Prefect keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]+", "-", f"label-{dataset}-{what}".lower()).strip("-")


def stage_links(flow_run_id: str, settle_seconds: float = 5.0) -> list[tuple[str, str]]:
    """(task run name, UI link) of every task run of the flow run, in start order.

    Task runs reach the API as events, processed after the fact: the list is read until
    two reads 0.5 s apart agree (at most ``settle_seconds``), so the last stages are not
    missing from the report."""
    query = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    deadline = time.monotonic() + settle_seconds
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=query)
        while time.monotonic() < deadline:
            time.sleep(0.5)
            again = client.read_task_runs(flow_run_filter=query)
            if {r.id for r in again} == {r.id for r in runs}:
                break
            runs = again
    base = (PREFECT_UI_URL.value() or "").rstrip("/")
    runs = sorted(runs, key=lambda r: r.start_time or r.expected_start_time or pd.Timestamp.max)
    return [(run.name, f"{base}/runs/task-run/{run.id}") for run in runs]


def metrics_table(metrics: dict) -> list[dict[str, str]]:
    """One row per metric; nested values (class counts, histogram) as one row per entry."""
    rows = []
    for name, value in metrics.items():
        if isinstance(value, dict):
            rows += [{"metric": f"{name}.{k}", "value": str(v)} for k, v in value.items()]
        else:
            rows.append({"metric": name, "value": str(value)})
    return rows


def plot_png(reliability: pd.DataFrame | None, histogram: dict[str, int]) -> bytes:
    """The reliability diagram when a holdout scored the run, else the confidence histogram."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    if reliability is not None and len(reliability):
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="calibrated")
        ax.plot(reliability["mean_confidence"], reliability["accuracy"], marker="o", label="this run")
        ax.set_xlabel("confidence (mean per bin)")
        ax.set_ylabel("accuracy on held-out labels")
        ax.set_title("reliability")
        ax.legend(loc="upper left", fontsize=8)
    else:
        ax.bar(list(histogram), list(histogram.values()))
        ax.set_xlabel("confidence")
        ax.set_ylabel("nodes")
        ax.set_title("confidence (no holdout: no reliability plot)")
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    return buffer.getvalue()


@task(name="publish-ingest-report")
def publish_ingest_report(summary: dict) -> str:
    """The ingest run's counts as a table artifact: stored rows, rejected rows per kind of
    reason, and where the rejects file is."""
    rows = [{"what": "stored", "rows": summary["stored"]}, {"what": "rejected", "rows": summary["rejected"]}]
    rows += [{"what": f"rejected: {kind}", "rows": n} for kind, n in summary.get("reject_reasons", {}).items()]
    if summary.get("rejects_file"):
        rows.append({"what": f"rejects file: {summary['rejects_file']}", "rows": summary["rejected"]})
    return str(create_table_artifact(rows, key=artifact_key(summary["dataset"], "ingest"),
                                     description=f"ingest of {summary['dataset']!r}"))


@task(name="publish-artifacts")
def publish_artifacts(run: LabelRunRecord, reliability: pd.DataFrame | None) -> dict[str, str]:
    """Publish the run's metrics table, markdown report (with stage links) and plot."""
    dataset = run.dataset
    links = stage_links(run.run_id)
    report = run_report_markdown(run) + "\n\n## Stages\n\n" + "\n".join(
        f"- [{name}]({url})" for name, url in links)
    png = plot_png(reliability, run.metrics.get("confidence_histogram", {}))
    ids = {
        "metrics": create_table_artifact(metrics_table(run.metrics), key=artifact_key(dataset, "metrics"),
                                         description=f"metrics of labelling run {run.run_id}"),
        "report": create_markdown_artifact(report, key=artifact_key(dataset, "report"),
                                           description=f"labelling run {run.run_id}"),
        "plot": create_image_artifact("data:image/png;base64," + base64.b64encode(png).decode(),
                                      key=artifact_key(dataset, "reliability"),
                                      description="reliability on the held-out labels"
                                      if reliability is not None else "confidence histogram"),
    }
    return {name: str(value) for name, value in ids.items()}
