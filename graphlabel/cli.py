"""The `graphlabel` command line: demo, ingest, ingest-edges, build-graph, label, query, report,
prune-runs, explain, predict, serve, export, review, accept, correct, drop-dataset, copy-store.

Every command but copy-store takes ``--store URI``: a folder for the embedded store (default
``$GRAPHLABEL_STORE`` or ``.graphlabel``), or ``neo4j://host:7687`` / ``bolt://host:7687``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.console import Console
from rich.table import Table

from labelling.wording import counted

# A closed network has nowhere to send Prefect's telemetry; asking only prints errors.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# The flows return their warnings and each command prints them ("warning: ..."); without a
# handler of its own, a run without a server would also reach Python's last-resort
# handler, which printed every warning a second time, bare.
logging.getLogger("graphlabel").addHandler(logging.NullHandler())

# Tracebacks never list local variables: one of them could hold a store password.
# What `graphlabel` alone and `graphlabel --help` show: what the tool does and a first run
# (click rewraps paragraphs; a paragraph after \b keeps its lines).
HELP = """Label stored entities from a few given labels and a similarity graph.

\b
A first run, on the embedded store in ./.graphlabel:
  graphlabel ingest FILE --dataset D --key ID --features '*' --label LABEL
  graphlabel label --dataset D     (builds a 10-NN graph if it has none)
  graphlabel report --dataset D    (then review, export, query)
graphlabel demo does all of it on scikit-learn's handwritten digits.

Every command but copy-store takes --store: a folder (the embedded store; default $GRAPHLABEL_STORE or
.graphlabel) or neo4j://host:7687. COMMAND --help says more."""

#: The exit status typer gives a command stopped by Ctrl-C (SIGINT), as shells do: 128 + 2.
INTERRUPTED_STATUS = 130

app = typer.Typer(add_completion=False, no_args_is_help=True, help=HELP, rich_markup_mode=None,
                  pretty_exceptions_show_locals=False)
# soft_wrap: a line is one line however long (a terminal wraps it; a pipe or a log file keeps
# it whole, so grep finds it); tables still fit the width
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

#: The distributions `graphlabel --version` names beside its own: the parts a bug report needs.
VERSIONED = ("kuzu", "ladybug", "neo4j", "prefect", "numpy", "scipy")


def _version(shown: bool) -> None:
    """``--version``: graphlabel's version and its main parts' (``labelling.provenance.versions``,
    what a run records: installed metadata only, no import, so it answers at once)."""
    if not shown:
        return
    from labelling.provenance import versions

    found = versions()
    parts = ", ".join(f"{name} {found[name]}" for name in VERSIONED if name in found)
    console.print(f"graphlabel {found['graphlabel']} (Python {found['python']}; {parts})", highlight=False)
    raise typer.Exit()


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                            help="Show graphlabel's version and its main parts', and exit.")) -> None:
    """Label stored entities from a few given labels and a similarity graph."""


def _checked_store(uri: str | None) -> str | None:
    """Refuse a store URI with credentials before any flow starts: Prefect would store it
    with the flow run's parameters (``graphstore.secrets``)."""
    from graphstore.secrets import check_store_uri

    if uri:
        try:
            check_store_uri(uri)
        except ValueError as error:
            _fail(str(error), code=2)  # a usage error, said in one line (the message is redacted)
    return uri


def _checked_dataset(name: str | None) -> str | None:
    """Refuse a hostile or malformed dataset name before a flow starts: Prefect would
    otherwise create, name and tag a flow run after it before the flow refused it."""
    from graphstore.schemas import check_dataset_name

    if name is not None:
        try:
            check_dataset_name(name)
        except ValueError as error:
            _fail(str(error))
    return name


StoreOption = typer.Option(None, "--store", envvar="GRAPHLABEL_STORE", callback=_checked_store,
                           help="Store URI: a folder (the embedded store) or neo4j:// / bolt:// (Neo4j), without"
                                " credentials (NEO4J_USER, NEO4J_PASSWORD or GRAPHLABEL_NEO4J_PASSWORD_BLOCK).")


QuietOption = typer.Option(False, "--quiet", "-q", help="Show no progress (the stages' counts, rate and time"
                                                         " left, on stderr while the command runs).")


SearchOption = typer.Option(None, help="How a kNN graph's neighbours are found when it is built: auto (exact up"
                                        " to 50k nodes, then faiss HNSW, rebuilt wider when its sampled recall is"
                                        " below 0.95), exact, hnsw, ivf, hnswlib or pynndescent (README: the kNN"
                                        " search).")


def _progress(headline: str, quiet: bool):
    """The progress of the command's flow on stderr: bars on a terminal, a line every few
    seconds in a log, nothing with --quiet (graphlabel/progress_display.py)."""
    from graphlabel.progress_display import shown

    return shown(err, headline, quiet)


def _escape(message: str) -> str:
    from rich.markup import escape

    from graphlabel.console import settle_prefect
    from graphstore.secrets import PASSWORD_ENV, redact

    settle_prefect()  # Prefect's last words come before this command's
    # Errors are redacted where they are raised; this is the last line of defence for
    # every message the CLI prints (and keeps "[...]" in messages from reading as markup).
    return escape(redact(message, os.environ.get(PASSWORD_ENV)))


def _fail(message: str, code: int = 1) -> NoReturn:
    err.print(f"[bold red]error:[/] {_escape(message)}")
    raise typer.Exit(code)


def _print_warnings(summary: dict) -> None:
    """A flow's warnings (k capped, weights without information, nodes no label reaches...),
    one line each on stderr."""
    from rich.markup import escape

    for note in summary.get("warnings", ()):
        err.print(f"[yellow]warning:[/] {escape(note)}")


def _timings_table(timings: dict[str, float]) -> Table:
    table = Table("stage", "seconds", title="time per stage")
    for stage, seconds in timings.items():
        table.add_row(stage, f"{seconds:.3f}")
    return table


def _store_down(error: BaseException) -> str:
    """The one line for a store that stopped answering after the store tasks' retries."""
    from graphstore.secrets import PASSWORD_ENV, redact

    message = redact(f"{type(error).__name__}: {error}", os.environ.get(PASSWORD_ENV)).splitlines()[0]
    return (f"the store stopped answering ({message}); what it had written stays and the run is not"
            " marked completed: run the command again when the store is back")


def _is_transient(error: BaseException) -> bool:
    """The store stopped answering (``flows.tasks.is_transient``): an operational
    condition, told in one line, not a bug."""
    from flows.tasks import is_transient

    return is_transient(error)


