"""Cypher lives in ``cypher/*.cypher`` files, loaded by name; nothing is string-built from
user values (values always travel as parameters).

Where dialects differ there is one file per dialect side by side, ``NAME.kuzu.cypher``
and ``NAME.neo4j.cypher``; a plain ``NAME.cypher`` serves both.
"""

from __future__ import annotations

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


def split_statements(text: str) -> list[str]:
    """Statements of a multi-statement file (schema files), split on ';'."""
    return [s.strip() for s in text.split(";") if s.strip()]
