"""The `graphlabel` command line: demo, ingest, build-graph, label, query.

Every command takes ``--store URI``: a folder for the embedded Kùzu store (default
``$GRAPHLABEL_STORE`` or ``.graphlabel``), or ``neo4j://host:7687`` / ``bolt://host:7687``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

# A closed network has nowhere to send Prefect's telemetry; asking only prints errors.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.split("\n")[0])
console = Console()
err = Console(stderr=True)

StoreOption = typer.Option(None, "--store", envvar="GRAPHLABEL_STORE",
                           help="Store URI: a folder (Kùzu) or neo4j:// / bolt:// (Neo4j).")


def _fail(message: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def _timings_table(timings: dict[str, float]) -> Table:
    table = Table("stage", "seconds", title="time per stage")
    for stage, seconds in timings.items():
        table.add_row(stage, f"{seconds:.3f}")
    return table


def _user_errors():
    """Errors that are the input's fault: shown as one clear line, not a traceback."""
    from graphlabel.problems import NotEnoughLabels
    from graphlabel.records import NoValidRecords

    return (NotEnoughLabels, NoValidRecords, FileNotFoundError, ValueError)


@app.command()
def demo(
    store: Optional[str] = StoreOption,
    per_class: int = typer.Option(10, help="Labels kept per class."),
    flip: float = typer.Option(0.1, help="Fraction of kept labels flipped on purpose."),
    seed: int = typer.Option(0, help="Random seed of the hidden/flipped labels."),
    k: int = typer.Option(10, help="Neighbours per node in the kNN graph."),
    solver: str = typer.Option("harmonic", help="Solver to run."),
) -> None:
    """Label scikit-learn's handwritten digits end to end and score the result."""
    from flows.demo import demo_flow

    with console.status("running the labelling flow on the digits..."):
        result = demo_flow(store_uri=store, per_class=per_class, flip_fraction=flip, seed=seed, k=k,
                           solver=solver)
    noise = result["noise"]
    console.rule("[bold]graphlabel demo: handwritten digits")
    console.print(f"nodes: {result['n_nodes']}   given labels: {result['n_given']}"
                  f" ({result['n_flipped']} flipped on purpose)   edges: {result['metrics']['n_edges']}")
    console.print(f"solver: {result['solver']}   run id: {result['run_id']}")
    console.print(f"[bold]accuracy on the {result['n_hidden']} hidden labels: {result['accuracy_hidden']:.3f}")
    console.print(f"given labels flagged as noisy: {noise['flagged']}   flipped ones caught:"
                  f" {noise['caught']} of {noise['flipped']}   (precision {noise['precision']:.2f},"
                  f" recall {noise['recall']:.2f})")
    console.print(_timings_table(result["timings"]))
    console.print("See the predictions (paste into `graphlabel query`):")
    console.print(f'  graphlabel query "{result["query"]}"', soft_wrap=True, highlight=False)


@app.command()
def ingest(
    file: str = typer.Argument(..., help="CSV, TSV or Parquet file of records."),
    dataset: str = typer.Option(..., help="Dataset name the nodes belong to."),
    key: str = typer.Option(..., help="Column with each record's unique key."),
    features: str = typer.Option(..., help="Feature columns: comma-separated names or globs ('x_*')."),
    label: Optional[str] = typer.Option(None, help="Column with the given label (may be empty)."),
    rejects: Optional[str] = typer.Option(None, help="Where to write rejected rows (default DATASET.rejects.csv)."),
    store: Optional[str] = StoreOption,
) -> None:
    """Ingest records as nodes; every rejected row is reported with its reason."""
    from flows.labelling import ingest_flow
    from graphlabel.records import NoValidRecords

    try:
        with console.status(f"ingesting {file} into {dataset!r}..."):
            summary = ingest_flow(file, dataset, key, features, label, store_uri=store, rejects_path=rejects)
    except NoValidRecords as error:
        path = rejects or f"{dataset}.rejects.csv"
        error.rejects.to_csv(path, index=False)
        _fail(f"{error} (all {len(error.rejects)} rejects written to {path})")
    except _user_errors() as error:
        _fail(str(error))
    console.print(f"stored {summary['stored']} nodes in dataset {dataset!r}")
    if summary["rejected"]:
        err.print(f"[yellow]rejected {summary['rejected']} rows[/], reasons in {summary['rejects_file']}")


