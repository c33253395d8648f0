// The LabelRun nodes, newest first (GraphStore.read_runs); an empty $dataset, $run_id or
// $status means any (no dataset name, run id or status is empty; read_runs.neo4j.cypher
// takes null instead): ladybug 0.22 types a null parameter BOOL and then fails to
// compare it with a STRING property ("Value ... is not a valid boolean"; found by
// tests/test_store_contract.py). JSON columns stay text here: the adapter decodes them
// (graphstore.runs.runs_frame).
MATCH (r:LabelRun)
WHERE ($dataset = '' OR r.dataset = $dataset) AND ($run_id = '' OR r.run_id = $run_id)
  AND ($status = '' OR coalesce(r.status, 'completed') = $status)
RETURN r.run_id AS run_id, r.dataset AS dataset, r.solver AS solver, r.status AS status,
       r.started_at AS started_at, r.finished_at AS finished_at, r.n_nodes AS n_nodes,
       r.n_labeled AS n_labeled, r.n_flagged AS n_flagged, r.parameters AS parameters,
       r.metrics AS metrics, r.timings AS timings, r.versions AS versions, r.error AS error,
       r.process AS process, r.heartbeat_at AS heartbeat_at, r.classes AS classes
ORDER BY started_at DESC, run_id DESC
LIMIT $max_rows
