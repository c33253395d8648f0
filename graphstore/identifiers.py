"""Cypher identifiers (labels, relationship types, property names) that come from configuration.

Cypher cannot take a label, a relationship type or a property name as a ``$parameter``, so
these have to be written into the query text. They are accepted only when they match a
strict pattern (ASCII letter or underscore, then letters, digits or underscores, at most 128
characters) and are then written between backticks. A name that could close the backtick,
start a comment or carry a second statement never matches the pattern, so it never reaches
a query: it is refused with a ``ValueError`` that names the setting.

Templates in ``cypher/*.neo4j.cypher`` mark these places with ``${name}``. (Cypher's own
parameters are ``$name`` without braces, so the two never collide.) ``render`` fills a
template only with ``Fragment`` values, which this module creates from validated
identifiers; any other string, a missing placeholder or a placeholder left over is an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# Matched with fullmatch: `$` alone would also accept a trailing newline.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class Fragment(str):
    """Cypher text built only from validated, quoted identifiers (see ``quote``)."""

    __slots__ = ()


def check_identifier(name: object, what: str = "identifier") -> str:
    """``name`` if it is a plain identifier, else a ``ValueError`` naming ``what``."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise ValueError(
            f"invalid {what} {name!r}: a Neo4j label, relationship type or property name must be"
            " 1-128 ASCII letters, digits or '_', not starting with a digit"
        )
    return name


def quote(name: object, what: str = "identifier") -> Fragment:
    """The validated identifier between backticks, e.g. ``Entity`` -> ```Entity```."""
    return Fragment(f"`{check_identifier(name, what)}`")


def prop(variable: str, name: object, what: str = "property name") -> Fragment:
    """``variable.`name``` for a validated property name (the variable is the template's own)."""
    check_identifier(variable, "query variable")
    return Fragment(f"{variable}.{quote(name, what)}")


def join(parts: Iterable[Fragment], separator: str = ", ") -> Fragment:
    """Fragments joined by a fixed separator (only ``, `` / `` AND `` are used)."""
    if separator not in (", ", " AND "):
        raise ValueError(f"unsupported separator {separator!r}")
    parts = list(parts)
    for part in parts:
        if not isinstance(part, Fragment):
            raise TypeError(f"not a Fragment: {part!r}")
    return Fragment(separator.join(parts))


def literal(text: str) -> Fragment:
    """A fixed piece of Cypher written in this package (never a user value)."""
    if PLACEHOLDER.search(text) or "`" in text:
        raise ValueError(f"literal fragments cannot hold placeholders or backticks: {text!r}")
    return Fragment(text)


def compose(pattern: str, *parts: Fragment) -> Fragment:
    """``pattern`` (fixed Cypher of this package, ``{}`` for each part) filled with Fragments."""
    literal(pattern)
    for part in parts:
        if not isinstance(part, Fragment):
            raise TypeError(f"not a Fragment: {part!r}")
    return Fragment(pattern.format(*parts))


def placeholders(template: str) -> set[str]:
    return set(PLACEHOLDER.findall(template))


def render(template: str, fragments: Mapping[str, Fragment]) -> str:
    """Fill every ``${name}`` of ``template`` from ``fragments``.

    Raises ``KeyError`` for a placeholder without a fragment and ``TypeError`` for a value
    that is not a ``Fragment`` (a raw string could carry anything).
    """

    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name not in fragments:
            raise KeyError(f"no value for placeholder ${{{name}}}")
        value = fragments[name]
        if not isinstance(value, Fragment):
            raise TypeError(f"placeholder ${{{name}}} must be filled with a Fragment, got {type(value).__name__}")
        return value

    return PLACEHOLDER.sub(fill, template)
