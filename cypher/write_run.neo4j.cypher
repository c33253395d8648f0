// Same statement as write_run.kuzu.cypher except that the run label is configurable here.
MERGE (r:${run_label} {run_id: $run_id})
SET r.dataset = $dataset,
    r.solver = $solver,
    r.parameters = $parameters,
    r.metrics = $metrics,
    r.timings = $timings,
    r.started_at = $started_at,
    r.finished_at = $finished_at,
    r.n_nodes = $n_nodes,
    r.n_labeled = $n_labeled,
    r.n_flagged = $n_flagged,
    r.status = $status,
    r.versions = $versions,
    r.error = $error,
    r.process = $process,
    r.heartbeat_at = $heartbeat_at,
    r.classes = $classes
