"""Operating the labelling flow: artifacts per run, run status through failures, retries on
transient store errors, idempotent re-runs, and the documented answers on degenerate
graphs. Real Prefect (test harness), real Kùzu; faults are injected into a real store."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import flows.labelling as labelling
from flows.labelling import labelling_flow
from graphstore import open_store
from graphstore.kuzu_store import KuzuStore
from graphstore.schemas import edge_table
from labelling.records import parse_records

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture
def digits_store(store_path, digits):
    """The digits with 20 given labels per class."""
    X, y = digits
    rng = np.random.default_rng(0)
    given = np.zeros(len(y), bool)
    for c in range(10):
        given[rng.choice(np.flatnonzero(y == c), 20, replace=False)] = True
    frame = pd.DataFrame(X, columns=[f"p{i:02d}" for i in range(64)])
    frame.insert(0, "key", [f"d{i:04d}" for i in range(len(y))])
    frame.insert(1, "label", np.where(given, y.astype(str), None))
    with open_store(store_path, create=True) as store:
        store.write_nodes("digits", parse_records(frame, key="key", features="p*", label="label").nodes)
    return store_path, y


def _artifacts(flow_run_id: str, kind: str = "published") -> dict:
    """The run's keyed artifacts: the ones a run publishes (metrics, report, plot), or with
    ``kind="progress"`` the progress bars of its stages."""
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        of_the_run = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        found = client.read_artifacts(artifact_filter=of_the_run)
    keyed = [a for a in found if a.key]  # keyless ones: results Prefect keeps itself
    return {a.key: a for a in keyed if (a.type == "progress") == (kind == "progress")}


def test_a_run_publishes_metrics_report_and_reliability_plot(digits_store):
    store_path, y = digits_store
    result = labelling_flow("digits", store_uri=store_path, holdout_fraction=0.25, holdout_seed=3)
    metrics = result["metrics"]
    assert metrics["n_holdout"] == 50
    assert metrics["n_labeled"] == 150  # 5 of 20 per class held out
    assert 0.85 < metrics["holdout_accuracy"] <= 1.0
    assert sum(metrics["confidence_histogram"].values()) == len(y)
    assert sum(metrics["class_counts"].values()) + metrics["n_unreachable"] == len(y)
    artifacts = _artifacts(result["run_id"])
    assert set(artifacts) == {"label-digits-metrics", "label-digits-report", "label-digits-reliability"}
    bars = _artifacts(result["run_id"], kind="progress")  # the stages a person watched, all finished
    assert {"label-digits-knn-search", "label-digits-solve-harmonic", "label-digits-write-back"} <= set(bars)
    assert all(bar.data == 100 for bar in bars.values()), {key: bar.data for key, bar in bars.items()}
    table = artifacts["label-digits-metrics"].data
    rows = [(row["metric"], row["value"]) for row in (json.loads(table) if isinstance(table, str) else table)]
    # headline first, named and rounded: the accuracy with the size it rests on
    assert rows[:2] == [("status", "completed"), ("accuracy on held-out labels",
                                                   f"{metrics['holdout_accuracy']:.3f} on 50 labels"
                                                   f" (ECE {metrics['holdout_ece']:.3f})")]
    balanced, baseline = metrics["holdout_balanced_accuracy"], metrics["holdout_majority_accuracy"]
    assert rows[2] == ("balanced accuracy (mean recall)",
                       f"{balanced:.3f}; always answering {metrics['holdout_majority_class']!r} scores {baseline:.3f}")
    assert [name for name, _ in rows[3:6]] == ["labels flagged as noisy", "unlabelled nodes reached", "coverage"]
    assert all(len(value) < 60 for _, value in rows)  # no 17-digit floats
    # the description leads with the numbers (the artifact list shows its first 50 characters)
    description = artifacts["label-digits-metrics"].description
    assert description.startswith(f"accuracy {metrics['holdout_accuracy']:.3f} on 50 held-out labels")
    report = artifacts["label-digits-report"].data
    assert result["run_id"] in report
    assert "/runs/task-run/" in report
    assert "[solve[1/1: 1,797 nodes]]" in report
    assert report.index("## Headline") < report.index("## Run")
    # the plot: markdown with the PNG inside (an image artifact printed its 40 kB data URL
    # under the image, over the page's side panel) and its numbers in a table below
    plot = artifacts["label-digits-reliability"]
    assert plot.type == "markdown"
    assert plot.data.startswith("# digits · harmonic: reliability on 50 held-out labels")
    png = base64.b64decode(plot.data.split("(data:image/png;base64,", 1)[1].split(")", 1)[0])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (800, 650)
    bins = [line for line in plot.data.splitlines() if line.startswith("| 0.") or line.startswith("| 1.")]
    assert sum(int(line.split("|")[2].replace(",", "")) for line in bins) == 50  # every held-out label, once
    # the flow run is named by what it does, its task runs by their stage
    from prefect import get_client

    texts = ("exported 1,797 nodes", "held out 50 of the given labels", "solved 1,797 nodes (150 given labels)",
             "1 connected component: 1 solver batch;", "wrote 1,797 predictions", "published the run's report")
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(result["run_id"])
        logs = _run_logs(client, result["run_id"], texts)
    assert flow_run.name == "digits · harmonic · full"
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[result["run_id"]])))
    # the run records itself twice: each task run is named by the status it writes
    assert sorted(run.name for run in task_runs if run.name.startswith("record-run")) == [
        "record-run: completed", "record-run: running"]
    for text in texts:
        assert any(text in message for message in logs), (text, logs)
    with open_store(store_path, create=True) as store:
        run = store.read_runs(run_id=result["run_id"]).iloc[0]
    assert run["status"] == "completed"
    assert run["metrics"]["holdout_accuracy"] == metrics["holdout_accuracy"]
    assert {"graphlabel", "prefect", "ladybug", "numpy"} <= set(run["versions"])


class FlakyStore(KuzuStore):
    """A real Kùzu store whose prediction write fails ``failures`` times, then works."""

    failures = 0
    error: type[BaseException] = ConnectionError
    calls = 0

    def write_predictions(self, dataset, predictions):
        type(self).calls += 1
        if type(self).calls <= type(self).failures:
            raise type(self).error("store went away (injected)")
        return super().write_predictions(dataset, predictions)


@pytest.fixture
def flaky(monkeypatch):
    def use(failures: int, error=ConnectionError):
        FlakyStore.failures, FlakyStore.error, FlakyStore.calls = failures, error, 0
        monkeypatch.setattr(labelling, "open_store", lambda uri: FlakyStore(uri))
    return use


def _predictions(store_path):
    with open_store(store_path, create=True) as store:
        return store.query("MATCH (e:Entity) RETURN e.key AS key, e.predicted_label AS label, "
                           "e.label_run_id AS run").sort_values("key").reset_index(drop=True)


def test_a_transient_store_error_is_retried_and_the_run_completes(digits_store, flaky):
    store_path, _ = digits_store
    flaky(failures=2)
    result = labelling_flow("digits", store_uri=store_path, publish=False)
    assert FlakyStore.calls == 3  # two failures, then the retry that worked
    assert (_predictions(store_path)["run"] == result["run_id"]).all()


def test_a_failed_run_is_marked_failed_and_a_rerun_matches_a_clean_run(digits_store, flaky, tmp_path, digits):
    store_path, _ = digits_store
    flaky(failures=10)  # more than the retries
    with pytest.raises(ConnectionError, match="injected"):
        labelling_flow("digits", store_uri=store_path, publish=False)
    assert FlakyStore.calls == 4  # the first try and 3 retries
    with open_store(store_path, create=True) as store:
        failed = store.read_runs("digits")
        assert failed["status"].tolist() == ["failed"]
        assert "ConnectionError" in failed["error"][0]
        assert store.query("MATCH (e:Entity) RETURN count(e.predicted_label) AS p")["p"][0] == 0

    flaky(failures=0)
    rerun = labelling_flow("digits", store_uri=store_path, publish=False)
    with open_store(store_path, create=True) as store:
        assert sorted(store.read_runs("digits")["status"]) == ["completed", "failed"]
    clean_path = str(tmp_path / "clean")
    X, y = digits
    with open_store(clean_path, create=True) as clean, open_store(store_path, create=True) as first:
        nodes = first.read_subgraph("digits")
        table = pa.table({"key": pa.array(nodes.keys, pa.string()),
                          "features": pa.array(list(nodes.features), pa.list_(pa.float64())),
                          "label": pa.array(nodes.labels, pa.string())})
        clean.write_nodes("digits", table)
    labelling_flow("digits", store_uri=clean_path, publish=False)
    after_failure, clean_run = _predictions(store_path), _predictions(clean_path)
    assert after_failure["label"].equals(clean_run["label"])
    assert (after_failure["run"] == rerun["run_id"]).all()


def test_an_incremental_run_that_fell_back_to_full_is_named_full(digits_store, caplog):
    # the first run of a dataset relabels every node: the runs list must not call it incremental,
    # nor its log lines (they said 'digits · harmonic · incremental' above "full run: ...")
    from prefect import get_client, tags

    from labelling.options import asked_kind_tags, run_tags
    from labelling.problems import NoSuchDataset

    store_path, _ = digits_store
    caplog.set_level(logging.INFO, logger="prefect.flow_runs")
    with tags(*run_tags("digits", "harmonic", *asked_kind_tags(False, 0.0))) as asked:  # as the CLI tags it
        first = labelling_flow("digits", store_uri=store_path, publish=False)
        again = labelling_flow("digits", store_uri=store_path, publish=False)
    assert asked == {"digits", "graphlabel", "harmonic"}  # each run tagged its kind on a set of its own
    with tags(*run_tags("digitz", "harmonic")), pytest.raises(NoSuchDataset, match="no dataset 'digitz'"):
        labelling_flow("digitz", store_uri=store_path, publish=False)  # a misspelt name: it never knew
    named = {record.getMessage().split(":")[0]: getattr(record, "flow_run_name", None) for record in caplog.records
             if record.getMessage().startswith(("full run:", "incremental run:"))}
    assert named == {"full run": "digits · harmonic · full", "incremental run": "digits · harmonic · incremental"}
    assert not [r for r in caplog.records if getattr(r, "flow_run_name", "").endswith("incremental")
                and getattr(r, "flow_run_id", None) == first["run_id"]]
    assert first["metrics"]["full_run_reason"] == "no node was labelled before (first run)"
    with get_client(sync_client=True) as client:
        first_run, again_run = client.read_flow_run(first["run_id"]), client.read_flow_run(again["run_id"])
    assert first_run.name == "digits · harmonic · full"
    assert sorted(first_run.tags) == ["digits", "full", "graphlabel", "harmonic"]
    assert again_run.name == "digits · harmonic · incremental"  # it was one
    assert sorted(again_run.tags) == ["digits", "graphlabel", "harmonic", "incremental"]
    # named so once its graph extends, not after its write-back: the task runs from there on say it
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        task_runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[again_run.id])))
    kinds = {run.name.split("[")[0]: "incremental" in run.tags for run in task_runs}
    assert kinds["read-changes"] is False, kinds
    assert kinds["add-edges"], kinds
    with get_client(sync_client=True) as client:
        failed = client.read_flow_run(_newest_run_id(client, "digitz · harmonic", "FAILED"))
    assert sorted(failed.tags) == ["digitz", "graphlabel", "harmonic"]  # it was tagged incremental


# Counts, in a fresh interpreter, the windows in which a module records the warnings of
# every thread (catch_warnings(record=True) before Python 3.14) while publishing's imports
# are warmed in their background thread and both plots are drawn.
RECORDING_WINDOWS = """
import sys, threading, warnings
import pandas as pd
windows = []
enter = warnings.catch_warnings.__enter__
def counted(self):
    if self._record:
        windows.append(threading.current_thread().name)
    return enter(self)
