// One node's label and every neighbour's weight and label (GraphStore.explain; the adapter
// sums them per class): per neighbour the larger weight where a pair has a relationship
// each way (as the solvers read the graph), its label the given one, else the predicted
// one; whether it is given, and its scores (a float64 BLOB) with the run whose class order
// they follow (the score shares). A node without neighbours gives one entry with a null key,
// which the adapter drops.
// The node is found by its primary key uid ("dataset:key"): a lookup, not a scan.
MATCH (e:Entity {uid: $uid})
OPTIONAL MATCH (e)-[r:SIMILAR]-(n:Entity)
WHERE n <> e
WITH e, n, max(r.weight) AS weight
RETURN e.key AS key, e.given_label AS given_label, e.predicted_label AS predicted_label,
       e.label_confidence AS label_confidence, e.label_noise AS label_noise, e.label_noise_score AS label_noise_score,
       e.label_run_id AS label_run_id, e.label_solver AS label_solver, e.labelled_at AS labelled_at,
       e.label_accepted AS label_accepted,
       collect({key: n.key, label: coalesce(n.given_label, n.predicted_label), weight: weight,
                given: n.given_label IS NOT NULL, scores: n.label_scores, run: n.label_run_id}) AS neighbours
