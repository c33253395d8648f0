"""Cypher lives in ``cypher/*.cypher`` files, loaded by name; nothing is string-built from
user values (values always travel as parameters).

Where dialects differ there is one file per dialect side by side, ``NAME.kuzu.cypher``
and ``NAME.neo4j.cypher``; a plain ``NAME.cypher`` serves both.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

CYPHER_DIR = Path(__file__).resolve().parent.parent / "cypher"


def query_path(name: str, dialect: str) -> Path:
    for candidate in (CYPHER_DIR / f"{name}.{dialect}.cypher", CYPHER_DIR / f"{name}.cypher"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no Cypher file for query {name!r} ({dialect}) in {CYPHER_DIR}")


@cache
def load_query(name: str, dialect: str) -> str:
    """The text of query ``name`` for ``dialect``, with ``//`` comment lines removed."""
    text = query_path(name, dialect).read_text(encoding="utf-8")
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")).strip()


#: A ``graphlabel query`` argument that is a name, not a statement: no spaces, parentheses or
#: braces (every statement has a clause keyword and something after it).
_NAME = re.compile(r"[\w./-]+")


def example_names(dialect: str) -> list[str]:
    """The examples of ``cypher/examples`` that run on ``dialect``, by name."""
    names = {path.name.split(".")[0] for path in CYPHER_DIR.joinpath("examples").glob("*.cypher")}
    return sorted(name for name in names if _example_path(name, dialect) is not None)


def _example_path(name: str, dialect: str) -> Path | None:
    try:
        return query_path(f"examples/{name}", dialect)
    except FileNotFoundError:
        return None


def user_query_text(argument: str, dialect: str) -> str:
    """What ``graphlabel query ARGUMENT`` runs: the statement itself, the text of a
    ``.cypher`` file, or one of ``cypher/examples`` by name (``low_confidence``, with or
    without the folder and the suffix), so that the README's examples run from any folder.
    Raises ``ValueError`` for a name that is neither a file nor an example of ``dialect``."""
    if not _NAME.fullmatch(argument.strip()) or argument.strip().isupper():  # a one-word statement: CHECKPOINT
        return argument
    path = Path(argument.strip())
    if path.is_file():
        return path.read_text(encoding="utf-8")
    name = path.name.split(".")[0]
    found = _example_path(name, dialect)
    if found is not None:
        return found.read_text(encoding="utf-8")
    dialects = sorted(p.name.split(".")[1] for p in CYPHER_DIR.joinpath("examples").glob(f"{name}.*.cypher"))
    if dialects:
        raise ValueError(f"the example {name!r} is for {' and '.join(dialects)} only, not this store ({dialect})")
    raise ValueError(f"{argument!r} is not a Cypher statement, a file or an example; the examples:"
                     f" {', '.join(example_names(dialect))}")


def split_statements(text: str) -> list[str]:
    """Statements of a multi-statement file (schema files), split on ';'."""
    return [s.strip() for s in text.split(";") if s.strip()]


# -- queries typed by a user (``graphlabel query``, ``GraphStore.query``) ---------------------


def _cypher_tokens(text: str):
    """``(kind, value)`` for the parts of ``text`` that matter to ``user_statement``: each
    ``;`` outside strings and comments (``"end"``), each ``$parameter`` (``"param"``), and
    whether anything but blanks and comments stands between two ends (``"code"``).

    A small scanner rather than a parser: it only has to know where strings ('...', "...",
    with backslash escapes), quoted names (`...`) and comments (// and /* */) begin and
    end, which both dialects share; the database parses the statement itself."""
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in "'\"`":
            end = i + 1
            while end < n and text[end] != char:
                end += 2 if char != "`" and text[end] == "\\" else 1
            yield "code", None
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif char == ";":
            yield "end", None
            i += 1
        elif char == "$":
            end = i + 1
            if end < n and text[end] == "`":
                close = text.find("`", end + 1)
                close = n if close < 0 else close
                yield "param", text[end + 1:close]
                i = close + 1
                continue
            while end < n and (text[end].isalnum() or text[end] == "_"):
                end += 1
            yield "param", text[i + 1:end]
            i = max(end, i + 1)
        else:
            if not char.isspace():
                yield "code", None
            i += 1


def user_statement(cypher: str, parameters: dict | None = None) -> str:
    """The one statement of a query typed by a user, checked before it reaches a database.

    Refused with a ``ValueError`` that says what to do:

    - several statements (``...; MATCH (e) DETACH DELETE e``): Kùzu runs every statement
      and commits each one's writes before handing back a list of results, so one typed
      query could delete data after a read; one statement per call (a final ``;`` is fine);
    - a ``$parameter`` without a value: Kùzu binds it to null, and ``e.dataset = $ds``
      then matched every node of every dataset instead of failing.
    """
    if not isinstance(cypher, str) or not cypher.strip():
        raise ValueError("the query is empty")
    statements, has_code, names = 0, False, []
    for kind, value in _cypher_tokens(cypher):
        if kind == "code":
            has_code = True
        elif kind == "param":
            has_code = True
            names.append(value)
        elif has_code:  # an end after some code closes a statement
            statements, has_code = statements + 1, False
    statements += has_code
    if statements > 1:
        raise ValueError(f"the query holds {statements} statements separated by ';': give one statement"
                         " per query")
    missing = [name for name in dict.fromkeys(names) if name not in (parameters or {})]
    if missing:
        listed = ", ".join(f"${name}" for name in missing)
        hint = " ".join(f"-p {name}=VALUE" for name in missing)
        raise ValueError(f"the query uses {listed} without a value: give each parameter a value"
                         f" (graphlabel query ... {hint})")
    return cypher