warnings.catch_warnings.__enter__ = counted
import flows.labelling
flows.labelling._warm_publishing()
[thread.join() for thread in threading.enumerate() if thread.name == "graphlabel-warm-publishing"]
from flows.artifacts import plot_png
reliability = pd.DataFrame({"accuracy": [0.5, 0.8], "mean_confidence": [0.55, 0.85], "count": [3, 10]},
                           index=["0.5-0.6", "0.8-0.9"])
assert plot_png(reliability, {}, 0.05)[:4] == plot_png(None, {"0.9-1.0": 50})[:4] == b"\\x89PNG"
print(len(windows), "matplotlib.pyplot" in sys.modules)
"""


def test_publishing_takes_no_warning_of_a_running_solve():
    """Publishing's imports are warmed in a thread while the run labels. pyplot's import
    read its style library inside catch_warnings(record=True), which takes the warnings of
    every thread: a CI run lost mincut's "no better than guessing" to it (test_bad_input's
    test_09 of a solver's warning failed), and a thread warning beside `import
    matplotlib.pyplot` lost 9 of 442 warnings to matplotlib's log. The plots are drawn
    without pyplot now, and nothing publishing imports or draws opens such a window."""
    done = subprocess.run([sys.executable, "-c", RECORDING_WINDOWS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "False"], done.stdout


def test_an_incremental_run_that_changed_nothing_publishes_no_new_plot(digits_store):
    store_path, _ = digits_store
    labelling_flow("digits", store_uri=store_path)
    again = labelling_flow("digits", store_uri=store_path)
    assert again["metrics"]["incremental"]
    assert again["metrics"]["n_region"] == 0
    artifacts = _artifacts(again["run_id"])
    assert set(artifacts) == {"label-digits-metrics", "label-digits-report"}
    assert "incremental: 0 changed" in artifacts["label-digits-report"].data


def test_a_failed_run_publishes_a_report_that_says_so(digits_store, flaky):
    store_path, _ = digits_store
    labelling_flow("digits", store_uri=store_path)  # a success first: its report must not outlive the failure
    flaky(failures=10, error=RuntimeError)
    with pytest.raises(RuntimeError, match="injected"):
        labelling_flow("digits", store_uri=store_path, full=True)
    with open_store(store_path) as store:
        failed_id = store.read_runs("digits")["run_id"][0]
    artifacts = _artifacts(failed_id)
    assert set(artifacts) == {"label-digits-metrics", "label-digits-report", "label-digits-reliability"}
    report = artifacts["label-digits-report"].data
    assert "| status | failed |" in report
    assert "store went away (injected)" in report
    assert artifacts["label-digits-metrics"].description.startswith("failed: RuntimeError")
    plot = artifacts["label-digits-reliability"].data  # the error, not an older run's plot
    assert "failed, nothing to plot" in plot
    assert "store went away (injected)" in plot
    assert "data:image" not in plot


def _run_logs(client, run_id: str, expected: tuple[str, ...] = ("Encountered exception",)) -> list[str]:
    """The flow run's log messages, once each of ``expected`` is in one of them (logs reach
    the API in batches, after the flow returns; at most 10 s of waiting)."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    for _ in range(20):
        logs = [log.message for log in client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))]
        if all(any(text in message for message in logs) for text in expected):
            break
        time.sleep(0.5)
    return logs


def _newest_run_id(client, name: str, state: str | None = None) -> str:
    """The id of the newest flow run of ``name`` (in ``state``, if given), filtered by the
    server: the session's server keeps every test's runs, more than one page of them."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterName,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    states = None if state is None else FlowRunFilterState(type=FlowRunFilterStateType(any_=[state]))
    newest = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name]), state=states),
                                   sort=FlowRunSort.END_TIME_DESC, limit=1)
    return str(newest[0].id)


def test_a_data_error_is_one_line_in_the_runs_log(store_path):
    # given labels of one class: the data's fault, said in one line, not over 80 lines of
    # Prefect's internals in the run's Logs tab; a bug keeps its traceback
    from prefect import get_client

    from labelling.problems import NotEnoughLabels

    frame = pd.DataFrame({"key": [f"k{i:02d}" for i in range(30)], "x": np.arange(30.0),
                          "label": ["a"] * 5 + [None] * 25})
    with open_store(store_path, create=True) as store:
        store.write_nodes("oneclass", parse_records(frame, key="key", features="x", label="label").nodes)
    with pytest.raises(NotEnoughLabels, match="one class"):
        labelling_flow("oneclass", store_uri=store_path, publish=False)
    with open_store(store_path) as store:
        run_id = str(store.read_runs("oneclass")["run_id"][0])
    with get_client(sync_client=True) as client:
        logs = _run_logs(client, run_id)
    errors = [message for message in logs if "Encountered exception" in message]
    assert len(errors) == 1, logs
    assert "one class" in errors[0]
    assert not any("Traceback" in message for message in logs), logs


def test_a_run_that_cannot_open_its_locked_store_says_so_in_its_log_and_report(digits_store, monkeypatch):
    # a served run meeting another at the store's lock waited 60 s in silence, failed with a
    # traceback printed twice, and published nothing: the dataset's report still showed the
    # last success
    from prefect import get_client
    from store_lock import hold_lock

    from graphstore import StoreLocked

    store_path, _ = digits_store
    labelling_flow("digits", store_uri=store_path, publish=True)  # a success whose report must not outlive the failure
    monkeypatch.setenv("GRAPHLABEL_LOCK_TIMEOUT", "2")
    holder = hold_lock(store_path, 120)
    try:
        with pytest.raises(StoreLocked, match="still in use by another process after 2 s"):
            labelling_flow("digits", store_uri=store_path, full=True)
    finally:
        holder.kill()
        holder.wait()
    with get_client(sync_client=True) as client:
        run_id = _newest_run_id(client, "digits · harmonic · full", "FAILED")
        logs = _run_logs(client, run_id)
    assert any("in use by another process" in message and "waiting up to 2 s" in message for message in logs), logs
    assert not any("Traceback" in message for message in logs), logs
    artifacts = _artifacts(run_id)
    assert {"label-digits-report", "label-digits-metrics"} <= set(artifacts)
    report = artifacts["label-digits-report"].data
    assert "| status | failed |" in report
    assert "StoreLocked: the store" in report
    assert artifacts["label-digits-metrics"].description.startswith("failed: StoreLocked")


def test_a_run_whose_neo4j_is_down_says_so_in_one_line_in_its_log_and_report():
    # a served run on a Neo4j that was down logged its error with two tracebacks (a
    # newcomer's walk), where the run's message already says what to check
    import socket

    from prefect import get_client

    from graphstore import StoreConnectionError

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        uri = f"bolt://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(StoreConnectionError, match="is a Neo4j server running and listening there"):
        labelling_flow("downstore", store_uri=uri, publish=True)
    with get_client(sync_client=True) as client:
        run_id = _newest_run_id(client, "downstore · harmonic")
        logs = _run_logs(client, run_id)
    errors = [message for message in logs if "Encountered exception" in message]
    assert len(errors) == 1, logs
    assert "could not open the Neo4j store" in errors[0]
    assert not any("Traceback" in message for message in logs), logs
    assert "| status | failed |" in _artifacts(run_id)["label-downstore-report"].data


def test_a_misspelt_dataset_is_named_as_such_in_the_runs_log(store_path):
    # the flow run's log read "NotEnoughLabels: no dataset 'wines' in the store" (a newcomer's walk)
    from prefect import get_client

    from labelling.problems import NoSuchDataset, NotEnoughLabels

    with open_store(store_path, create=True):
        pass
    with pytest.raises(NoSuchDataset, match="no dataset 'nosuchset' in the store") as raised:
        labelling_flow("nosuchset", store_uri=store_path, publish=False)
    assert isinstance(raised.value, NotEnoughLabels)  # what callers that catch the old type still catch
    with get_client(sync_client=True) as client:
        logs = _run_logs(client, _newest_run_id(client, "nosuchset · harmonic"))
    (error,) = [message for message in logs if "Encountered exception" in message]
    assert "NoSuchDataset(\"no dataset 'nosuchset' in the store" in error, logs


def test_bad_input_is_not_retried(digits_store, flaky):
    store_path, _ = digits_store
    flaky(failures=10, error=ValueError)
    with pytest.raises(ValueError):
        labelling_flow("digits", store_uri=store_path, publish=False)
    assert FlakyStore.calls == 1


def _degenerate_store(store_path, labels, edges):
    """Six nodes on a line 0-1-2 and 3-4, node 5 isolated, with the given labels."""
    keys = np.array([f"n{i}" for i in range(6)], dtype=object)
    import scipy.sparse as sp

    rows, cols = zip(*edges) if edges else ((), ())
    W = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(6, 6))
    W = W.maximum(W.T)
    with open_store(store_path, create=True) as store:
        store.write_nodes("tiny", pa.table({
            "key": pa.array(keys, pa.string()),
            "features": pa.array([[float(i)] for i in range(6)], pa.list_(pa.float64())),
            "label": pa.array(labels, pa.string())}))
        store.replace_edges("tiny", edge_table(keys, W))


def _tiny_predictions(store_path):
    with open_store(store_path, create=True) as store:
        frame = store.query("MATCH (e:Entity) WHERE e.dataset = 'tiny' RETURN e.key AS key, "
                            "e.predicted_label AS label, e.label_confidence AS confidence, e.label_noise AS noise")
    return frame.sort_values("key").set_index("key")


@pytest.mark.parametrize("solver", ["harmonic", "mincut", "nmf", "spectral", "lcsnc"])
def test_degenerate_graphs_get_the_documented_answer(store_path, solver):
    # 0-1-2 holds labels a and b; 3-4 holds label a only; 5 is isolated and unlabelled
    _degenerate_store(store_path, ["a", None, "b", "a", None, None], [(0, 1), (1, 2), (3, 4)])
    # one label per class leaves nothing to cross-validate LC-SNC's hyperparameters on
    params = {"variant": "snc", "lam": 1.0} if solver == "lcsnc" else {}
    result = labelling_flow("tiny", store_uri=store_path, solver=solver, build_graph=False,
                            solver_params=params, publish=False)
    out = _tiny_predictions(store_path)
    assert pd.isna(out.loc["n5", "label"])
    assert out.loc["n5", "confidence"] == 0  # no label reaches it
    assert out.loc[["n3", "n4"], "label"].tolist() == ["a", "a"]  # one-class component
    assert out.loc[["n3", "n4"], "confidence"].tolist() == [1.0, 1.0]
    assert out.loc["n1", "label"] in ("a", "b")
    assert result["metrics"]["n_components"] == 3
    assert result["metrics"]["n_unreachable"] == 1


def test_every_node_labeled_still_runs_and_flags(store_path):
    _degenerate_store(store_path, ["a", "a", "b", "a", "a", "b"], [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5)])
    result = labelling_flow("tiny", store_uri=store_path, build_graph=False, publish=False)
    out = _tiny_predictions(store_path)
    assert result["metrics"]["n_unlabeled"] == 0
    assert out["noise"].notna().all()  # every node has a given label, so every node has a flag
    assert out["label"].notna().all()


def test_ingest_publishes_its_reject_counts(tmp_path, store_path):
    from flows.labelling import ingest_flow

    source = tmp_path / "records.csv"
    source.write_text("key,x,y,label\na,1,2,p\nb,nan,2,q\nc,1,2,r\nc,5,6,r\n")
    state = ingest_flow(str(source), "small", "key", "x,y", "label", store_uri=store_path,
                        rejects_path=str(tmp_path / "small.rejects.csv"), classes=["p", "q"], return_state=True)
    summary = state.result()
    assert summary["stored"] == 1
    assert summary["rejected"] == 3  # b: NaN; both c: label r not in the classes
    table = _artifacts(str(state.state_details.flow_run_id))["label-small-ingest"].data
    rows = {row["what"]: row["rows"] for row in (json.loads(table) if isinstance(table, str) else table)}
    assert rows["stored"] == 1
    assert rows["rejected"] == 3
    assert rows["rejected: missing feature"] == 1
    assert rows["rejected: label not in classes"] == 2
    # and the given labels, as the command line's notes say them
    assert rows["stored with a given label"] == 1
    assert rows["given label 'p'"] == 1
    assert (rows["the dataset's given labels before this file"], rows["the dataset's given labels after it"]) == (0, 1)