def _user_errors():
    """Errors that are the input's fault: shown as one clear line, not a traceback."""
    from graphstore.errors import StoreSetupError
    from graphstore.secrets import StoreConnectionError
    from labelling.problems import NotEnoughLabels
    from labelling.records import NoValidRecords
    from solvers import SolverOutOfMemory, SolverTimeLimit

    return (NotEnoughLabels, NoValidRecords, FileNotFoundError, ValueError, StoreConnectionError,
            StoreSetupError, SolverTimeLimit, SolverOutOfMemory)


def _in_command_line_words(error: Exception) -> str:
    """The error's message, a solver's time-limit advice given as this command's flags (its
    own advice is in the Python API's words: method='harmonic', time_limit=None)."""
    from solvers import SolverTimeLimit

    if isinstance(error, SolverTimeLimit):
        return (f"{error.what} Use --solver harmonic, or --params '{{\"time_limit\": null}}' to let it run"
                " (or a number of seconds).")
    return str(error)


def _store_errors():
    """What a command that reads or writes a named node or run says in one line."""
    from graphstore.errors import NotFound

    return (NotFound, *_user_errors())


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """Every command's ending for what is not a bug: the input's fault, a node or run not
    found, or a store that stopped answering after the store tasks' retries, each said in
    one line with a non-zero exit; anything else is re-raised with its traceback."""
    try:
        yield
    except typer.Exit:  # a _fail inside the block has already said it
        raise
    except _store_errors() as error:
        _fail(_in_command_line_words(error))
    except Exception as error:  # noqa: BLE001 - re-raised unless the store is down
        if not _is_transient(error):
            raise
        _fail(_store_down(error))


@app.command()
def demo(
    store: str | None = StoreOption,
    per_class: int = typer.Option(10, help="Labels kept per class."),
    flip: float = typer.Option(0.1, help="Fraction of kept labels flipped on purpose."),
    seed: int = typer.Option(0, help="Random seed of the hidden/flipped labels."),
    k: int = typer.Option(10, help="Neighbours per node in the kNN graph."),
    solver: str = typer.Option("harmonic", help="Solver to run."),
    quiet: bool = QuietOption,
) -> None:
    """Label scikit-learn's handwritten digits end to end and score the result."""
    from flows.demo import DATASET, demo_flow
    from flows.direct import run_flow
    from labelling.options import RunOptions, run_tags

    try:  # as label does: a misspelt solver is a bad option, not a failed run
        RunOptions(solver)
    except ValueError as error:
        _fail(str(error), code=2)
    with _one_line_errors(), _progress("running the labelling flow on the digits...", quiet):
        # "full": the demo's labelling run (a subflow, tagged as its parent) relabels every node
        result = run_flow(demo_flow, run_tags(DATASET, solver, "full", "demo"), _user_errors(), store_uri=store,
                          per_class=per_class, flip_fraction=flip, seed=seed, k=k, solver=solver)
    noise = result["noise"]
    console.rule("[bold]graphlabel demo: handwritten digits")
    console.print(f"nodes: {result['n_nodes']:,}   given labels: {result['n_given']:,}"
                  f" ({result['n_flipped']} flipped on purpose)   edges: {result['metrics']['n_edges']:,}")
    console.print(f"solver: {result['solver']}   run id: {result['run_id']}")
    console.print(f"[bold]accuracy on the {result['n_hidden']:,} hidden labels: {result['accuracy_hidden']:.3f}")
    # two lines: on one, "(precision" and its number wrapped apart at 80 columns
    console.print(f"given labels flagged as noisy: {noise['flagged']}   flipped ones caught:"
                  f" {noise['caught']} of {noise['flipped']}")
    console.print(f"noise flags' precision {noise['precision']:.2f}, recall {noise['recall']:.2f}")
    console.print(_timings_table(result["timings"]))
    shown = Table("key", "given", "predicted", "confidence", "flagged", "true label",
                  title="the least confident predictions: look at these first")
    for row in result["least_confident"]:
        given = row["given_label"] if isinstance(row["given_label"], str) else "—"
        shown.add_row(row["key"], given, str(row["predicted_label"]), f"{row['label_confidence']:.3f}",
                      "yes" if row["label_noise"] else "", row["true_label"])
    console.print(shown)
    console.print("Ask the store yourself with `graphlabel query` (the README's query cookbook,"
                  " cypher/examples/).", highlight=False)


@app.command()
def ingest(
    file: str = typer.Argument(..., help="CSV, TSV, Parquet or ARFF file of records."),
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset name the nodes belong to."),
    key: str = typer.Option(..., help="Column with each record's unique key; '#' for a file without one: each"
                            " record's line in the file (its row in a Parquet file) is its key."),
    features: str | None = typer.Option(None, help="Numeric feature columns: comma-separated names or globs"
                                        " ('x_*'); needed unless --text or --categorical gives the features."),
    label: str | None = typer.Option(None, help="Column with the given label (may be empty)."),
    categorical: str | None = typer.Option(None, help="Categorical feature columns (names or globs): one-hot"
                                           " for kNN, Hamming for --metric hamming."),
    label_confidence: str | None = typer.Option(None, help="Column with the trust in each given label, in"
                                                " [0, 1] (empty: 1); the solvers that weigh labels read it."),
    rejects: str | None = typer.Option(None, help="Where to write rejected rows (default DATASET.rejects.csv)."),
    text: str | None = typer.Option(None, help="A text column, embedded into 384 features after --features"
                                    " (needs pip install 'graphlabel[text]'); empty cells are rejected."),
    classes: str | None = typer.Option(None, help="Allowed labels, comma-separated (a,b,c): a row with"
                                          " another label is rejected. Default: any label."),
    encoding: str = typer.Option("utf-8", help="Text encoding of a CSV, TSV or ARFF file (latin-1, cp1252,"
                                 " utf-16...)."),
    quiet: bool = QuietOption,
    store: str | None = StoreOption,
) -> None:
    """Ingest records as nodes; every rejected row is reported with its reason."""
    from flows.direct import run_flow
    from flows.labelling import ingest_flow
    from labelling.options import run_tags
    from labelling.records import NoValidRecords, check_source

    if features is None and categorical is None and text is None:
        _fail("ingest needs --features (numeric columns), --categorical (categorical ones) or --text (a text"
              " column to embed), or several of them; --features '*' takes every column but the key and label"
              " (numbers, each of them)", code=2)
    allowed = None
    if classes is not None:
        allowed = [name.strip() for name in classes.split(",")]
        if not all(allowed):
            _fail(f"--classes takes non-empty labels separated by commas, got {classes!r}", code=2)
    with _one_line_errors():
        check_source(file)  # said here too: a run started for a misspelt path fails in the dashboard
        try:
            with _progress(f"ingesting {file} into {dataset!r}...", quiet):
                summary = run_flow(ingest_flow, run_tags(dataset, "ingest"), _user_errors(), source=file,
                                   dataset=dataset, key=key, features=features, label=label, store_uri=store,
                                   rejects_path=rejects, classes=allowed, encoding=encoding, text=text,
                                   categorical=categorical, label_confidence=label_confidence)
        except NoValidRecords as error:
            if not len(error.rejects):  # no rows at all: nothing to write
                raise
            path = rejects or f"{dataset}.rejects.csv"
            error.rejects.to_csv(path, index=False)
            _fail(f"{error} (all {len(error.rejects)} rejects written to {path})")
    others = summary["dataset_nodes"] - summary["stored"]
    also = (f", which also holds {counted(others, 'node')} of earlier ingests (keys this file does not have)"
            if others > 0 else "")
    console.print(f"stored {counted(summary['stored'], 'node')} in dataset {dataset!r}{also}")
    from labelling.records import given_labels_note, removed_labels_note, replaced_reviews_note, single_classes_note

    if label is not None:
        note = given_labels_note(summary["stored"], summary["labelled"], summary["label_classes"], label)
        if summary["labelled"]:
            console.print(note, highlight=False)
        else:  # --label names a column with no filled cell: said, as the first run would fail
            err.print(f"[yellow]note:[/] {_escape(note)}")
    if summary["new_single_classes"]:
        err.print(f"[yellow]note:[/] {_escape(single_classes_note(summary['new_single_classes']))}")
    before, after = summary["given_labels_before"], summary["given_labels_after"]
    if after < before:
        err.print(f"[yellow]note:[/] {_escape(removed_labels_note(before, after, label))}")
    if summary["replaced_reviews"]:
        err.print(f"[yellow]note:[/] {_escape(replaced_reviews_note(summary['replaced_reviews']))}")
    if summary["missing_like_labels"]:
        from labelling.records import missing_like_note

        err.print(f"[yellow]note:[/] {_escape(missing_like_note(summary['missing_like_labels']))}")
    if summary["rejected"]:
        _print_rejects(summary["rejected"], summary["rejects_file"], summary["reject_reasons"])
    elif summary["removed_rejects_file"]:
        err.print(f"rejected no row: removed {_escape(summary['removed_rejects_file'])}, an earlier ingest's",
                  highlight=False)


