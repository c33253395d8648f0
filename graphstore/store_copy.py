"""Copy a Kùzu store into a new ladybug store: ``graphlabel copy-store``.

Why: a store made with Kùzu 0.11.3 (the default engine until 2026-11-28) stays a Kùzu
store, and Kùzu's string-column defect (README, "The embedded engine") can make a store of
several datasets unreadable. Ingesting the source files again into a ladybug store loses
what the store holds beyond them: predictions, runs, graphs, users' edges, review decisions,
models. This copies all of it.

How: the source engine's ``EXPORT DATABASE`` writes every table as Parquet with the schema
and the ``COPY`` statements that load it; the destination engine's ``IMPORT DATABASE`` runs
them into a new database. The two engines cannot share a process (``kuzu_store``'s
docstring), so each side runs in a Python process of its own (``python -m
graphstore.store_copy export|import``), and this one loads neither. The source is opened as
every command opens it (its lock held for the export, so no run writes meanwhile) and is not
changed; the models folder (``maxmargin``'s SVMs) is copied as files. The copy counts as
made when every table holds the rows the source held; otherwise, or when either side fails,
the destination folder is removed and the source is as it was.

Only Kùzu to ladybug: ladybug's ``EXPORT DATABASE`` writes a format of its own
(``WITH (storage = ..., format = 'icebug-disk')`` in its schema) that Kùzu 0.11.3 cannot
parse, and a store moves to Kùzu for no reason now; a ladybug store is copied as it is by
copying its folder while no command uses it.

A Kùzu store that has met the defect cannot be exported: Kùzu ends the process with a
segmentation fault when it reads the damaged column (checked on ``tests/engine_defect.py``'s
reduced case). That is said in one line; the way left is to ingest the source files again.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import StoreNotFound, StoreSetupError

#: The longest either side may take (a store of 10M nodes exports in minutes).
SIDE_SECONDS = 6 * 3600


@dataclass(frozen=True)
class StoreCopy:
    """What ``copy_store`` copied: from which folder to which, every table's rows, the models,
    the time."""

    source: Path
    destination: Path
    rows: dict[str, int]
    models: int
    seconds: float


def copy_store(source: str, destination: str) -> StoreCopy:
    """Copy the Kùzu store ``source`` (its folder, or ``kuzu://FOLDER``) into a new ladybug
    store ``destination`` (a folder that does not exist or is empty, or
    ``ladybug://FOLDER``), as the module docstring says."""
    from . import NEO4J_SCHEMES, embedded_folder
    from .kuzu_store import MODELS_FOLDER, stored_engines

    for uri in (source, destination):
        if uri.startswith(NEO4J_SCHEMES):
            raise ValueError(f"copy-store copies embedded stores, and {uri.split('://')[0]}:// is Neo4j: to move a"
                             " dataset to Neo4j, ingest its source files there")
    source_engine, source_folder = embedded_folder(source)
    destination_engine, destination_folder = embedded_folder(destination)
    origin, target = Path(source_folder), Path(destination_folder)
    present = stored_engines(origin) if origin.is_dir() else []
    if not present:
        raise StoreNotFound(f"no store at {origin}: check the source folder")
    source_engine = source_engine or present[0]
    if source_engine not in present:
        raise StoreSetupError(f"the store {origin} is a {present[0]} store, not a {source_engine} one")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValueError(f"{target} already exists and is not an empty folder: copy-store makes a new store")
    if source_engine != "kuzu":
        raise ValueError(f"the store {origin} is already a {source_engine} store: copy-store moves a Kùzu store to"
                         " ladybug (to copy a store as it is, copy its folder while no command uses it)")
    if (destination_engine or "ladybug") != "ladybug":
        raise ValueError(f"copy-store makes ladybug stores, not {destination_engine} ones: Kùzu 0.11.3 is the engine"
                         " with the defect, and it cannot read ladybug's exports")
    started = time.perf_counter()
    made = not target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        # beside the destination: the export is as large as the store, and /tmp may be small
        with tempfile.TemporaryDirectory(prefix=".graphlabel-copy-", dir=target.resolve().parent) as scratch:
            exported = Path(scratch) / "tables"
            export = _side("export", "kuzu", origin, [str(origin), str(exported)])
            by_kind = export["rows"]
            rows = {**by_kind["NODE"], **by_kind["REL"]}
            copied_by_kind = _side("import", "ladybug", target, [str(exported), str(target),
                                                                 str(sum(by_kind["REL"].values())),
                                                                 str(export["row_bytes"])])
            copied = {**copied_by_kind["NODE"], **copied_by_kind["REL"]}
        missing = {table: (count, copied.get(table, 0)) for table, count in rows.items()
                   if copied.get(table, 0) != count}
        if missing:
            raise StoreSetupError("the copy does not hold what the source holds (table: source rows, copied rows): "
                                  + ", ".join(f"{table}: {a:,}, {b:,}" for table, (a, b) in missing.items()))
        models = 0
        if (origin / MODELS_FOLDER).is_dir():  # maxmargin's SVMs, files beside the database
            shutil.copytree(origin / MODELS_FOLDER, target / MODELS_FOLDER)
            models = sum(1 for _ in (target / MODELS_FOLDER).iterdir())
    except BaseException:
        if made:
            shutil.rmtree(target, ignore_errors=True)
        elif target.is_dir():  # it was an empty folder: empty again
            for entry in target.iterdir():
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        raise
    return StoreCopy(origin, target, rows, models, time.perf_counter() - started)


#: The exit code of a side that met an expected condition (its message on stdout, as JSON).
EXPECTED = 3


def _side(step: str, engine: str, folder: Path, arguments: list[str]) -> dict:
    """Run one side of the copy in a process of its own; what it returns."""
    done = subprocess.run([sys.executable, "-m", "graphstore.store_copy", step, *arguments],
                          capture_output=True, text=True, timeout=SIDE_SECONDS)
    said = json.loads(done.stdout.splitlines()[-1]) if done.returncode in (0, EXPECTED) and done.stdout else {}
    if done.returncode == 0:
        return said
    if done.returncode == EXPECTED:
        raise StoreSetupError(said["error"])
    if done.returncode < 0:  # ended by a signal: the engine crashed
        defect = ("; a Kùzu store of several datasets that ends this way has most likely met Kùzu 0.11.3's"
                  " string-column defect (README, The embedded engine), which leaves a column it cannot read:"
                  " ingest the source files into a new store instead") if engine == "kuzu" and step == "export" \
            else ""
        raise StoreSetupError(f"the {engine} engine crashed while it {step}ed the store {folder} (signal"
                              f" {-done.returncode}){defect}")
    raise RuntimeError(f"copy-store's {step} failed:\n{done.stderr[-3000:]}")


def _export(folder: str, out: str) -> dict:
    """The export side: every table's rows, and the widest row's bytes, which both sides size
    their pools by (wide rows: an embedding's features, many classes' scores)."""
    from .kuzu_store import KuzuStore

    store = KuzuStore(folder, engine="kuzu")
    try:
        row_bytes = store.widest_row_bytes()
        return {"rows": store.export_database(Path(out), row_bytes), "row_bytes": row_bytes}
    finally:
        store.close()


def _import(exported: str, folder: str, relationships: str, row_bytes: str) -> dict:
    from .kuzu_store import import_database

    store = import_database(Path(folder), "ladybug", Path(exported), int(relationships), int(row_bytes))
    try:
        return store.table_rows()
    finally:
        store.close()


def _main(step: str, *given: str) -> int:
    """One side of ``copy_store``: prints what it returns as JSON; an expected condition
    (the store held by another process, not there, of the other engine) is printed as
    ``{"error": ...}`` with exit code ``EXPECTED``, anything else is a traceback."""
    from .secrets import StoreConnectionError

    try:
        print(json.dumps(_export(*given) if step == "export" else _import(*given)))
    except (StoreSetupError, StoreNotFound, StoreConnectionError, ValueError) as error:
        print(json.dumps({"error": str(error)}))
        return EXPECTED
    return 0


if __name__ == "__main__":
    sys.exit(_main(*sys.argv[1:]))
