"""Neo4j + GDS beside the embedded store, on the same data in the same run.

    python -m bench neo4j                  # 100k entities
    python -m bench neo4j --sizes 20000    # any sizes
    python -m bench neo4j --full           # 100k and 1M

The data is bench/e2e.py's: n entities with 32 features (8 informative directions), 10
classes, 1% of the labels given. A Neo4j 5.26 + GDS 2.13 server is started for the run
with neo4j-server/neo4j_server.py (heap and page cache in --heap / --pagecache) in a
temporary home, and stopped at the end.

Tables:
- each stage's seconds through the real flows (ingest → build edges → export → solve →
  write back) on Kùzu, on Neo4j with GDS kNN (the default) and on Neo4j with the local
  builder, each pipeline in a fresh process; harmonic without its per-label noise flags
  (``detect_noise=False``, as bench/e2e.py: one CG per given label is the solver's cost,
  not the store's, and the solver issue makes it cheap);
- the kNN graphs: build time and recall@10 of the stored graph against exact neighbours
  (scikit-learn, brute force) on 1,000 sampled nodes: GDS kNN with its defaults and the
  local builder (faiss HNSW above 50k nodes);
- the in-database peer: GDS Label Propagation (``gds.labelPropagation.write`` seeded with
  the given labels, on the same weighted relationships, undirected) against graphlabel's
  harmonic on that graph: seconds (projection + compute + write against export + solve +
  write back) and accuracy on the hidden labels;
- write batch sizes: the write-back and the node upsert at several UNWIND batch sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import Report
from .e2e import entities

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "neo4j-server" / "neo4j_server.py"
SOLVER_PARAMS = {"detect_noise": False}
SAMPLE = 1_000
SEED_OFFSET = 1_000_000_000


def _warm_up_prefect() -> None:
    """Start the ephemeral Prefect API before the clock runs: the first flow of a process
    pays its start-up (seconds), which is not the pipeline's cost."""
    from prefect import flow

    flow(name="warm-up")(lambda: None)()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """A Neo4j + GDS server for this run, started and stopped with the project's script."""

    def __init__(self, heap: str, pagecache: str) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="graphlabel-bench-neo4j-"))
        self.password = "bench-" + secrets.token_hex(8)
        self.bolt, self.http = free_port(), free_port()
        self.uri = f"bolt://127.0.0.1:{self.bolt}"
        self.args = ["--home", str(self.home), "--bolt-port", str(self.bolt), "--http-port", str(self.http),
                     "--password", self.password, "--heap", heap, "--pagecache", pagecache]

    def __enter__(self) -> Server:
        subprocess.run([sys.executable, str(SERVER), "up", *self.args], check=True)
        return self

    def __exit__(self, *exc) -> None:
        subprocess.run([sys.executable, str(SERVER), "down", *self.args], check=False)

    def environment(self) -> dict[str, str]:
        return {"NEO4J_USER": "neo4j", "NEO4J_PASSWORD": self.password}

    def peak_rss_mib(self) -> float | None:
        pid = (self.home / "run" / "graphlabel-neo4j.pid").read_text().strip()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return None


# -- one pipeline, in a process of its own ------------------------------------------------

