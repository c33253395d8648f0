"""Run provenance: the library versions a run records, and the LabelRunRecord defaults
that keep callers written before statuses existed working."""

from importlib import metadata

import pandas as pd
import pytest

import solvers
from graphstore import LabelRunRecord
from labelling.provenance import SOLVER_LIBRARIES, versions


def test_versions_name_the_installed_libraries_a_run_uses():
    found = versions(store="kuzu", solver="lcsnc")
    for name in ("graphlabel", "python", "numpy", "scipy", "scikit-learn", "prefect", "kuzu", "pseudoflow",
                 "PyMaxflow"):
        assert name in found, name
    assert found["scikit-learn"] == metadata.version("scikit-learn")
    assert found["kuzu"] == metadata.version("kuzu")
    assert "neo4j" not in found  # only the store in use
    on_neo4j = versions(store="neo4j", solver="spectral")
    assert on_neo4j["neo4j"] == metadata.version("neo4j")
    assert "kuzu" not in on_neo4j
    assert "pseudoflow" not in on_neo4j
    assert "PyMaxflow" not in on_neo4j
    assert all(isinstance(v, str) and v for v in versions().values())


def test_every_registered_solver_has_its_libraries_listed():
    assert set(SOLVER_LIBRARIES) == set(solvers.METHODS)
    # an unknown name must not stop a run from recording what it can
    assert versions(solver="not-a-solver").keys() == versions(solver="spectral").keys()


def test_label_run_record_defaults_keep_old_callers_working():
    now = pd.Timestamp("2026-01-01", tz="UTC")
    run = LabelRunRecord("r", "toy", "harmonic", {}, {}, {}, now, now, 1, 1, 0)
    assert (run.status, run.versions, run.error) == ("completed", {}, None)
    properties = run.properties()
    assert properties["status"] == "completed"
    assert properties["versions"] == "{}"
    assert properties["started_at"].tzinfo is None
    with pytest.raises(ValueError, match="'running', 'completed', 'failed'"):
        LabelRunRecord("r", "toy", "harmonic", {}, {}, {}, now, now, 1, 1, 0, status="ok")