@app.command("build-graph")
def build_graph(
    dataset: str = typer.Option(..., help="Dataset name."),
    graph: str = typer.Option("knn", help="knn, delta, or Blum & Chawla's mincut3, delta0, delta_half."),
    k: int = typer.Option(10, help="Neighbours per node (knn)."),
    metric: str = typer.Option("euclidean", help="euclidean or cosine."),
    weights: str = typer.Option("gaussian", help="gaussian, cosine or binary."),
    delta: Optional[float] = typer.Option(None, help="Distance threshold (delta graph)."),
    store: Optional[str] = StoreOption,
) -> None:
    """Build the dataset's similarity relationships in the store."""
    from flows.labelling import build_graph_flow

    try:
        with console.status(f"building the {graph} graph of {dataset!r}..."):
            summary = build_graph_flow(dataset, store_uri=store, graph=graph, k=k, metric=metric,
                                       weights=weights, delta=delta)
    except _user_errors() as error:
        _fail(str(error))
    console.print(f"wrote {summary['edges']} similarity relationships for {dataset!r}")
    console.print(_timings_table(summary["timings"]))


@app.command()
def label(
    dataset: str = typer.Option(..., help="Dataset name."),
    solver: str = typer.Option("harmonic", help="Solver: harmonic, mincut, lcsnc, spectral, maxmargin, nmf."),
    params: str = typer.Option("{}", help="Solver parameters as JSON, e.g. '{\"gamma_g\": 0.1}'."),
    rebuild_graph: bool = typer.Option(False, help="Rebuild the kNN graph first."),
    k: int = typer.Option(10, help="Neighbours per node when rebuilding."),
    store: Optional[str] = StoreOption,
) -> None:
    """Label the dataset's nodes and write predictions back as node properties."""
    from flows.labelling import labelling_flow

    try:
        solver_params = json.loads(params)
        with console.status(f"labelling {dataset!r} with {solver}..."):
            summary = labelling_flow(dataset, store_uri=store, solver=solver, solver_params=solver_params,
                                     build_graph=rebuild_graph, k=k)
    except json.JSONDecodeError as error:
        _fail(f"--params is not valid JSON: {error}")
    except _user_errors() as error:
        _fail(str(error))
    console.print(f"labelled {summary['n_nodes']} nodes of {dataset!r} with {solver}"
                  f" ({summary['n_labeled']} given labels, {summary['n_flagged']} flagged as noisy),"
                  f" run {summary['run_id']}")
    console.print(_timings_table(summary["timings"]))


@app.command()
def query(
    cypher: str = typer.Argument(..., help="A Cypher query."),
    param: list[str] = typer.Option([], "--param", "-p", help="A query parameter NAME=VALUE (JSON values"
                                    " are parsed, anything else is a string); repeat for several."),
    store: Optional[str] = StoreOption,
) -> None:
    """Run a Cypher query against the store and print its rows."""
    from graphstore import open_store

    parameters = {}
    for item in param:
        name, sep, value = item.partition("=")
        if not sep or not name:
            _fail(f"--param takes NAME=VALUE, got {item!r}")
        try:
            parameters[name] = json.loads(value)
        except json.JSONDecodeError:
            parameters[name] = value
    with open_store(store) as graph_store:
        try:
            frame = graph_store.query(cypher, parameters)
        except RuntimeError as error:
            _fail(f"query failed: {error}")
    table = Table(*[str(c) for c in frame.columns])
    for row in frame.itertuples(index=False):
        table.add_row(*[str(v) for v in row])
    console.print(table)
    console.print(f"{len(frame)} rows")


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())
