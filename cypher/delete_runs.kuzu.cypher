// Retention (GraphStore.prune_runs): deletes the runs $run_ids that runs_to_prune chose,
// re-checking in this same transaction the two kinds never deleted, since either may have
// changed after the choice: a "running" run, and a run some node's label_run_id points to
// (the prediction the nodes carry must keep its provenance). A missing status is a run
// written before statuses existed, i.e. a completed one.
// In Kùzu collect() over no rows is NULL, not [] as in Neo4j, and `x IN NULL` is NULL,
// which would keep every run once no node carries a prediction: hence the coalesce.
MATCH (e:Entity)
WHERE e.dataset = $dataset AND e.label_run_id IS NOT NULL
WITH collect(DISTINCT e.label_run_id) AS current
MATCH (r:LabelRun)
WHERE r.dataset = $dataset AND r.run_id IN $run_ids AND NOT r.run_id IN coalesce(current, [])
  AND coalesce(r.status, 'completed') <> 'running'
DETACH DELETE r
RETURN count(r) AS deleted
