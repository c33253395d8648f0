"""Shared fixtures: a real Prefect (test harness: a temporary server and database for the
session) and a fresh real Kùzu store per test."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def store_path(tmp_path):
    return str(tmp_path / "store")


@pytest.fixture
def kuzu_store(store_path):
    from graphstore import open_store

    with open_store(store_path, create=True) as store:
        yield store


@pytest.fixture(scope="session")
def digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X, y


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
