// Class counts of every run of a dataset, one row per run: how many nodes still carry the
// run's prediction, per class (a later run overwrites the node properties of an earlier one;
// no nodes: null on the embedded store, an empty list on Neo4j), and the metrics the run
// recorded (JSON text: its class_counts, mean confidence, ...; `graphlabel report --run ID`
// shows them as a table).
// Parameters: $dataset.
MATCH (r:LabelRun)
WHERE r.dataset = $dataset
OPTIONAL MATCH (e:Entity)
WHERE e.dataset = $dataset AND e.label_run_id = r.run_id
WITH r, e.predicted_label AS predicted_label, count(e) AS nodes
RETURN r.run_id AS run_id,
       r.solver AS solver,
       r.finished_at AS finished_at,
       collect(CASE WHEN nodes > 0 THEN {label: predicted_label, nodes: nodes} END) AS nodes_now,
       r.metrics AS recorded_metrics
ORDER BY finished_at DESC, run_id ASC
