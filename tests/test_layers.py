"""The import graph runs one way: application → flows → labelling core → store →
similarity → solvers. Every import counts, at the top of a module or inside a function
(a lazy import is still a dependency), so a lower layer importing a higher one fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Top to bottom; a package may import the packages after it, never those before it.
LAYERS = ("graphlabel", "flows", "labelling", "graphstore", "similarity", "solvers")


def imported_packages(path: Path) -> set[str]:
    """The project packages a module imports (absolute imports; relative ones stay inside)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(LAYERS)


@pytest.mark.parametrize("package", LAYERS)
def test_no_package_imports_a_layer_above_it(package):
    above = set(LAYERS[: LAYERS.index(package)])
    wrong = {str(path.relative_to(ROOT)): sorted(imported_packages(path) & above)
             for path in sorted((ROOT / package).rglob("*.py"))}
    assert {path: names for path, names in wrong.items() if names} == {}


def test_the_check_sees_an_import_that_runs_back_up(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from flows.tasks import build_edges\n    import graphlabel.cli\n")
    assert imported_packages(module) == {"flows", "graphlabel"}


@pytest.mark.parametrize("package", LAYERS)
def test_each_package_says_what_it_holds_and_may_import(package):
    doc = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8")))
    assert doc
    assert "import" in doc.split("\n\n")[0].lower()
