"""Whether a label run of a dataset could start now: what ``labelling_flow`` would stop at
before it solves, asked without writing anything.

``graphlabel serve`` asks it of each scheduled job when it starts (and ``serve --check``
fails on it): a job whose dataset was never ingested, or whose store is not there, is
said at once, not in a failed run at three in the morning.
"""

from __future__ import annotations

from graphstore import GraphStore, StoreConnectionError, StoreNotFound, StoreSetupError, open_store
from labelling.problems import NotEnoughLabels, check_classes
from similarity.spec import GraphRequest

from .tasks import count_user_edges

#: What a run that cannot start fails with: a store not there or not answering, a dataset
#: no node belongs to, too few given classes, a store that cannot build the graph (GDS
#: missing), a user's relationship type with no edges. Anything else is a bug.
CANNOT_RUN = (StoreNotFound, StoreConnectionError, ConnectionError, LookupError, NotEnoughLabels,
              StoreSetupError, ValueError)


def check_can_label(store: GraphStore, dataset: str, request: GraphRequest) -> None:
    """Raise what a full run of ``dataset`` over the graph ``request`` asks for would fail
    with before it solves, reading only: ``NotFound`` (naming the store's datasets) when no
    node belongs to the dataset, ``NotEnoughLabels`` when its given labels hold fewer
    than two classes, ``StoreSetupError`` when the store cannot build the graph (Neo4j
    without GDS), ``ValueError`` when the user's relationships the graph names are not
    there. The flow checks the same (``labelling_flow``, ``build_edges``), in its stages."""
    if store.count_nodes(dataset) == 0:
        raise store.unknown_dataset(dataset)
    check_classes(dataset, store.given_classes(dataset))
    spec = request.spec()
    store.check_edge_builder(spec)
    if spec.edges_type is not None:
        count_user_edges(store, dataset, spec)


def why_cannot_label(store_uri: str, datasets: dict[str, tuple[str, GraphRequest]],
                     lock_timeout: float = 1.0) -> dict[str, Exception]:
    """For each name in ``datasets`` (a job's, say) whose ``(dataset, graph request)``
    could not be labelled now on the store ``store_uri``, the error its run would stop
    with (one of ``CANNOT_RUN``; the store is opened once for all). An embedded store
    another process holds (a served job's run) is waited for ``lock_timeout`` seconds, then
    every name gets its ``StoreLocked``: nothing could be checked."""
    from graphstore import NEO4J_SCHEMES

    try:
        opened = (open_store(store_uri) if store_uri.startswith(NEO4J_SCHEMES)
                  else open_store(store_uri, lock_timeout=lock_timeout))
    except CANNOT_RUN as error:
        return dict.fromkeys(datasets, error)
    reasons: dict[str, Exception] = {}
    with opened as store:
        for name, (dataset, request) in datasets.items():
            try:
                check_can_label(store, dataset, request)
            except CANNOT_RUN as error:
                reasons[name] = error
    return reasons
