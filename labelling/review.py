"""The review loop: flagged given labels ranked for a person, and their decisions written back.

``flagged`` lists the given labels the latest runs flagged (``label_noise``), most doubted
first (``label_noise_score``, then key), each with ``GraphStore.explain``'s strongest
neighbours. ``decide`` writes a decision (``GraphStore.record_decision``):

- ``accept``: the given label is right. It stays the given label and is recorded as
  vouched for (``label_accepted``); ``review`` lists the node no more while its given
  label is the vouched-for one (a later ingest that changes it makes it reviewable again).
  Accepting a label already vouched for records nothing (``already``: a second decision
  would say the same twice in the history); accepting one the latest run did not flag is
  recorded, and the result says it was not flagged (``flagged``), as a person who typed
  the wrong key would want to know.
  The solvers' flag is left as they compute it (``label_noise`` stays their opinion, and
  the next run may flag it again): accepting is a person's answer, not a change of the
  data, so it does not make the node changed and the next incremental run does not
  relabel around it.
- ``correct``: the given label becomes ``label``, the node is marked changed (its
  ``updated_at``), so the next incremental run relabels around it with the new label.
  The new label is vouched for as an accepted one is: the node's flag, computed for the
  old label, is not listed again, nor is one a later run computes for the new label.
  ``label`` must be one of the dataset's classes (its distinct given labels): a new class
  from one correction would be a class of one example, spread from that node alone; a new
  class comes in with ``ingest``. A correction to the label the node already has is refused (that is an
  accept).

Each decision is a ``LabelDecision`` node linked to its entity by ``REVIEWS``, with who
(``--reviewer``, else ``$USER``), when, the given label before and after, and the
prediction, noise score and run the reviewer saw: ``cypher/examples/label_history.cypher``
lists a key's history.
"""

from __future__ import annotations

import getpass
import uuid
from typing import Any

import pandas as pd
import pyarrow.compute as pc

from graphstore import GraphStore
from graphstore.schemas import check_limit

from .reporting import explained_node

#: Columns of ``flagged``.
FLAGGED_COLUMNS = ("key", "given_label", "predicted_label", "label_noise_score", "label_confidence",
                   "label_run_id")


def flagged(store: GraphStore, dataset: str, limit: int = 20) -> pd.DataFrame:
    """The dataset's flagged given labels no reviewer vouched for, most doubted first.

    Raises
    ------
    NotFound
        The dataset has no node.
    """
    limit = check_limit(limit, "limit")
    table = store.read_export(dataset)
    if not table.num_rows:
        raise store.unknown_dataset(dataset)
    accepted = pc.fill_null(pc.equal(table.column("label_accepted"), table.column("given_label")), False)
    keep = pc.and_(pc.fill_null(table.column("label_noise"), False), pc.invert(accepted))
    frame = table.filter(keep).select(list(FLAGGED_COLUMNS)).to_pandas()
    frame = frame.sort_values(["label_noise_score", "key"], ascending=[False, True], na_position="last",
                              kind="stable")
    return frame.head(limit).reset_index(drop=True)


def reviewer_name(reviewer: str | None) -> str:
    """``reviewer``, else the login name (``getpass.getuser``: ``$LOGNAME``, ``$USER``,
    ``$LNAME``, ``$USERNAME``, then the account of the process), else ``"unknown"``.

    Why not ``$USER`` alone: a shell started by cron, a container or a Prefect worker often
    has no ``$USER``, and every decision was then recorded as made by "unknown"."""
    if reviewer is None:
        try:
            reviewer = getpass.getuser()
        except (OSError, KeyError):  # no variable set and no account entry for the process's uid
            reviewer = "unknown"
    name = reviewer.strip()
    if not name:
        raise ValueError("--reviewer must not be empty")
    return name


def decide(store: GraphStore, dataset: str, key: str, decision: str, label: str | None = None,
           reviewer: str | None = None) -> dict[str, Any]:
    """Check and write one decision (module docstring); returns ``previous_label``,
    ``label``, ``reviewer``, ``decided_at`` (None when nothing was written), ``already``
    (an accept of a label already vouched for: nothing written) and ``flagged`` (the
    latest run flagged the given label).

    Raises
    ------
    NotFound
        No node ``key`` in the dataset.
    ValueError
        A correction to a label outside the dataset's classes or to the label the node
        already has; an accept of a node without a given label.
    """
    who = reviewer_name(reviewer)
    node = _node(store, dataset, key)
    given = node["given_label"]
    if decision == "correct":
        classes = store.given_classes(dataset)
        if label not in classes:
            listed = ", ".join(repr(c) for c in classes[:10]) + (", ..." if len(classes) > 10 else "")
            raise ValueError(f"label {label!r} is not one of dataset {dataset!r}'s classes ({listed}); a new"
                             " class comes in with graphlabel ingest")
        if label == given:
            raise ValueError(f"{key!r} already has the given label {label!r}: graphlabel accept {key}"
                             f" --dataset {dataset} keeps it")
    elif decision == "accept" and given is None:
        raise ValueError(f"{key!r} has no given label to accept: graphlabel correct {key} --dataset {dataset}"
                         " --label L gives it one")
    flagged = bool(node.get("label_noise"))
    if decision == "accept" and node.get("label_accepted") == given:
        return {"previous_label": given, "label": given, "reviewer": who, "decided_at": None, "already": True,
                "flagged": flagged}
    decided_at = pd.Timestamp.now(tz="UTC")
    written = store.record_decision(dataset, key, decision, label, who, decided_at, str(uuid.uuid4()))
    return {**written, "reviewer": who, "decided_at": decided_at, "already": False, "flagged": flagged}


def _node(store: GraphStore, dataset: str, key: str) -> dict[str, Any]:
    node, _ = explained_node(store, dataset, key, limit=1)  # NotFound naming the key, or the dataset's typo
    return node
