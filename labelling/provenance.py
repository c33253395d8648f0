"""What a run was computed with: the library versions recorded on its ``LabelRun`` node.

A prediction that changes between two runs of the same solver on the same graph is most
often explained by an upgraded library (scikit-learn's SVM, scipy's sparse solvers, the
store's driver), so every run records the versions it ran with.
"""

from __future__ import annotations

# platform and importlib.metadata are imported in the functions that read versions: every
# command imports this module (graphlabel.__version__), and the two cost it 0.05 s at start
# (python -X importtime), though only a labelling run records versions.

#: graphlabel's own version (pyproject.toml's), for a checkout that is not installed.
PROJECT_VERSION = "0.1.0"

#: Distributions every run depends on (PyPI names, as ``importlib.metadata`` knows them).
CORE = ("numpy", "scipy", "scikit-learn", "pandas", "pyarrow", "prefect")
#: The store's client library per store dialect.
STORE_LIBRARIES = {"kuzu": ("kuzu",), "ladybug": ("ladybug",), "neo4j": ("neo4j",)}
#: Compiled libraries a solver loads beyond the core (see each solver's module).
SOLVER_LIBRARIES = {
    "harmonic": ("pyamg",),          # AMG-preconditioned CG on large problems
    "mincut": ("PyMaxflow",),
    "lcsnc": ("pseudoflow", "PyMaxflow"),  # parametric cuts: pseudoflow, PyMaxflow fallback
    "spectral": (),
    "maxmargin": (),                 # scikit-learn's SVC, already in CORE
    "nmf": (),
    "auto": ("pyamg",),              # cross-validates harmonic and nmf
}


def _version(distribution: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def versions(store: str | None = None, solver: str | None = None) -> dict[str, str]:
    """Versions of graphlabel, Python and the libraries a run uses.

    Read from the installed distributions' metadata, so nothing is imported.

    Parameters
    ----------
    store : {"kuzu", "neo4j"}, optional
        The store's dialect (``GraphStore.dialect``): its client library is included. By
        default both stores' libraries are, where installed.
    solver : str, optional
        A solver name (``solvers.METHODS``): the compiled libraries it loads are included.
        Unknown names add nothing.

    Returns
    -------
    dict of str to str
        Distribution name → version, plus ``graphlabel`` and ``python``; libraries that
        are not installed are left out.

    Examples
    --------
    >>> v = versions(store="kuzu", solver="mincut")
    >>> sorted(k for k in v if k in ("kuzu", "PyMaxflow", "python", "graphlabel"))
    ['PyMaxflow', 'graphlabel', 'kuzu', 'python']
    """
    # Unknown names add nothing rather than fail: recording provenance must never stop a run
    # (tests/test_provenance.py checks that every registered solver is listed here).
    import platform

    found = {"graphlabel": _version("graphlabel") or PROJECT_VERSION, "python": platform.python_version()}
    stores = (STORE_LIBRARIES.get(store, ()) if store
              else tuple(name for names in STORE_LIBRARIES.values() for name in names))
    for name in (*CORE, *stores, *SOLVER_LIBRARIES.get(solver or "", ())):
        version = _version(name)
        if version is not None:
            found[name] = version
    return found
