"""Issue 17's outputs on a live Neo4j 5.26 + GDS 2.13: the scenario of
tests/outputs_scenario.py (per-class scores, export read back with pandas, review, accept
and correct with their history, drop-dataset leaving another dataset alone) through the
`graphlabel` command, a process per command, as a user runs it."""

from __future__ import annotations

import uuid

import pytest
from outputs_scenario import Ran, run_scenario, wine_csv
from test_neo4j_live import delete_dataset
from test_neo4j_live_product import cli

pytestmark = [pytest.mark.neo4j, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def datasets(neo4j_env):
    names = [f"out-{uuid.uuid4().hex[:10]}" for _ in range(2)]
    yield names
    from graphstore import open_store

    with open_store(neo4j_env) as store:
        for name in names:
            delete_dataset(store._driver, name, store.database)
            store._driver.execute_query("MATCH (d:LabelDecision {dataset: $dataset}) DETACH DELETE d",
                                        parameters_={"dataset": name}, database_=store.database)


def test_outputs_scenario_on_neo4j(neo4j_env, datasets, tmp_path):
    from graphstore import open_store

    def invoke(*args: str, ok: bool = True) -> Ran:
        ran = cli(*args, "--store", neo4j_env, ok=ok)
        return Ran(ran.exit_code, ran.output)

    def query(cypher: str, parameters: dict):
        with open_store(neo4j_env) as store:
            return store.query(cypher, parameters)

    other_csv, _ = wine_csv(tmp_path / "other.csv", flipped=0, seed=1)
    run_scenario(invoke, query, tmp_path, datasets[0], datasets[1], other_csv)


def test_drop_dataset_is_refused_without_a_dataset_property(neo4j_env):
    from graphstore import StoreSetupError, open_store

    # a label of its own: a store without a dataset property makes its key unique on its own,
    # and on the session's shared server that constraint on Entity made every other test's
    # second dataset with key "a" a ConstraintError (5 store contract tests, fresh clone)
    with open_store(neo4j_env, dataset=None, node_label="DatasetlessEntity") as store, \
            pytest.raises(StoreSetupError, match="no dataset property"):
        store.drop_dataset("anything")
