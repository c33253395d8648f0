// Marks a run whose process is gone as failed (GraphStore.interrupt_run, graphlabel/
// liveness.py), only while it is still "running" with the last sign of life the caller
// saw: a run that wrote again (or finished) since is left alone, in this one statement.
MATCH (r:LabelRun)
WHERE r.run_id = $run_id AND r.status = 'running' AND coalesce(r.heartbeat_at, r.started_at) = $seen
SET r.status = 'failed', r.error = $error, r.finished_at = $seen
RETURN count(r) AS marked
