// The nodes a run was least sure about: review these first.
// Parameters: $dataset, $max_confidence (e.g. 0.6), $max_rows (e.g. 25).
// Runs on Neo4j and on the embedded Kùzu store (default names: Entity, SIMILAR, ...).
MATCH (e:Entity)
WHERE e.dataset = $dataset AND e.label_confidence < $max_confidence
RETURN e.key AS key,
       e.given_label AS given_label,
       e.predicted_label AS predicted_label,
       e.label_confidence AS confidence,
       e.label_run_id AS run_id
ORDER BY confidence ASC, key ASC
LIMIT $max_rows