def _store_option(store: str | None) -> str:
    """`` --store URI`` for a follow-up command the output suggests, when the command was
    given one (the suggestions without it pointed a Neo4j walk at the default store), with
    any password in it left out."""
    from graphstore import redact_uri

    return f" --store {redact_uri(store)}" if store else ""


def _print_rejects(count: int, path, reasons: dict | None = None) -> None:
    """The line after a command that rejected rows: how many, of which kinds, and where the
    reasons are."""
    kinds = f" ({', '.join(f'{kind}: {n:,}' for kind, n in reasons.items())})" if reasons else ""
    err.print(f"[yellow]rejected {counted(count, 'row')}[/]{kinds}, reasons in {_escape(str(path))}")


@app.command("ingest-edges")
def ingest_edges(
    file: str = typer.Argument(..., help="CSV, TSV or Parquet file of edges, one row each."),
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset whose nodes the edges join."),
    source: str = typer.Option(..., help="Column with the key of one end."),
    target: str = typer.Option(..., help="Column with the key of the other end."),
    weight: str | None = typer.Option(None, help="Column with each edge's weight (>= 0; default: weight 1)."),
    edge_type: str = typer.Option("EDGE", "--type", help="Name of this kind of edge (--graph edges:NAME);"
                                                          " a new file of a type replaces its edges."),
    rejects: str | None = typer.Option(None, help="Where to write rejected rows"
                                                  " (default DATASET.edge-rejects.csv)."),
    encoding: str = typer.Option("utf-8", help="Text encoding of a CSV/TSV file."),
    store: str | None = StoreOption,
) -> None:
    """Load the user's own edges (embedded store); every rejected row is reported with its reason."""
    from flows.direct import run_flow
    from flows.user_edges import NoValidEdges, ingest_edges_flow
    from labelling.options import run_tags

    with _one_line_errors():
        with console.status(f"ingesting the {edge_type} edges of {file} into {dataset!r}..."):
            summary = run_flow(ingest_edges_flow, run_tags(dataset, "ingest-edges"),
                               (*_user_errors(), NoValidEdges), source=file, dataset=dataset, source_column=source,
                               target_column=target, weight_column=weight, edge_type=edge_type, store_uri=store,
                               rejects_path=rejects, encoding=encoding)
    console.print(f"stored {counted(summary['stored'], f'{edge_type} edge')} in dataset {dataset!r}")
    if summary["changed_nodes"]:
        console.print(f"{counted(summary['changed_nodes'], 'node')} at the ends of added, removed or reweighted"
                      " edges marked changed: the next label run relabels around them")
    if summary["rejected"]:
        _print_rejects(summary["rejected"], summary["rejects_file"], summary["reject_reasons"])


@app.command("build-graph")
def build_graph(
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset name."),
    graph: str = typer.Option("knn", help="knn, delta, Blum & Chawla's mincut3, delta0, delta_half, the SGT's "
                                           "sgt (Joachims eq. 22) or NMF's mutual_knn (Bergamim & Breve Eq. 6-8);"
                                           " the user's own edges: edges:TYPE[:WEIGHT_PROPERTY], or added to a"
                                           " graph: knn+edges:TYPE[:WEIGHT_PROPERTY]."),
    edges_weight: float | None = typer.Option(None, help="Factor of the user's edges in KIND+edges:TYPE"
                                                          " (default 1)."),
    k: int = typer.Option(10, help="Neighbours per node (knn, sgt, mutual_knn)."),
    metric: str = typer.Option("euclidean", help="euclidean or cosine; hamming (Blum & Chawla's information-gain"
                                                 " weighted, categorical columns only) for delta, mincut3,"
                                                 " delta0, delta_half."),
    weights: str = typer.Option("gaussian", help="gaussian, cosine or binary."),
    delta: float | None = typer.Option(None, help="Distance threshold (delta graph)."),
    sigma: float | None = typer.Option(None, help="Gaussian bandwidth (default: the median k-th neighbour distance)."),
    scale: str = typer.Option("standard", help="Scale the numeric features first: standard (mean 0, std 1),"
                                               " robust (median 0, IQR 1) or none."),
    search: str | None = SearchOption,
    quiet: bool = QuietOption,
    store: str | None = StoreOption,
) -> None:
    """Build the dataset's similarity relationships in the store."""
    from flows.direct import run_flow
    from flows.labelling import build_graph_flow
    from labelling.options import run_tags
    from similarity.spec import GraphRequest

    try:  # checked before the flow starts, as label's options: a bad option is no failed flow run
        GraphRequest(graph, k, metric, weights, delta, sigma, edges_weight, scale, search)
    except ValueError as error:
        _fail(str(error), code=2)
    with _one_line_errors():
        with _progress(f"building the {graph} graph of {dataset!r}...", quiet):
            summary = run_flow(build_graph_flow, run_tags(dataset, "build-graph", graph), _user_errors(),
                               dataset=dataset, store_uri=store, graph=graph, k=k, metric=metric, weights=weights,
                               delta=delta, sigma=sigma, edges_weight=edges_weight, scale=scale, search=search)
    _print_warnings(summary)
    if summary["spec"].similarity_kind is None:
        console.print(f"{dataset!r} is labelled over the user's {summary['edges']:,} {summary['spec'].edges_type}"
                      " edges (graphlabel's own similarity relationships of it deleted)")
    else:
        console.print(f"wrote {counted(summary['edges'], 'similarity relationship')} for {dataset!r}")
    console.print(_timings_table(summary["timings"]))