def run_pipeline(n: int, store_uri: str, workdir: str) -> dict:
    """ingest → build-graph (k = 10) → label (full, harmonic) through the flows; the flows'
    stage timings and the accuracy on the hidden labels."""
    from flows.labelling import build_graph_flow, ingest_flow, labelling_flow
    from graphstore import open_store

    frame, y = entities(n)
    source = Path(workdir) / "entities.parquet"
    frame.to_parquet(source, index=False)
    _warm_up_prefect()
    timings: dict[str, float] = {}
    start = time.perf_counter()
    ingest_flow(str(source), "bench", "key", "x*", "label", store_uri=store_uri)
    timings["ingest"] = time.perf_counter() - start
    graph = build_graph_flow("bench", store_uri=store_uri, k=10)
    timings.update(graph["timings"])
    summary = labelling_flow("bench", store_uri=store_uri, solver_params=SOLVER_PARAMS, build_graph=False,
                             full=True, publish=False)
    timings.update({k: v for k, v in summary["timings"].items() if k != "record_run"})
    with open_store(store_uri) as store:
        written = store.query("MATCH (e:Entity) WHERE e.dataset = 'bench' AND e.given_label IS NULL"
                              " RETURN e.key AS key, e.predicted_label AS predicted")
    truth = pd.Series(np.char.add("c", y.astype(str)), index=frame["key"].to_numpy())
    accuracy = float((written["predicted"].to_numpy() == truth.loc[written["key"]].to_numpy()).mean())
    return {"timings": timings, "edges": graph["edges"], "accuracy": accuracy}


