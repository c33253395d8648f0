"""``Neo4jGraphConfig``: the labels, relationship type and property names graphlabel uses in
a Neo4j database, its batch size and edge builder; validated once, read from
``GRAPHLABEL_NEO4J_<FIELD>`` variables by ``from_env``, rendered into the Cypher templates'
``${...}`` places (``graphstore.identifiers``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .identifiers import Fragment, check_identifier, compose, join, literal, prop, quote

EDGE_BUILDERS = ("gds", "local")
ENV_PREFIX = "GRAPHLABEL_NEO4J_"


@dataclass(frozen=True)
class Neo4jGraphConfig:
    """Where graphlabel's data lives in a Neo4j graph; today's names are the defaults.

    Parameters
    ----------
    node_label : str
        Label of the nodes to label.
    key : str
        Property holding each node's key (a string, unique per dataset).
    dataset : str or None
        Property naming the dataset a node belongs to; None for "all nodes with the label".
    features : str or sequence of str
        One property holding a list of floats, or several numeric properties (in order).
    given_label : str
        Property holding the given (possibly wrong) label; missing means unlabelled.
    relationship, weight : str
        Type and weight property of the similarity relationships.
    edge_marker : str
        Property set on every relationship graphlabel writes (GDS kNN's similarity score,
        or the weight of a locally built one): graphlabel deletes and rewrites only
        relationships that carry it, and refuses to build into a type that holds
        relationships without it between the dataset's nodes (a user's own).
    run_label : str
        Label of the ``LabelRun`` nodes.
    predicted_label, label_confidence, label_noise, label_noise_score, label_run_id, label_solver, labelled_at : str
        Names of the properties a run writes on each node.
    previous_predicted_label, previous_label_run_id : str
        Where a write-back keeps the prediction and run id it replaces (Neo4j only).
    updated_at, content_hash : str
        Change tracking written by ``write_nodes`` (graphstore/changes.py): when the node's
        features or given label last changed, and their hash.
    label_scores, label_runner_up, label_margin : str
        Per-class scores (a list of floats in the order of the run's ``classes``), the best
        other class and the margin to it (``labelling.scores``).
    label_accepted : str
        The given label a reviewer vouched for (``graphlabel accept``, or ``correct``'s label).
    categories, given_label_confidence : str
        Where ``write_nodes`` keeps the categorical features (a list of strings) and the
        trust in the given label (``ingest --categorical`` / ``--label-confidence``).
    batch_size : int
        Rows per UNWIND batch (one transaction each).
    edge_builder : {"gds", "local"}
        Who builds kNN relationships: GDS in the database, or the local builder.
    """

    node_label: str = "Entity"
    key: str = "key"
    dataset: str | None = "dataset"
    features: str | tuple[str, ...] = "features"
    given_label: str = "given_label"
    relationship: str = "SIMILAR"
    weight: str = "weight"
    edge_marker: str = "graphlabel_similarity"
    run_label: str = "LabelRun"
    predicted_label: str = "predicted_label"
    label_confidence: str = "label_confidence"
    label_noise: str = "label_noise"
    label_noise_score: str = "label_noise_score"
    label_run_id: str = "label_run_id"
    label_solver: str = "label_solver"
    labelled_at: str = "labelled_at"
    previous_predicted_label: str = "previous_predicted_label"
    previous_label_run_id: str = "previous_label_run_id"
    updated_at: str = "updated_at"
    content_hash: str = "content_hash"
    label_scores: str = "label_scores"
    label_runner_up: str = "label_runner_up"
    label_margin: str = "label_margin"
    label_accepted: str = "label_accepted"
    categories: str = "categories"
    given_label_confidence: str = "given_label_confidence"
    batch_size: int = 10_000
    edge_builder: str = "gds"
    _fragments: dict | None = field(default=None, init=False, repr=False, compare=False)

    WRITTEN = ("predicted_label", "label_confidence", "label_noise", "label_noise_score", "label_run_id",
               "label_solver",
               "labelled_at", "previous_predicted_label", "previous_label_run_id", "updated_at",
               "content_hash", "label_scores", "label_runner_up", "label_margin", "label_accepted")

    def __post_init__(self) -> None:
        for name in ("node_label", "key", "given_label", "relationship", "weight", "edge_marker",
                     "run_label", "categories", "given_label_confidence", *self.WRITTEN):
            check_identifier(getattr(self, name), f"{name} setting")
        if self.dataset is not None:
            check_identifier(self.dataset, "dataset setting")
        features: tuple[str, ...]
        if isinstance(self.features, str):
            features = (self.features,)
        elif isinstance(self.features, (list, tuple)):
            features = tuple(self.features)
        else:  # None, a number, a set (no order): refused like any other bad name
            raise ValueError(f"invalid features setting {self.features!r}: one property name or a list of them")
        if not features:
            raise ValueError("features setting must name at least one property")
        for name in features:
            check_identifier(name, "features setting")
        object.__setattr__(self, "features", features[0] if len(features) == 1 else features)
        read = [self.key, self.given_label, *features, self.categories, self.given_label_confidence] + \
            ([self.dataset] if self.dataset else [])
        written = [getattr(self, name) for name in self.WRITTEN]
        if len(set(read + written)) != len(read) + len(written):
            raise ValueError(f"node property settings must be distinct, got {read + written}")
        if self.edge_marker == self.weight:
            raise ValueError(f"edge_marker must differ from the weight property, both are {self.weight!r}")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, (int, np.integer)) \
                or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size!r}")
        if self.edge_builder not in EDGE_BUILDERS:
            raise ValueError(f"edge_builder must be one of {EDGE_BUILDERS}, got {self.edge_builder!r}")
        object.__setattr__(self, "_fragments", self._build_fragments())

    @property
    def feature_properties(self) -> tuple[str, ...]:
        return (self.features,) if isinstance(self.features, str) else self.features

    def _features_of(self, variable: str) -> Fragment:
        props = [prop(variable, name) for name in self.feature_properties]
        if len(props) == 1:
            return props[0]
        return compose("[{}]", join(compose("toFloat({})", p) for p in props))

    def _in_dataset(self, variable: str) -> Fragment:
        if self.dataset is None:
            return literal("true")
        return compose("{} = $dataset", prop(variable, self.dataset))

    def _build_fragments(self) -> dict[str, Fragment]:
        key = quote(self.key)
        if len(self.feature_properties) == 1:
            set_features = compose("{} = row.features", prop("e", self.feature_properties[0]))
        else:
            set_features = join(
                compose(f"{{}} = row.features[{i}]", prop("e", name))
                for i, name in enumerate(self.feature_properties)
            )
        if self.dataset is None:
            merge_identity = compose("{}: row.key", key)
            key_properties = prop("e", self.key)
        else:
            merge_identity = compose("{}: $dataset, {}: row.key", quote(self.dataset), key)
            key_properties = compose("({}, {})", prop("e", self.dataset), prop("e", self.key))
        fragments = {
            "node_label": quote(self.node_label),
            "run_label": quote(self.run_label),
            "rel_type": quote(self.relationship),
            "key": key,
            "given_label": quote(self.given_label),
            "categories": quote(self.categories),
            "given_label_confidence": quote(self.given_label_confidence),
            "weight": quote(self.weight),
            "edge_marker": quote(self.edge_marker),
            "merge_identity": merge_identity,
            "set_features": set_features,
            "key_properties": key_properties,
            # The name spells the constrained properties, so changing the dataset or key
            # setting creates a new constraint instead of meeting the old one's name.
            "key_constraint": quote("_".join(["graphlabel", self.node_label,
                                              *([self.dataset] if self.dataset else []), self.key]),
                                    "constraint name"),
            "run_constraint": quote(f"graphlabel_{self.run_label}_run_id"),
        }
        # a node's dataset, to list the datasets (null without a dataset property: none to list)
        fragments["e_dataset"] = literal("null") if self.dataset is None else prop("e", self.dataset)
        for variable in ("e", "a", "b"):
            fragments[f"{variable}_in_dataset"] = self._in_dataset(variable)
            fragments[f"{variable}_features"] = self._features_of(variable)
        for name in self.WRITTEN:
            fragments[name] = quote(getattr(self, name))
        return fragments

    def fragments(self) -> dict[str, Fragment]:
        """The quoted identifiers and expressions the ``${...}`` places of the templates take."""
        return dict(self._fragments or {})  # set by __post_init__

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.init)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> Neo4jGraphConfig:
        """Settings from ``GRAPHLABEL_NEO4J_<FIELD>`` variables (e.g. ``GRAPHLABEL_NEO4J_NODE_LABEL``),
        overridden by ``options``. ``FEATURES`` takes a comma-separated list; an empty
        ``DATASET`` means no dataset property; ``BATCH_SIZE`` is an integer.

        Each variable is validated on its own and refused with a ``ValueError`` naming it
        (the environment is where a deployment's hostile or mistyped value comes from);
        a variable overridden by an option is not read."""
        environ = os.environ if environ is None else environ
        unknown = set(options) - set(cls.option_names())
        if unknown:
            raise ValueError(f"unknown Neo4j store options {sorted(unknown)}; valid: {sorted(cls.option_names())}")
        settings: dict[str, Any] = {}
        for name in cls.option_names():
            variable = ENV_PREFIX + name.upper()
            value = environ.get(variable)
            if value is None or name in options:
                continue
            settings[name] = cls._env_setting(name, variable, value)
        settings.update(options)
        return cls(**settings)

    @staticmethod
    def _env_setting(name: str, variable: str, value: str) -> Any:
        """The setting ``name`` parsed from environment variable ``variable``, or a
        ``ValueError`` naming the variable."""
        what = f"{name} setting (environment variable {variable})"
        value = value.strip()
        if name == "dataset":
            return check_identifier(value, what) if value else None
        if name == "features":
            parts = tuple(part.strip() for part in value.split(","))
            for part in parts:
                check_identifier(part, what)  # an empty part ("a,,b", "") is refused too
            return parts
        if name == "batch_size":
            if not re.fullmatch(r"[0-9]+", value) or int(value) < 1:
                raise ValueError(f"{variable} must be a positive integer, got {value!r}")
            return int(value)
        if name == "edge_builder":
            if value not in EDGE_BUILDERS:
                raise ValueError(f"{variable} must be one of {EDGE_BUILDERS}, got {value!r}")
            return value
        return check_identifier(value, what)