@app.command()
def label(
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset name."),
    solver: str = typer.Option("harmonic", help="Solver: harmonic, mincut, lcsnc, spectral, maxmargin, nmf, or auto "
                                                "(cross-validated on the given labels, see the run report)."),
    params: str = typer.Option("{}", help="Solver parameters as JSON, e.g. '{\"gamma_g\": 0.1}'."),
    rebuild_graph: bool = typer.Option(False, help="Rebuild the similarity graph first (a full run): with the graph"
                                                    " options given here, and the others as its last build asked"
                                                    " for them."),
    graph: str | None = typer.Option(None, help="Build this graph first (as build-graph --graph; implies"
                                          " --rebuild-graph), e.g. edges:CO_PURCHASED or knn+edges:TYPE:WEIGHT."),
    edges_weight: float | None = typer.Option(None, help="Factor of the user's edges in KIND+edges:TYPE"
                                                          " (default 1)."),
    k: int | None = typer.Option(None, help="Neighbours per node when rebuilding (default: as the graph was last"
                                    " asked for, else 10); without"
                                    " --rebuild-graph the graph is used as it was built."),
    scale: str | None = typer.Option(None, help="Feature scaling when rebuilding: standard, robust or none"
                                     " (default: as the graph was last asked for, else standard); without"
                                     " --rebuild-graph, as the graph was built."),
    search: str | None = SearchOption,
    full: bool = typer.Option(False, "--full", help="Relabel every node (default: only what changed"
                              " since the nodes were last labelled; the first run is always full)."),
    holdout: float = typer.Option(0.0, help="Fraction of given labels hidden to score the run"
                                  " (accuracy and reliability plot in the run report; implies --full)."),
    keep_runs: int | None = typer.Option(None, help="Prune older LabelRun nodes, keeping this many."),
    split_components: bool = typer.Option(True, help="Solve connected components as separate tasks."),
    dask: bool = typer.Option(False, help="Solve the component batches on Dask: a local cluster, or"
                              " the scheduler in --dask-address / $GRAPHLABEL_DASK_ADDRESS."),
    dask_address: str | None = typer.Option(None, envvar="GRAPHLABEL_DASK_ADDRESS",
                                               help="Dask scheduler, e.g. tcp://scheduler:8786."),
    quiet: bool = QuietOption,
    store: str | None = StoreOption,
) -> None:
    """Label the dataset's nodes and write predictions back as node properties."""
    from contextlib import AbstractContextManager, nullcontext
    from typing import cast

    from flows.direct import prefect_api_configured, run_flow
    from flows.labelling import labelling_flow
    from labelling.options import RunOptions, asked_kind_tags, run_tags
    from similarity.spec import GraphRequest
    from solvers.problem import DegenerateLabelingWarning

    # the run says a labelling no better than a guess itself, in its log, record and report,
    # and so among this command's warnings (labelling.run_metrics.degenerate_note): once
    warnings.filterwarnings("ignore", category=DegenerateLabelingWarning)

    try:
        solver_params = json.loads(params)
    except json.JSONDecodeError as error:
        _fail(f"--params is not valid JSON: {error}", code=2)
    if not isinstance(solver_params, dict):
        _fail(f"--params must be a JSON object of the solver's parameters, such as '{{\"gamma_g\": 0.1}}',"
              f" got {params}", code=2)
    if not 0.0 <= holdout < 1.0:  # RunOptions checks it too, under the flow's name holdout_fraction
        _fail(f"--holdout must lie in [0, 1), got {holdout}", code=2)
    try:
        # checked before the flow starts: a misspelt parameter is no failed run on the record
        RunOptions(solver, solver_params, full=full, holdout_fraction=holdout)
        GraphRequest(graph, k, edges_weight=edges_weight, scale=scale, search=search)
    except ValueError as error:  # an unknown solver, parameter or graph option, a value out of range: a bad option
        _fail(str(error), code=2)
    with _one_line_errors():
        flow, cluster = labelling_flow, cast(AbstractContextManager, nullcontext())
        if dask or dask_address:
            from flows.runners import dask_client, dask_runner

            if prefect_api_configured():
                flow = labelling_flow.with_options(task_runner=dask_runner(dask_address))
            else:
                cluster = dask_client(dask_address)
        full = full or rebuild_graph  # every node's relationships are new: an incremental run would ignore them
        with _progress(f"labelling {dataset!r} with {solver}...", quiet), cluster:
            summary = run_flow(flow, run_tags(dataset, solver, *asked_kind_tags(full, holdout)), _user_errors(),
                               dataset=dataset,
                               store_uri=store, solver=solver, solver_params=solver_params,
                               build_graph=rebuild_graph or graph is not None, graph=graph,
                               edges_weight=edges_weight, k=k, scale=scale, search=search,
                               split_components=split_components,
                               full=full,
                               holdout_fraction=holdout,
                               keep_runs=keep_runs)
    _print_warnings(summary)
    metrics, run_id, flagged = summary["metrics"], summary["run_id"], f"{summary['n_flagged']:,} flagged as noisy"
    if metrics.get("auto_chosen"):  # "with auto" did not say which solver labelled the nodes
        solver = f"auto's choice, {metrics['auto_chosen']}"
    if metrics.get("incremental"):
        # the run wrote only the nodes around what changed: its counts are of those, said so
        # (an incremental run with nothing to do read "labelled 0 nodes ... (0 given labels")
        console.print(f"relabelled {summary['n_nodes']:,} of {counted(metrics['n_nodes'], 'node')} of {dataset!r}"
                      f" with {solver} ({counted(summary['n_labeled'], 'given label')} among them, {flagged}),"
                      f" run {run_id}")
        console.print(f"incremental run: {counted(metrics['n_changed'], 'changed node')} ({metrics['n_new']:,} new)"
                      " since the last run; --full relabels all")
    else:
        # nodes no given label reaches get no label (the warning above says why)
        unreached = int(metrics.get("n_unreachable") or 0)
        nodes = counted(summary["n_nodes"], "node")
        if unreached:
            nodes = f"{summary['n_nodes'] - unreached:,} of {nodes}"
        console.print(f"labelled {nodes} of {dataset!r} with {solver}"
                      f" ({counted(summary['n_labeled'], 'given label')}, {flagged}), run {run_id}")
        if reason := metrics.get("full_run_reason"):
            from flows.labelling import FULL_RUN_ASKED

            if reason == FULL_RUN_ASKED:  # the record lists every way to ask; this command had one
                reason = f"asked for ({'--rebuild-graph' if rebuild_graph else '--graph' if graph else '--full'})"
            console.print(f"full run: {reason}")
    if summary["n_flagged"]:  # where to look at them, and decide (a newcomer's walk did not find it)
        console.print(f"the labels flagged as noisy, to accept or correct: graphlabel review --dataset {dataset}"
                      f"{_store_option(store)}", highlight=False)
    if metrics.get("holdout_accuracy") is not None:
        from labelling.reporting import shown_balanced_accuracy

        balanced = shown_balanced_accuracy(metrics)
        console.print(f"accuracy on the {counted(metrics['n_holdout'], 'held-out label')}:"
                      f" {metrics['holdout_accuracy']:.3f}"
                      + (f"; balanced accuracy (the classes' mean recall): {balanced:.3f}" if balanced is not None
                         else ""))
    console.print(_timings_table(summary["timings"]))