def _child(function: str, env: dict[str, str], *args) -> dict:
    with tempfile.TemporaryDirectory(prefix="graphlabel-bench-") as tmp:
        out = Path(tmp) / "result.json"
        call = f"{function}({', '.join(map(repr, (*args, tmp)))})"
        code = (f"import json; from pathlib import Path; from bench.neo4j import {function}; "
                f"Path({str(out)!r}).write_text(json.dumps({call}))")
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                       env={**os.environ, **env, "PREFECT_LOGGING_LEVEL": "WARNING",
                            "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
        return json.loads(out.read_text())


# -- the kNN graphs against exact neighbours ----------------------------------------------

def recall_at_10(store, X: np.ndarray, keys: np.ndarray, sample: np.ndarray) -> float:
    """Share of each sampled node's exact 10 nearest that the stored (undirected) graph links
    it to."""
    from sklearn.neighbors import NearestNeighbors

    graph = store.read_subgraph("bench", with_features=False)
    position = pd.Index(keys).get_indexer(pd.Index(graph.keys))
    src, dst = position[graph.source], position[graph.target]
    neighbours = pd.DataFrame({"a": np.concatenate([src, dst]), "b": np.concatenate([dst, src])})
    linked = set(zip(neighbours["a"], neighbours["b"]))
    _, exact = NearestNeighbors(n_neighbors=11, algorithm="brute").fit(X).kneighbors(X[sample])
    hits = [(int(i), int(j)) in linked for i, row in zip(sample, exact) for j in row[1:] if j != i]
    return float(np.mean(hits))


# -- GDS Label Propagation, the in-database peer -----------------------------------------

def label_propagation(store, y: np.ndarray, keys: np.ndarray, given: np.ndarray) -> dict:
    """gds.labelPropagation.write seeded with the given labels (class index), on the
    SIMILAR relationships and their weights, undirected; unlabelled nodes carry no seed
    (a default seed of -1 made LPA fail: index -1 out of bounds)."""
    # GDS gives an unseeded node its internal id as its first label: the seeds are offset
    # past every id, so that no node starts in a class by accident
    seeds = [{"key": str(k), "seed": SEED_OFFSET + int(c)} for k, c in zip(keys[given], y[given])]
    store._driver.execute_query("UNWIND $rows AS row MATCH (e:Entity {dataset: 'bench', key: row.key})"
                                " SET e.lpa_seed = row.seed", parameters_={"rows": seeds})
    timings = {}
    start = time.perf_counter()
    store._driver.execute_query(
        "CALL gds.graph.project('bench_lpa', {Entity: {properties: {lpa_seed: {defaultValue: null}}}},"
        " {SIMILAR: {orientation: 'UNDIRECTED', properties: 'weight', aggregation: 'MAX'}})")
    timings["project"] = time.perf_counter() - start
    start = time.perf_counter()
    record = store._driver.execute_query(
        "CALL gds.labelPropagation.write('bench_lpa', {seedProperty: 'lpa_seed', relationshipWeightProperty:"
        " 'weight', writeProperty: 'lpa_community', maxIterations: 30, concurrency: 4})"
        " YIELD communityCount, ranIterations, didConverge, computeMillis, writeMillis"
        " RETURN communityCount, ranIterations, didConverge, computeMillis, writeMillis").records[0]
    timings["compute + write"] = time.perf_counter() - start
    store._driver.execute_query("CALL gds.graph.drop('bench_lpa')")
    found = store.query("MATCH (e:Entity {dataset: 'bench'}) WHERE e.given_label IS NULL"
                        " RETURN e.key AS key, e.lpa_community AS community")
    truth = pd.Series(y + SEED_OFFSET, index=keys)
    accuracy = float((found["community"].to_numpy() == truth.loc[found["key"]].to_numpy()).mean())
    return {"timings": timings, "accuracy": accuracy, "communities": record["communityCount"],
            "iterations": record["ranIterations"], "converged": record["didConverge"],
            "compute_ms": record["computeMillis"], "write_ms": record["writeMillis"]}


# -- batch sizes ---------------------------------------------------------------------------

def batch_sizes(uri: str, env: dict[str, str], n: int, sizes: list[int]) -> pd.DataFrame:
    """The write-back and the node upsert of n rows at each UNWIND batch size (rows per
    transaction), on the dataset the pipeline wrote."""
    from graphstore import open_store
    from graphstore.schemas import NODE_SCHEMA, PREDICTION_SCHEMA

    os.environ.update(env)
    frame, _ = entities(n)
    import pyarrow as pa

    features = frame[[c for c in frame.columns if c.startswith("x")]].to_numpy()
    nodes = pa.table({"key": frame["key"].astype(str), "features": list(features),
                      "label": frame["label"].astype(object)}).cast(NODE_SCHEMA)
    stamp = pd.Timestamp("2026-11-23 12:00").to_pydatetime()
    rows = []
    for size in sizes:
        predictions = pa.table({
            "key": frame["key"].astype(str), "predicted_label": ["c1"] * n,
            "label_confidence": np.full(n, 0.5), "label_noise": [None] * n,
            "label_run_id": [f"batch-{size}"] * n, "label_solver": ["harmonic"] * n,
            "labelled_at": [stamp] * n}).cast(PREDICTION_SCHEMA)
        with open_store(uri, batch_size=size) as store:
            start = time.perf_counter()
            store.write_predictions("bench", predictions)
            write_back = time.perf_counter() - start
            start = time.perf_counter()
            store.write_nodes(f"batch{size}", nodes)  # new nodes: MERGE creates
            create = time.perf_counter() - start
            start = time.perf_counter()
            store.write_nodes(f"batch{size}", nodes)  # the same again: MERGE matches
            upsert = time.perf_counter() - start
            with store._driver.session() as session:  # IN TRANSACTIONS needs an implicit one
                session.run("MATCH (e:Entity {dataset: $ds}) CALL (e) { DETACH DELETE e }"
                            " IN TRANSACTIONS OF 10000 ROWS", ds=f"batch{size}").consume()
        rows.append({"batch rows": size, "write back s": write_back, "ingest (create) s": create,
                     "re-ingest (match) s": upsert, "write back rows/s": n / write_back})
    return pd.DataFrame(rows)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench neo4j")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")])
    parser.add_argument("--heap", default="4g")
    parser.add_argument("--pagecache", default="2g")
    parser.add_argument("--batch-sizes", default="2000,10000,50000",
                        type=lambda s: [int(v) for v in s.split(",")])
    args = parser.parse_args(argv)
    sizes = args.sizes or ([100_000, 1_000_000] if args.full else [100_000])
    report = Report("neo4j_full" if args.full else "neo4j",
                    "Neo4j 5.26 + GDS 2.13 beside the embedded store (32-d, k = 10, 1% labelled, harmonic)")
    report.note(f"Neo4j heap {args.heap}, page cache {args.pagecache}; GDS open edition (concurrency ≤ 4)"
                " on this machine's cores; harmonic with detect_noise=False in every pipeline.")
    from graphstore import open_store

    for n in sizes:
        with Server(args.heap, args.pagecache) as server, tempfile.TemporaryDirectory() as tmp:
            env = server.environment()
            runs = {"Kùzu (local HNSW)": _child("run_pipeline", {}, n, str(Path(tmp) / "kuzu")),
                    "Neo4j (GDS kNN)": _child("run_pipeline", env, n, server.uri)}
            os.environ.update(env)
            frame, y = entities(n)
            X = frame[[c for c in frame.columns if c.startswith("x")]].to_numpy()
            keys = frame["key"].astype(str).to_numpy()
            given = frame["label"].notna().to_numpy()
            sample = np.random.default_rng(0).choice(n, size=min(SAMPLE, n), replace=False)
            with open_store(server.uri) as store:
                gds_recall = recall_at_10(store, X, keys, sample)
                lpa = label_propagation(store, y, keys, given)
            with open_store(str(Path(tmp) / "kuzu")) as store:
                local_recall = recall_at_10(store, X, keys, sample)
            runs["Neo4j (local builder)"] = _child("run_pipeline", {**env, "GRAPHLABEL_NEO4J_EDGE_BUILDER": "local"},
                                                   n, server.uri)
            batches = batch_sizes(server.uri, env, n, args.batch_sizes)
            peak = server.peak_rss_mib()

        stages = list(dict.fromkeys(s for run in runs.values() for s in run["timings"]))
        table = pd.DataFrame({"stage": stages})
        for name, run in runs.items():
            table[name + " s"] = [run["timings"].get(s, np.nan) for s in stages]
        totals = {"stage": "total", **{name + " s": sum(run["timings"].values()) for name, run in runs.items()}}
        table = pd.concat([table, pd.DataFrame([totals])], ignore_index=True)
        table["Neo4j GDS / Kùzu"] = table["Neo4j (GDS kNN) s"] / table["Kùzu (local HNSW) s"]
        report.table(f"{n:,} entities: seconds per stage (single run each)", table, floatfmt=".2f")
        report.table(f"{n:,} entities: runs", pd.DataFrame([
            {"pipeline": name, "relationships": run["edges"], "accuracy (hidden labels)": run["accuracy"]}
            for name, run in runs.items()]))
        build_gds = runs["Neo4j (GDS kNN)"]["timings"]["build_edges"]
        build_local = runs["Kùzu (local HNSW)"]["timings"]["build_edges"]
        report.table(f"{n:,} entities: kNN graph (recall@10 of the stored graph on {len(sample):,} nodes)",
                     pd.DataFrame([
                         {"builder": "GDS kNN (defaults: sampleRate 0.5, deltaThreshold 0.001)",
                          "build s": build_gds, "recall@10": gds_recall},
                         {"builder": "local (faiss HNSW M=32, efConstruction 80, efSearch 64)",
                          "build s": build_local, "recall@10": local_recall}]))
        harmonic = runs["Neo4j (GDS kNN)"]
        ours = sum(harmonic["timings"].get(s, 0.0) for s in ("export", "solve", "write_back"))
        report.table(f"{n:,} entities: in-database peer on the same GDS graph", pd.DataFrame([
            {"method": "GDS Label Propagation (seeded, weighted, 30 iterations max)",
             "seconds": sum(lpa["timings"].values()), "accuracy (hidden labels)": lpa["accuracy"],
             "notes": f"{lpa['communities']} communities, {lpa['iterations']} iterations,"
                      f" converged {lpa['converged']}"},
            {"method": "graphlabel harmonic (export + solve + write back)", "seconds": ours,
             "accuracy (hidden labels)": harmonic["accuracy"], "notes": "detect_noise=False"}]))
        report.table(f"{n:,} entities: UNWIND batch sizes (one transaction per batch)", batches)
        report.note(f"Neo4j server peak resident memory over the {n:,} run: {peak:,.0f} MiB")
    report.save()
