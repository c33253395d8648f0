// The LabelRun nodes, newest first (GraphStore.read_runs); a null $dataset, $run_id or
// $status means any. Runs written before statuses existed have no status: the adapter reads them
// as "completed" (graphstore.base.runs_frame), as the Kùzu schema's column default does.
MATCH (r:${run_label})
WHERE ($dataset IS NULL OR r.dataset = $dataset) AND ($run_id IS NULL OR r.run_id = $run_id)
  AND ($status IS NULL OR coalesce(r.status, 'completed') = $status)
RETURN r.run_id AS run_id, r.dataset AS dataset, r.solver AS solver, r.status AS status,
       r.started_at AS started_at, r.finished_at AS finished_at, r.n_nodes AS n_nodes,
       r.n_labeled AS n_labeled, r.n_flagged AS n_flagged, r.parameters AS parameters,
       r.metrics AS metrics, r.timings AS timings, r.versions AS versions, r.error AS error,
       r.process AS process, r.heartbeat_at AS heartbeat_at, r.classes AS classes
ORDER BY started_at DESC, run_id DESC
LIMIT $max_rows
