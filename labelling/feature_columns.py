"""The columns a dataset's features come from, by name, so that later files are matched by
name and not by count.

A node's features are a list of numbers; which column each number came from lives only in
the ingest's options. Before this record, a second ``ingest`` or a ``predict`` checked the
count alone: wine's 13 columns in reverse order were stored (or predicted) as if in the
first order, and every record of the reversed file came out ``barolo 0.578``, exit status 0.

``FeatureColumns`` is what an ingest resolved (``labelling.records.RecordColumns.columns``:
the numeric columns with globs expanded, the text column, the categorical columns), kept per
dataset by the store (``GraphStore.write_feature_columns``) and in a kept model
(``labelling.run_model.RunModel.feature_columns``).

Decisions
---------
- Matched by name, as a set per role: the same columns in another order are taken in the
  recorded order (the file's order does not matter, as it does not in a SQL ``SELECT``); a
  column missing, added, renamed or in another role refuses the whole file in one line that
  names them, since no row could be stored right.
- The first ingest that stores a node records the columns; a dataset with no node (dropped,
  or deleted by hand) takes the next ingest's. A dataset whose nodes were stored before the
  record existed (or written by the user's own Cypher) gets the next ingest's columns, and
  is held to them from then on: its older nodes can only be checked by count, as before.
- One feature column holding lists is recorded by its name: its positions have no names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .wording import NAMED, named

if TYPE_CHECKING:
    from graphstore import GraphStore


class FeatureColumnsDiffer(ValueError):
    """A file's feature columns are not the ones recorded (``FeatureColumns.conform``)."""


@dataclass(frozen=True)
class FeatureColumns:
    """The feature columns of a dataset, by role and in the order of the features.

    Parameters
    ----------
    numeric : tuple of str
        The numeric columns (or the one column of lists), in feature order.
    text : str or None
        The column whose embedding follows the numeric features.
    categorical : tuple of str
        The categorical columns, in the order of a node's ``categories``.
    """

    numeric: tuple[str, ...] = ()
    text: str | None = None
    categorical: tuple[str, ...] = ()

    def as_record(self) -> dict[str, Any]:
        """What the store keeps (``GraphStore.write_feature_columns``) and a model's header holds."""
        return {"numeric": list(self.numeric), "text": self.text, "categorical": list(self.categorical)}

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> FeatureColumns | None:
        """``as_record``'s output read back; None for None (nothing recorded)."""
        if record is None:
            return None
        return cls(tuple(record.get("numeric") or ()), record.get("text"), tuple(record.get("categorical") or ()))

    def roles(self) -> dict[str, str]:
        """Each column's role: ``numeric``, ``text`` or ``categorical``."""
        return {**dict.fromkeys(self.numeric, "numeric"), **({self.text: "text"} if self.text else {}),
                **dict.fromkeys(self.categorical, "categorical")}

    def conform(self, given: FeatureColumns, recorded_as: str, way_out: str) -> FeatureColumns:
        """These columns, when ``given`` are the same columns in the same roles (in any
        order): the order to read them in; else ``FeatureColumnsDiffer`` in one line naming
        the difference, ``recorded_as`` saying whose columns these are ("dataset 'wine' was
        ingested with") and ``way_out`` what to do."""
        if given.roles() != self.roles():
            raise FeatureColumnsDiffer(self.refusal(given, recorded_as, way_out))
        return self

    def refusal(self, given: FeatureColumns, recorded_as: str, way_out: str) -> str:
        """The one line saying how ``given`` differs from these columns."""
        mine, theirs = self.roles(), given.roles()
        missing = [column for column in mine if column not in theirs]
        added = [column for column in theirs if column not in mine]
        moved = [f"{column!r} is {theirs[column]} here, {mine[column]} there" for column in theirs
                 if column in mine and theirs[column] != mine[column]]
        differences = ([f"lack {named(missing)}"] if missing else []) + ([f"add {named(added)}"] if added else [])
        said = "; ".join((["these " + " and ".join(differences)] if differences else []) + moved[:NAMED]) \
            or "the same columns in another order"
        return f"the feature columns are not the ones {recorded_as} ({self.describe()}): {said}; {way_out}"

    def describe(self) -> str:
        """``13 numeric: 'alcohol', 'malic_acid', ... ; text 'body'; 2 categorical: ...``"""
        parts = [f"{len(self.numeric)} numeric: {named(list(self.numeric))}"] if self.numeric else []
        parts += [f"text {self.text!r}"] if self.text else []
        parts += [f"{len(self.categorical)} categorical: {named(list(self.categorical))}"] if self.categorical \
            else []
        return "; ".join(parts)


@dataclass(frozen=True)
class RecordedColumns:
    """Feature columns a file must match (``labelling.records.record_columns``), with whose
    they are and what to do when it does not, for ``FeatureColumns.conform``'s one line."""

    columns: FeatureColumns
    recorded_as: str
    way_out: str

    def conform(self, given: FeatureColumns) -> FeatureColumns:
        return self.columns.conform(given, self.recorded_as, self.way_out)


def dataset_columns(store: GraphStore, dataset: str) -> RecordedColumns | None:
    """The feature columns ``dataset`` was ingested with, for a file to be ingested into it
    (None when none are recorded)."""
    recorded = FeatureColumns.from_record(store.read_feature_columns(dataset))
    if recorded is None:
        return None
    return RecordedColumns(recorded, f"dataset {dataset!r} was ingested with",
                           f"ingest the columns it has (renamed as they were), or start it over with graphlabel"
                           f" drop-dataset --dataset {dataset}")


def keep_feature_columns(store: GraphStore, dataset: str, columns: FeatureColumns, has_nodes: bool) -> None:
    """Record ``columns`` as the dataset's before its first nodes are stored (a dataset
    without nodes takes them whatever it recorded before); a dataset with nodes and other
    columns refuses them, in the order they are in too, since these features were read in
    theirs (``labelling.records.record_columns`` puts a file's columns in the recorded order
    first)."""
    recorded = dataset_columns(store, dataset)
    if recorded is not None and recorded.columns == columns:
        return
    if recorded is not None and has_nodes:
        raise FeatureColumnsDiffer(recorded.columns.refusal(columns, recorded.recorded_as, recorded.way_out))
    store.write_feature_columns(dataset, columns.as_record())