@app.command()
def query(
    cypher: str = typer.Argument(..., help="A Cypher query, a .cypher file, or an example of cypher/examples"
                                 " by name (low_confidence, flagged_with_neighbours, ...)."),
    param: list[str] = typer.Option([], "--param", "-p", help="A query parameter NAME=VALUE (JSON values"
                                    " are parsed, anything else is a string); repeat for several."),
    output: str = typer.Option("table", "--format", help="table (for reading: numbers to 6 significant"
                               " digits), csv or json (every value in full, nulls empty in CSV and null in"
                               " JSON: for other programs)."),
    write: bool = typer.Option(False, "--write", help="Allow the query to change the store (default:"
                               " read-only, a writing query is refused)."),
    store: str | None = StoreOption,
) -> None:
    """Run one Cypher statement against the store and print its rows (read-only unless --write)."""
    from graphstore import open_store
    from graphstore.queries import user_query_text

    if output not in ("table", "csv", "json"):
        _fail(f"--format must be table, csv or json, got {output!r}", code=2)
    parameters = {}
    for item in param:
        name, sep, value = item.partition("=")
        if not sep or not name:
            _fail(f"--param takes NAME=VALUE, got {item!r}", code=2)
        try:
            parameters[name] = json.loads(value)
        except json.JSONDecodeError:
            parameters[name] = value
    with _one_line_errors():
        opened = open_store(store)
    with opened as graph_store:
        try:
            frame = graph_store.query(user_query_text(cypher, graph_store.dialect), parameters, write=write)
        except ValueError as error:  # several statements, an unbound parameter, a refused write
            _fail(str(error))
        except RuntimeError as error:  # ladybug casts a text key to a -p number, and fails: say why too
            _fail("; note: ".join([f"query failed: {error}", *_number_hints(parameters)]))
        hints = _no_rows_hints(graph_store, parameters) if frame.empty else []
    if output == "csv":
        from labelling.reporting import query_csv_frame

        query_csv_frame(frame).to_csv(sys.stdout, index=False)
    elif output == "json":
        from labelling.reporting import query_records

        json.dump(query_records(frame), sys.stdout, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        from labelling.reporting import query_table

        console.print(query_table(frame))
        console.print(counted(len(frame), "row"), highlight=False)
    for hint in hints:  # on stderr: a csv or json stdout stays the rows alone
        err.print(f"note: {hint}", highlight=False)


def _number_hints(parameters: dict) -> list[str]:
    """A note per ``-p`` value sent as a number or a boolean (keys are text)."""
    hints = []
    for name, value in parameters.items():
        if isinstance(value, bool | int | float):
            kind = "a boolean" if isinstance(value, bool) else "a number"
            hints.append(f"-p {name}={json.dumps(value)} was sent as {kind}: a text value"
                         f" (keys are text) is -p '{name}=\"{value}\"'")
    return hints


def _no_rows_hints(graph_store, parameters: dict) -> list[str]:
    """Why a query with parameters may have matched nothing, for the two slips a newcomer
    walk made: ``-p key=1660`` sends the number 1660 where keys are text, and a dataset
    name with a typo matches no node. Hints only: the query itself was valid."""
    from graphstore.schemas import DATASET_NAME

    dataset = parameters.get("dataset")
    if isinstance(dataset, str) and DATASET_NAME.fullmatch(dataset) and not graph_store.count_nodes(dataset):
        # the reason, alone: a number hint then misleads (-p max_confidence=0.6 is meant as a number)
        return [str(graph_store.unknown_dataset(dataset))]
    return _number_hints(parameters)


@app.command()
def report(
    run: str | None = typer.Option(None, "--run", help="Run id, or a unique start or end of one: print that"
                                      " run's summary."),
    dataset: str | None = typer.Option(None, callback=_checked_dataset,
                                       help="Dataset: list its recent runs (without --run)."),
    limit: int = typer.Option(20, help="Runs listed with --dataset."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the run's summary as markdown."),
    store: str | None = StoreOption,
) -> None:
    """Summarise a labelling run (--run ID), or list a dataset's recent runs (--dataset NAME)."""
    from graphstore import open_store
    from labelling.liveness import mark_interrupted_runs
    from labelling.reporting import (
        failed_runs,
        run_report_markdown,
        run_report_renderables,
        run_summary,
        runs_table,
        short_run_id,
    )

    if run is None and dataset is None:
        _fail("give --run ID for one run's summary, or --dataset NAME to list its runs", code=2)
    with _one_line_errors():
        with open_store(store) as graph_store:
            mark_interrupted_runs(graph_store, dataset)  # a killed run is not listed as running
            if run is not None:
                summary = run_summary(graph_store, run)
            else:
                assert dataset is not None  # one of --run and --dataset, checked above
                runs = graph_store.read_runs(dataset=dataset, limit=limit)
                if runs.empty and not graph_store.count_nodes(dataset):
                    raise graph_store.unknown_dataset(dataset)
    if run is None:
        if runs.empty:
            _fail(f"no runs of dataset {dataset!r} in the store yet: graphlabel label --dataset {dataset} starts one")
        console.print(runs_table(runs, title=f"runs of {dataset!r}, newest first"))
        for run_id, message in failed_runs(runs):
            console.print(f"[bold red]{run_id} failed:[/] {_escape(message)}", highlight=False)
        # the id's end, as the table shows it: a schedule's runs share their ids' start
        newest = short_run_id(runs["run_id"].iloc[0]).removeprefix("…")
        # in 80 columns: "a run's summary: ... (any unique start or end of its id)" wrapped; the
        # command on a line of its own, to copy
        console.print(f"one run (a unique start or end of its id):\n  graphlabel report --run {newest}"
                      f"{_store_option(store)}", highlight=False)
        return
    if dataset is not None and summary["dataset"] != dataset:
        _fail(f"run {run!r} belongs to dataset {summary['dataset']!r}, not {dataset!r}")
    if markdown:
        console.print(run_report_markdown(summary), markup=False, highlight=False)
    else:
        for renderable in run_report_renderables(summary):
            console.print(renderable)


@app.command("prune-runs")
def prune_runs(
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset whose LabelRun nodes to prune."),
    keep_last: int = typer.Option(..., "--keep-last", min=0, help="Completed runs to keep, newest first."),
    store: str | None = StoreOption,
) -> None:
    """Delete a dataset's LabelRun nodes beyond its newest N completed runs.

    Never deletes a running run, nor the run the nodes' predictions come from.
    """
    from graphstore import open_store
    from labelling.liveness import mark_interrupted_runs

    with _one_line_errors():
        with open_store(store) as graph_store:
            if not graph_store.count_nodes(dataset) and graph_store.read_runs(dataset=dataset, limit=1).empty:
                raise graph_store.unknown_dataset(dataset)
            mark_interrupted_runs(graph_store, dataset)  # a killed run is no running run to keep
            deleted = graph_store.prune_runs(dataset, keep_last)
    console.print(f"deleted {counted(deleted, 'LabelRun node')} of {dataset!r}"
                  f" (kept the newest {keep_last} completed, running ones and the current one)")


def _support_vectors(graph_store, dataset: str, key: str, run_id: str, limit: int) -> dict:
    """The support vectors' share at the node, from the model its maxmargin run kept
    (nothing when the run kept none, or the node has no features)."""
    from labelling.run_model import RunModel, support_explanation

    blob = graph_store.read_model(run_id)
    x = graph_store.node_features(dataset, key) if blob is not None else None
    if blob is None or x is None:
        return {}
    model = RunModel.from_bytes(blob)
    if len(x) != model.n_features:
        return {}
    return support_explanation(model, model.encode(x[None, :])[0], limit)


@app.command()
def explain(
    key: str = typer.Argument(..., help="Key of the node to explain."),
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset the node belongs to."),
    limit: int = typer.Option(10, min=1, help="Neighbours listed, strongest first."),
    store: str | None = StoreOption,
) -> None:
    """Why a node got its label: its strongest neighbours and each class's share of its weights.

    Read from the stored similarity relationships: a neighbour counts with its given label,
    else its predicted one.
    """
    from graphstore import open_store
    from labelling.records import key_text
    from labelling.reporting import explained_node, explanation_renderables

    key = key_text(key) or key  # the key as ingest stored it (" 7 " and "7.0" are "7")
    with _one_line_errors():
        with open_store(store) as graph_store:
            node, neighbours = explained_node(graph_store, dataset, key, limit)
            if node.get("label_solver") == "maxmargin" and node.get("label_run_id"):
                node.update(_support_vectors(graph_store, dataset, key, node["label_run_id"], limit))
            users = (graph_store.read_graph_build(dataset) or {}).get("edges_type")
    for renderable in explanation_renderables(node, neighbours):
        console.print(renderable)
    if users:  # the solver's graph held the user's edges too (graphstore/user_edges.py)
        console.print(f"note: these are graphlabel's own similarity relationships only; {dataset!r} is labelled"
                      f" over the user's {users} edges as well (--graph), which explain does not list",
                      highlight=False)
    elif not node["n_neighbours"]:
        console.print(f"{key!r} has no similarity relationships: build the graph (graphlabel build-graph --dataset"
                      f" {dataset}{_store_option(store)}) or label it with an inductive solver (maxmargin)",
                      highlight=False)


@app.command()
def predict(
    file: str = typer.Argument(..., help="CSV, TSV, Parquet or ARFF file of records that are not in the store."),
    run: str | None = typer.Option(None, "--run", help="A maxmargin run's id, or a unique start or end of one."),
    dataset: str | None = typer.Option(None, "--dataset", callback=_checked_dataset,
                                       help="Instead of --run: the dataset's newest completed maxmargin run"
                                       " that kept its model."),
    key: str = typer.Option(..., help="Column with each record's key ('#': its line in the file)."),
    features: str | None = typer.Option(None, help="The feature columns, as the dataset was ingested with"
                                        " (default: the run's own columns, by name)."),
    text: str | None = typer.Option(None, help="The text column, as the dataset was ingested with."),
    categorical: str | None = typer.Option(None, help="The categorical columns, as the dataset was ingested"
                                           " with; a value the run never saw rejects its row."),
    label: str | None = typer.Option(None, help="The file's label column, if it has one, as the dataset was"
                                     " ingested with: left out of the --features and --categorical globs."),
    output: str | None = typer.Option(None, "--output", help="Write the predictions here (.csv, .parquet or .pq);"
                                      " default: CSV on standard output."),
    rejects: str | None = typer.Option(None, help="Where to write rejected rows (default predict.rejects.csv)."),
    encoding: str = typer.Option("utf-8", help="Text encoding of a CSV, TSV or ARFF file."),
    store: str | None = StoreOption,
) -> None:
    """Label new records with the model a maxmargin run kept (nothing is written to the store)."""
    from pathlib import Path

    from graphstore import open_store
    from labelling.export import SUFFIXES, output_problem, write_export
    from labelling.predict import newest_model_run, predict_records

    if (run is None) == (dataset is None):
        _fail("give --run ID (a maxmargin run) or --dataset NAME (its newest maxmargin run), one of them", code=2)
    written = SUFFIXES.get(Path(output).suffix.lower()) if output is not None else "csv"  # as export's endings
    if written is None:
        _fail(f"--output must end in {', '.join(SUFFIXES)}, got {output!r}", code=2)
    if output is not None and (problem := output_problem(output)) is not None:
        _fail(problem, code=2)
    with _one_line_errors(), open_store(store) as graph_store:
        run_id = newest_model_run(graph_store, dataset) if dataset is not None else str(run)
        predicted = predict_records(graph_store, run_id, file, key=key, features=features, text=text,
                                    encoding=encoding, categorical=categorical, label=label)
    if output is None:
        predicted.frame.to_csv(sys.stdout, index=False)
    else:
        write_export(predicted.frame, output, written)
    where = f" to {output}" if output else ""
    err.print(f"predicted {counted(len(predicted.frame), 'record')}{where} with run {predicted.run_id} of"
              f" {predicted.dataset!r} ({predicted.n_classes} classes)", highlight=False)
    if len(predicted.rejects):
        path = rejects or "predict.rejects.csv"
        predicted.rejects.to_csv(path, index=False)
        _print_rejects(len(predicted.rejects), path)


@app.command()
def serve(
    config: str = typer.Option(..., "--config", help="TOML schedule (see graphlabel.example.toml)."),
    check: bool = typer.Option(False, "--check", help="Validate the file, list the jobs, check that each could"
                               " run now (its store, dataset and given labels) and exit."),
) -> None:
    """Run the labelling flow on the cron or interval schedules of a TOML file, until
    stopped (Ctrl-C or SIGTERM: runs in progress are cancelled). Runs a killed serve left
    unfinished are ended first, and runs missed meanwhile skipped but for the newest."""
    from graphlabel.schedule import ScheduleError, load_schedule, serve_checks, serve_warnings, server_problem
    from graphlabel.serving import serve as serve_jobs
    from labelling.reporting import jobs_renderables

    try:
        jobs = load_schedule(config)
    except ScheduleError as error:
        if len(error.problems) > 1:
            err.print(f"{len(error.problems)} problems in {_escape(config)}:")
        for problem in error.problems[:-1]:
            err.print(f"[bold red]error:[/] {_escape(problem)}")
        _fail(error.problems[-1])
    for renderable in jobs_renderables(jobs):
        console.print(renderable)
    # --check fails on the jobs that could not run now; serve warns of them and serves them
    warnings, cannot_run = serve_checks(jobs) if check else (serve_warnings(jobs), [])
    for warning in warnings:
        err.print(f"[yellow]warning:[/] {_escape(warning)}")
    for problem in cannot_run[:-1]:
        err.print(f"[bold red]error:[/] {_escape(problem)}")
    if cannot_run:
        _fail(cannot_run[-1])
    if check:
        return
    unservable = server_problem()
    if unservable is not None:
        _fail(unservable)
    serve_jobs(jobs, say=lambda line: console.print(_escape(line), highlight=False))


#: The packages whose warnings are said to the user (a labelling no better than a guess, a
#: graph whose weights say nothing), not traced for a developer.
OWN_PACKAGES = frozenset({"solvers", "similarity", "labelling", "flows", "graphstore", "graphlabel"})


def say_own_warnings() -> None:
    """Print graphlabel's own warnings as the commands' other warnings, one ``warning: ...``
    line, rather than Python's format, which adds the file and line that raised it and that
    line's source ("solvers/registry.py:92: DegenerateLabelingWarning: ... return
    function(problem, **params)"). Other packages' warnings keep Python's format."""
    python_format = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__module__.partition(".")[0] in OWN_PACKAGES:
            err.print(f"warning: {message}", markup=False, highlight=False)
        else:
            python_format(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main() -> None:
    """The ``graphlabel`` script and ``python -m graphlabel``: the commands, with output a reader
    may stop reading (``graphlabel.streams``) and graphlabel's warnings as lines."""
    from graphlabel.streams import let_readers_close

    let_readers_close()
    say_own_warnings()
    try:
        app(prog_name="graphlabel")
    except SystemExit as end:
        if end.code == INTERRUPTED_STATUS:
            err.print("interrupted: running the command again is safe (a label run it had started is"
                      " recorded as failed)", highlight=False)
        raise


# -- outputs and review (issue 17) ------------------------------------------------------


@app.command()
def export(
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset to export."),
    run: str | None = typer.Option(None, "--run", help="Only the nodes this run labelled (its id, or a"
                                      " unique start or end of it) that still carry its prediction."),
    file_format: str | None = typer.Option(None, "--format", help="parquet or csv (default: as --output's"
                                                " ending says, .parquet or .csv; parquet without --output)."),
    output: str | None = typer.Option(None, "--output", help="File to write (default DATASET.parquet"
                                         " or DATASET.csv)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the file when it exists."),
    store: str | None = StoreOption,
) -> None:
    """Write the dataset's predictions to a Parquet or CSV file: keys, given and predicted
    labels, confidence, a score column per class, runner-up, margin, noise flag and score.
    An existing file is replaced only with --overwrite: the default name DATASET.parquet is
    often the name of the file the dataset was ingested from."""
    from flows.direct import run_flow
    from flows.outputs import export_flow
    from labelling.export import export_format, export_path, output_problem
    from labelling.options import run_tags

    try:
        file_format = export_format(file_format, output)
    except ValueError as error:
        _fail(str(error), code=2)
    target = export_path(dataset, file_format, output)
    if (problem := output_problem(target)) is not None:
        _fail(problem, code=2)
    if target.exists() and not overwrite:
        _fail(f"{target} exists: --overwrite replaces it, or --output names another file")
    with _one_line_errors():
        try:
            summary = run_flow(export_flow, run_tags(dataset, "export"), _store_errors(), dataset=dataset,
                               store_uri=store, run_id=run, file_format=file_format, output=output)
        except OSError as error:
            if isinstance(error, FileNotFoundError):  # the input's: said as it is
                raise
            _fail(f"could not write the export: {error}")  # a folder that cannot be written
    console.print(f"wrote {summary['rows']:,} nodes of {dataset!r} to {summary['path']}"
                  f" ({len(summary['classes'])} score columns)", highlight=False)
    if summary["rows"] and not summary["predicted"]:  # the file is then the ingested data back
        err.print(f"[yellow]note:[/] no node of {dataset!r} has a prediction yet: graphlabel label --dataset"
                  f" {dataset}{_store_option(store)} labels them", highlight=False)


@app.command()
def review(
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset to review."),
    limit: int = typer.Option(10, min=1, help="Flagged labels listed, most doubted first."),
    neighbours: int = typer.Option(3, min=1, help="Strongest neighbours shown per label."),
    store: str | None = StoreOption,
) -> None:
    """List the given labels flagged as noisy and not yet accepted, ranked by noise score,
    with their strongest neighbours; decide with accept or correct."""
    from graphstore import open_store
    from labelling.reporting import review_renderables
    from labelling.review import flagged

    with _one_line_errors():
        with open_store(store) as graph_store:
            rows = flagged(graph_store, dataset, limit)
            explained = [graph_store.explain(dataset, key, neighbours) for key in rows["key"]]
            never_labelled = rows.empty and graph_store.read_runs(dataset, limit=1, status="completed").empty
    if never_labelled:  # no run finished, nothing judged: "none left" would read as all reviewed
        _fail(f"dataset {dataset!r} has no finished labelling run, so no label was judged: graphlabel label"
              f" --dataset {dataset}{_store_option(store)} flags the doubtful ones")
    if rows.empty:
        console.print(f"no flagged given label left to review in {dataset!r}", highlight=False)
        return
    for renderable in review_renderables(rows, explained):
        console.print(renderable)
    console.print(f"decide: graphlabel accept KEY --dataset {dataset}{_store_option(store)}\n    or: graphlabel"
                  f" correct KEY --dataset {dataset} --label L{_store_option(store)}", highlight=False)


def _decide(key: str, dataset: str, decision: str, label: str | None, reviewer: str | None,
            store: str | None) -> dict:
    from graphstore import open_store
    from labelling.records import key_text
    from labelling.review import decide

    key = key_text(key) or key  # the key as ingest stored it
    with _one_line_errors():
        with open_store(store) as graph_store:
            return decide(graph_store, dataset, key, decision, label, reviewer)
    raise AssertionError("unreachable")  # _fail raises


ReviewerOption = typer.Option(None, "--reviewer", help="Who decides (default: your login name).")


@app.command()
def accept(
    key: str = typer.Argument(..., help="Key of the node whose given label is right."),
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset the node belongs to."),
    reviewer: str | None = ReviewerOption,
    store: str | None = StoreOption,
) -> None:
    """Keep a flagged given label: recorded as accepted (who, when), review lists it no more."""
    done = _decide(key, dataset, "accept", None, reviewer, store)
    if done["already"]:
        console.print(f"the given label {done['label']!r} of {key!r} is already accepted: nothing recorded",
                      highlight=False)
        return
    unflagged = "" if done["flagged"] else "; the latest run had not flagged it"
    console.print(f"accepted the given label {done['label']!r} of {key!r} (by {done['reviewer']}){unflagged}",
                  highlight=False)


@app.command()
def correct(
    key: str = typer.Argument(..., help="Key of the node whose given label is wrong."),
    dataset: str = typer.Option(..., callback=_checked_dataset, help="Dataset the node belongs to."),
    label: str = typer.Option(..., "--label", help="The right label: one of the dataset's classes."),
    reviewer: str | None = ReviewerOption,
    store: str | None = StoreOption,
) -> None:
    """Replace a given label (who, when and the previous label recorded); the next
    labelling run sees the node as changed."""
    from labelling.records import key_text

    label = key_text(label) or label  # labels follow the keys' rule, as ingest reads them ("1.0" is "1")
    done = _decide(key, dataset, "correct", label, reviewer, store)
    changed = f"{done['previous_label']!r} → {done['label']!r}" if done["previous_label"] is not None else \
        f"it had no given label, now {done['label']!r}"
    console.print(f"corrected {key!r} (by {done['reviewer']}): {changed}; the next label run relabels around it",
                  highlight=False)


@app.command("drop-dataset")
def drop_dataset(
    named: str | None = typer.Argument(None, metavar="DATASET", callback=_checked_dataset,
                                       help="Dataset to delete."),
    dataset: str | None = typer.Option(None, callback=_checked_dataset,
                                       help="The same, as the other commands name it."),
    yes: bool = typer.Option(False, "--yes", help="Do not ask (for scripts)."),
    store: str | None = StoreOption,
) -> None:
    """Delete a dataset's nodes, relationships, runs, graph record and review decisions."""
    from graphstore import open_store

    if (named is None and dataset is None) or (named is not None and dataset is not None and named != dataset):
        _fail("name the dataset to delete once: graphlabel drop-dataset NAME (or --dataset NAME)", code=2)
    dataset = named or dataset
    assert dataset is not None  # one of the two, checked above
    with _one_line_errors():
        with open_store(store) as graph_store:
            nodes = graph_store.count_nodes(dataset)
            runs = graph_store.read_runs(dataset=dataset, limit=1_000_000)
            if not nodes and runs.empty:
                raise graph_store.unknown_dataset(dataset)
            if not yes:
                if not sys.stdin.isatty():
                    _fail(f"drop-dataset deletes {counted(nodes, 'node')} and {counted(len(runs), 'run')} of"
                          f" {dataset!r}: add --yes to do it without a terminal to ask on")
                if not typer.confirm(f"delete dataset {dataset!r}: {counted(nodes, 'node')}, their relationships,"
                                     f" {counted(len(runs), 'run')} and the review decisions?", default=False):
                    _fail("nothing deleted")
            with graph_store.dataset_lease(dataset, "drop-dataset"):  # not under a run of the dataset (Neo4j)
                counts = graph_store.drop_dataset(dataset)
    console.print(f"deleted dataset {dataset!r}: {counted(counts['nodes'], 'node')}, {counted(counts['runs'], 'run')},"
                  f" {counted(counts['decisions'], 'review decision')}", highlight=False)


#: What each table of the embedded store holds, as copy-store's line says it (REVIEWS only
#: links a review decision to its node).
STORE_TABLES = {"Entity": "node", "SIMILAR": "similarity relationship", "USER_EDGE": "user edge",
                "GraphBuild": "graph record", "LabelRun": "label run", "LabelDecision": "review decision"}


@app.command("copy-store")
def copy_store(
    source: str = typer.Argument(..., help="The Kùzu store to copy: its folder (or kuzu://FOLDER)."),
    destination: str = typer.Argument(..., help="A new folder (or an empty one) for the ladybug copy."),
) -> None:
    """Copy a store made with Kùzu (the default engine until 2026-11-28) into a new ladybug
    store, with every dataset's nodes, predictions, graphs, runs, review decisions and
    models. The source is not changed."""
    from pathlib import Path

    from graphstore import default_store_uri, embedded_folder
    from graphstore.store_copy import copy_store as copy

    with _one_line_errors():
        made = copy(source, destination)
    held = ", ".join(counted(made.rows.get(table, 0), what) for table, what in STORE_TABLES.items())
    console.print(f"copied the kuzu store {source} into a new ladybug store at {destination} in {made.seconds:.1f} s:"
                  f" {held}, {counted(made.models, 'model')}", highlight=False)
    if made.source.resolve() == Path(embedded_folder(default_store_uri())[1]).resolve():
        console.print(f"the source is the default store, unchanged; to put the copy in its place: mv {made.source}"
                      f" {made.source}-kuzu && mv {made.destination} {made.source}", highlight=False)
    else:
        console.print(f"use it with --store {destination} (or GRAPHLABEL_STORE); the source is unchanged",
                      highlight=False)
