// Given labels the run judged wrong (label_noise), with what their neighbours say.
// Parameters: $dataset. Neighbours are listed as {key, given, predicted, weight}, each once
// (GDS kNN writes a pair of mutual neighbours in both directions: DISTINCT keeps one).
MATCH (e:Entity)-[r:SIMILAR]-(n:Entity)
WHERE e.dataset = $dataset AND e.label_noise = true
RETURN e.key AS key,
       e.given_label AS given_label,
       e.predicted_label AS predicted_label,
       e.label_confidence AS confidence,
       collect(DISTINCT {key: n.key, given: n.given_label, predicted: n.predicted_label, weight: r.weight}) AS neighbours
ORDER BY confidence DESC, key ASC
