// Class counts of every run of a dataset: the counts each run recorded (JSON in
// metrics.class_counts), and how many nodes still carry that run's prediction per class
// (a later run overwrites the node properties of an earlier one).
// Parameters: $dataset.
MATCH (r:LabelRun)
WHERE r.dataset = $dataset
OPTIONAL MATCH (e:Entity)
WHERE e.dataset = $dataset AND e.label_run_id = r.run_id
RETURN r.run_id AS run_id,
       r.solver AS solver,
       r.finished_at AS finished_at,
       r.metrics AS recorded_metrics,
       e.predicted_label AS predicted_label,
       count(e) AS nodes_now
ORDER BY finished_at DESC, run_id ASC, nodes_now DESC
