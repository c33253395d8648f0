// Every node's given label and latest prediction, for export and review
// (GraphStore.read_export), of the nodes whose Entity-table offset lies in [$first, $last):
// read a slice at a time, as read_features.kuzu.cypher (a node's scores hold a number per
// class). label_scores is the BLOB the adapter decodes; its class order is that of the
// node's run (LabelRun.classes of label_run_id).
MATCH (e:Entity)
WHERE e.dataset = $dataset AND offset(id(e)) >= $first AND offset(id(e)) < $last
RETURN e.key AS key, e.given_label AS given_label, e.predicted_label AS predicted_label,
       e.label_confidence AS label_confidence, e.label_scores AS label_scores,
       e.label_runner_up AS label_runner_up, e.label_margin AS label_margin, e.label_noise AS label_noise,
       e.label_noise_score AS label_noise_score, e.label_run_id AS label_run_id,
       e.label_solver AS label_solver, e.labelled_at AS labelled_at, e.label_accepted AS label_accepted
