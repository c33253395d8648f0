MERGE (r:LabelRun {run_id: $run_id})
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
    r.error = $error
