"""Output jobs as Prefect flows: a dataset's predictions exported to a file
(``labelling.export``), so a deployment or a schedule can hand them to the tools downstream
after a labelling run."""

from __future__ import annotations

from graphstore import check_dataset_name, open_store
from graphstore.errors import NotFound
from labelling.export import export_format, export_frame, export_path, write_export

from .direct import flow, run_logger


@flow("export-predictions", flow_run_name="{dataset} · export", data_errors=(NotFound,))
def export_flow(dataset: str, store_uri: str | None = None, run_id: str | None = None,
                file_format: str | None = None, output: str | None = None) -> dict:
    """Write the dataset's predictions (or one run's) to ``output`` (default
    ``DATASET.parquet`` / ``DATASET.csv``), as ``file_format`` or, without it, as the
    output's ending says (``labelling.export.export_format``). Returns ``path``, ``rows``,
    ``predicted`` (rows with a predicted label), ``classes`` (the score columns' classes) and
    ``format``."""
    check_dataset_name(dataset)
    file_format = export_format(file_format, output)
    with open_store(store_uri) as store:
        frame = export_frame(store, dataset, run_id)
    path = write_export(frame, export_path(dataset, file_format, output), file_format)
    classes = [c.removeprefix("score_") for c in frame.columns if c.startswith("score_")]
    run_logger().info("exported %s nodes of %r to %s", f"{len(frame):,}", dataset, path)
    return {"path": str(path), "rows": len(frame), "predicted": int(frame["predicted_label"].notna().sum()),
            "classes": classes, "format": file_format}
