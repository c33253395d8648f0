// Retention (GraphStore.prune_runs): deletes one batch of the runs $run_ids that
// runs_to_prune chose, re-checking in this same transaction the two kinds never deleted,
// since either may have changed after the choice: a "running" run, and a run some node's
// label_run_id points to (the prediction the nodes carry must keep its provenance). A
// missing status is a run written before statuses existed, i.e. a completed one.
MATCH (e:${node_label})
WHERE ${e_in_dataset} AND e.${label_run_id} IS NOT NULL
WITH collect(DISTINCT e.${label_run_id}) AS current
MATCH (r:${run_label})
WHERE r.dataset = $dataset AND r.run_id IN $run_ids AND NOT r.run_id IN current
  AND coalesce(r.status, 'completed') <> 'running'
DETACH DELETE r
RETURN count(r) AS deleted
