// Same statement as interrupt_run.kuzu.cypher except that the run label is configurable here.
MATCH (r:${run_label} {run_id: $run_id})
WHERE r.status = 'running' AND coalesce(r.heartbeat_at, r.started_at) = $seen
SET r.status = 'failed', r.error = $error, r.finished_at = $seen
RETURN count(r) AS marked
