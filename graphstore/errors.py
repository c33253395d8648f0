"""The errors a store raises that a caller is expected to handle (everything else is a bug)."""

from __future__ import annotations

from collections.abc import Sequence

from .secrets import StoreConnectionError


class StoreUnavailable(ConnectionError):
    """An open store stopped answering or asked to try again (a network error, a server
    that stopped, a cluster leader that changed, a timeout): worth retrying. Adapters raise
    it for their driver's transient errors, so the flows retry on one type. (Failing to
    open a store at all is ``StoreConnectionError``: told at once, not retried.)"""


class StoreSetupError(RuntimeError):
    """The store answers but is not set up for what was asked: a plugin missing or too old
    (Neo4j without GDS), a relationship type holding a user's relationships, a graph left
    half built. An expected condition with a message that says what to do, not a bug."""


class StoreOutOfMemory(StoreSetupError):
    """The embedded engine's page cache (its buffer pool) could not hold what a statement
    needed: said in one line with what to do, not as the engine's traceback."""


WRITE_REFUSED = ("this query writes to the store, and queries are read-only unless asked to write"
                 " (graphlabel query --write)")


class WriteRefused(ValueError):
    """A query typed by a user would have written to a store opened for reading (the
    message is ``WRITE_REFUSED``); nothing was changed."""

    def __init__(self, message: str = WRITE_REFUSED) -> None:
        super().__init__(message)


class QueryFailed(RuntimeError):
    """The store refused a statement typed by a user (a syntax error, a type error, a
    division by zero, an unknown property on the embedded store); the message is the
    store's own, and nothing was changed. A ClientError on Neo4j, a RuntimeError from Kùzu:
    one type, so that the command line prints one line for either (a live Neo4j's error
    reached the user as a 70-line traceback)."""


class StoreNotFound(FileNotFoundError):
    """No store where the URI points (a folder that does not exist, or a file): commands
    that read never create one (only ingesting does)."""


class StoreLocked(StoreConnectionError):
    """Another process holds the store (Kùzu lets one process open a database at a time),
    or another run holds the dataset's graph on Neo4j (``graphstore.neo4j_lease``), and did
    not let go within the time allowed."""


class NotFound(LookupError):
    """A run or node the caller named is not in the store (the message names it).

    A LookupError but not a KeyError, whose ``str()`` would print the message in quotes."""

    @classmethod
    def dataset(cls, dataset: str, names: Sequence[str]) -> NotFound:
        """The dataset itself is unknown: no node belongs to it (a typo, or not ingested);
        ``names``: the datasets the store holds, of which the message names the first
        ``NAMED_DATASETS``."""
        if not names:
            held = "the store holds no dataset yet (graphlabel ingest adds one)"
        else:
            shown = ", ".join(repr(name) for name in names[:NAMED_DATASETS])
            more = f" and {len(names) - NAMED_DATASETS:,} more" if len(names) > NAMED_DATASETS else ""
            held = f"its datasets: {shown}{more}"
        return cls(f"no dataset {dataset!r} in the store (no node belongs to it); {held}")


#: How many of the store's datasets the message about an unknown one names.
NAMED_DATASETS = 10
