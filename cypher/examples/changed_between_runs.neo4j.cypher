// Nodes whose prediction changed between two runs. Neo4j only: on each write-back the
// Neo4j store keeps the run before in previous_predicted_label / previous_label_run_id
// (the embedded Kùzu store keeps the latest prediction only).
// Parameters: $dataset, $earlier_run, $later_run (run ids, from the LabelRun nodes).
MATCH (e:Entity)
WHERE e.dataset = $dataset
  AND e.label_run_id = $later_run
  AND e.previous_label_run_id = $earlier_run
  AND coalesce(e.previous_predicted_label, '') <> coalesce(e.predicted_label, '')
RETURN e.key AS key,
       e.given_label AS given_label,
       e.previous_predicted_label AS before,
       e.predicted_label AS after,
       e.label_confidence AS confidence
ORDER BY key ASC
