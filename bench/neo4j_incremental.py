"""An incremental run's new nodes on Neo4j: their relationships found by this checkout and
by another (the code before a change), on the same live server, in alternating fresh
processes.

    python -m bench neo4j_incremental --against CHECKOUT               # 60k nodes, 100 and 2,000 new
    python -m bench neo4j_incremental --against CHECKOUT --nodes 100000 --new 100 --rounds 3

Data: bench/e2e.py's entities (32 features, 10 classes), ``--nodes`` of them stored and a
10-NN graph built by GDS kNN (graphlabel's defaults: Gaussian weights, standard scaling),
on a Neo4j 5.26 + GDS 2.13 server started for the run (bench/neo4j.py's ``Server``). Each
round, for each count of new nodes and each checkout (the order turned every round): that
many new entities (``entities(m, seed)``, keys of their own) are stored, a fresh process of
the checkout reads the dataset (``read_subgraph`` with features, as an incremental run's
read-changes does) and times ``add_knn_edges`` alone (search and write), then the new
nodes are deleted with their relationships. The recall is the share of each new node's
10 exact nearest (numpy, the recorded encoding, brute force) that it got a relationship
to, either way. Written to bench/results/neo4j_incremental.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from ._common import Report
from .e2e import entities
from .neo4j import Server

DATASET = "bench"
K = 10

# One call in a fresh interpreter with CODE first on its path (another checkout need not
# have this module, so the runner is a script).
RUNNER = """
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from graphstore import open_store
from similarity.spec import GraphSpec
args = json.loads(sys.argv[2])
with open_store(args["uri"]) as store:
    graph = store.read_subgraph(args["dataset"], with_features=True)
    new = np.flatnonzero(np.isin(graph.keys, args["keys"]))
    start = time.perf_counter()
    edges = store.add_knn_edges(args["dataset"], graph, new, GraphSpec.from_record(args["spec"]))
    seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "source": edges.column("source").to_pylist(),
                  "target": edges.column("target").to_pylist()}))
"""


def node_table(frame: pd.DataFrame) -> pa.Table:
    from graphstore.schemas import NODE_SCHEMA

    features = frame[[c for c in frame if c.startswith("x")]].to_numpy()
    return pa.table({"key": pa.array(frame["key"], pa.string()), "features": features.tolist(),
                     "label": pa.array(frame["label"], pa.string())}).cast(NODE_SCHEMA)


def add_edges_in(code: Path, uri: str, env: dict[str, str], spec: dict, keys: list[str]) -> dict:
    payload = json.dumps({"uri": uri, "dataset": DATASET, "spec": spec, "keys": keys})
    out = subprocess.run([sys.executable, "-c", RUNNER, str(code), payload], check=True, capture_output=True,
                         text=True, cwd=code, env={**os.environ, **env})
    return json.loads(out.stdout.strip().splitlines()[-1])


def recall(store, spec, keys: list[str], found: dict) -> float:
    """The share of the new nodes' exact 10 nearest they got a relationship to."""
    graph = store.read_subgraph(DATASET, with_features=True, with_edges=False)
    X = spec.encoding.transform(graph.features, graph.categories)
    pairs = set(zip(found["source"], found["target"]))
    hits = 0
    for key in keys:
        row = int(np.flatnonzero(graph.keys == key)[0])
        distance = np.linalg.norm(X - X[row], axis=1)
        distance[row] = np.inf
        nearest = graph.keys[np.argpartition(distance, K)[:K]]
        hits += sum((key, other) in pairs or (other, key) in pairs for other in nearest)
    return hits / (K * len(keys))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench neo4j_incremental")
    parser.add_argument("--against", type=Path, required=True, help="another checkout of graphlabel")
    parser.add_argument("--nodes", type=int, default=60_000)
    parser.add_argument("--new", default="100,2000", help="counts of new nodes, comma-separated")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--heap", default="2g")
    parser.add_argument("--pagecache", default="1g")
    args = parser.parse_args(argv)
    from graphstore import open_store
    from similarity.spec import GraphSpec

    here = Path(__file__).resolve().parent.parent
    codes = [("this checkout", here), ("--against", args.against.resolve())]
    counts = [int(m) for m in args.new.split(",")]
    rows = []
    with Server(args.heap, args.pagecache) as server:
        env = server.environment()
        os.environ.update(env)
        with open_store(server.uri) as store:
            frame, _ = entities(args.nodes)
            store.write_nodes(DATASET, node_table(frame))
            asked = GraphSpec.from_options(k=K)
            built = store.build_edges(DATASET, asked)
            spec = asked.with_sigma(built.sigma).with_encoding(built.encoding)
            for round_ in range(args.rounds):
                for m in counts:
                    for order, (name, code) in enumerate(codes if round_ % 2 == 0 else codes[::-1]):
                        new, _ = entities(m, seed=1000 + round_)
                        new["key"] = [f"new-{round_}-{m}-{order}-{i}" for i in range(m)]
                        store.write_nodes(DATASET, node_table(new))
                        keys = new["key"].tolist()
                        found = add_edges_in(code, server.uri, env, spec.as_record(), keys)
                        rows.append({"new nodes": m, "code": name, "round": round_, "seconds": found["seconds"],
                                     "relationships": len(found["source"]),
                                     "recall@10": recall(store, spec, keys, found)})
                        print(f"  round {round_}, {m} new: {name} {found['seconds']:.2f} s,"
                              f" recall {rows[-1]['recall@10']:.3f}", flush=True)
                        store.query("MATCH (e:Entity {dataset: $dataset}) WHERE e.key IN $keys DETACH DELETE e",
                                    {"dataset": DATASET, "keys": keys}, write=True)
    frame = pd.DataFrame(rows)
    table = frame.groupby(["new nodes", "code"], sort=False).agg(
        runs=("seconds", "size"), seconds=("seconds", "median"), relationships=("relationships", "median"),
        recall=("recall@10", "median")).reset_index()
    peer = table[table["code"] == "--against"].set_index("new nodes")["seconds"]
    table["× --against"] = table["seconds"] / table["new nodes"].map(peer)
    report = Report("neo4j_incremental", f"an incremental run's new nodes on Neo4j, {args.nodes:,} nodes stored")
    report.table(f"Medians of {args.rounds} rounds: add_knn_edges (search and write), and recall of the exact "
                 "10 nearest; the code: this checkout, and --against (another checkout, the code before)", table)
    report.table("Every run", frame)
    report.note(f"Neo4j 5.26 + GDS 2.13 started for the run (heap {args.heap}, page cache {args.pagecache}); "
                f"the graph: GDS kNN, k {K}, Gaussian weights, standard scaling; {os.cpu_count()} cores "
                "shared with other jobs")
    print(f"written to {report.save()}")


if __name__ == "__main__":
    main(sys.argv[1:])
