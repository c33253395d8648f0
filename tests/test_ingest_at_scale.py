"""An ingest of more rows than one batch (labelling/record_batches.py's BATCH_ROWS) into a
real embedded store: every row is stored or rejected, each reject with its own row number
and reason, as a file parsed whole would give them."""

import numpy as np
import pandas as pd
import pytest

from flows.labelling import ingest_flow
from graphstore import open_store
from labelling.record_batches import BATCH_ROWS
from labelling.records import DUPLICATE_KEY, MISSING_KEY, NON_NUMERIC, UNKNOWN_CLASS

pytestmark = pytest.mark.usefixtures("prefect_harness")

N_ROWS = 200_000


def _records_with_bad_rows(n: int, seed: int = 0) -> tuple[pd.DataFrame, dict[int, str]]:
    """n rows of 3 features (as text, so that a value can be broken) with 1% bad rows spread
    over the file; returns the frame and each bad row's number (1-based) with its kind."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)).round(6).astype(str), columns=["x1", "x2", "x3"])
    frame.insert(0, "id", [f"e{i:06d}" for i in range(n)])
    frame["label"] = np.where(rng.random(n) < 0.05, rng.choice(["a", "b", "c"], n), None)
    bad = rng.choice(n, size=n // 100, replace=False)
    missing_key, broken, unknown_class, conflicting = np.array_split(bad, 4)
    frame.loc[missing_key, "id"] = ""
    frame.loc[broken, "x2"] = "oops"
    frame.loc[unknown_class, "label"] = "zzz"
    # each conflicting row copies the key of a row in the other half of the file (another
    # batch) with other features: both rows are rejected, whichever comes first
    partners = (conflicting + n // 2) % n
    partners = partners[~np.isin(partners, bad)]
    conflicting = conflicting[:len(partners)]
    frame.loc[conflicting, "id"] = frame.loc[partners, "id"].to_numpy()
    frame.loc[conflicting, "x1"] = "12345.0"
    kinds = {**dict.fromkeys(missing_key + 1, MISSING_KEY), **dict.fromkeys(broken + 1, NON_NUMERIC),
             **dict.fromkeys(unknown_class + 1, UNKNOWN_CLASS),
             **dict.fromkeys(np.concatenate([conflicting, partners]) + 1, DUPLICATE_KEY)}
    return frame, {int(row): kind for row, kind in kinds.items()}


def test_every_row_of_a_file_larger_than_a_batch_is_stored_or_rejected_with_its_row(tmp_path, store_path):
    assert N_ROWS > BATCH_ROWS  # the file spans batches, and duplicates cross them
    frame, bad = _records_with_bad_rows(N_ROWS)
    source = tmp_path / "records.parquet"
    frame.to_parquet(source, index=False)
    rejects_file = tmp_path / "rejects.csv"

    summary = ingest_flow(str(source), "scale", key="id", features="x*", label="label", store_uri=store_path,
                          rejects_path=str(rejects_file), classes=["a", "b", "c"])

    assert summary["stored"] + summary["rejected"] == N_ROWS
    assert summary["rejected"] == len(bad)
    rejects = pd.read_csv(rejects_file)
    assert dict(zip(rejects["row"], rejects["kind"])) == bad
    assert summary["reject_reasons"] == pd.Series(bad).value_counts().to_dict()
    good = frame.drop(index=[row - 1 for row in bad])
    with open_store(store_path) as store:
        stored = store.read_export("scale").to_pandas()
    assert len(stored) == summary["stored"] == len(good)
    assert sorted(stored["key"]) == sorted(good["id"])
