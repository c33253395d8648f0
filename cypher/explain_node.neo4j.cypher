// One node's label and every neighbour's weight and label (GraphStore.explain; the adapter
// sums them per class): per neighbour the larger weight where a pair has a relationship
// each way (GDS kNN writes both; the solvers read the graph so), its label the given one,
// else the predicted one; whether it is given, and its scores with the run whose class order
// they follow (the score shares). Neighbours outside the dataset and missing weights (1.0) are
// treated as in read_edges.neo4j.cypher. A node without neighbours gives one entry with a
// null key, which the adapter drops. (The per-class sums are left to the adapter: they
// would need a second WITH, which the openCypher grammar the tests parse with refuses.)
MATCH (a:${node_label} {${key}: $key})
WHERE ${a_in_dataset}
OPTIONAL MATCH (a)-[r:${rel_type}]-(b:${node_label})
WHERE b <> a AND ${b_in_dataset}
WITH a, b, max(coalesce(toFloat(r.${weight}), 1.0)) AS weight
RETURN a.${key} AS key, toString(a.${given_label}) AS given_label, a.${predicted_label} AS predicted_label,
       a.${label_confidence} AS label_confidence, a.${label_noise} AS label_noise,
       a.${label_noise_score} AS label_noise_score,
       a.${label_run_id} AS label_run_id, a.${label_solver} AS label_solver, a.${labelled_at} AS labelled_at,
       a.${label_accepted} AS label_accepted,
       collect({key: b.${key}, label: coalesce(toString(b.${given_label}), b.${predicted_label}),
                weight: weight, given: b.${given_label} IS NOT NULL, scores: b.${label_scores},
                run: b.${label_run_id}}) AS neighbours
