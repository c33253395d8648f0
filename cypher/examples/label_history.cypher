// A key's review history (graphlabel accept / correct), oldest first: who decided, when,
// the given label before and after, and the prediction the reviewer saw.
// Parameters: $dataset, $key.
MATCH (d:LabelDecision)-[:REVIEWS]->(e:Entity)
WHERE e.dataset = $dataset AND e.key = $key
RETURN d.decided_at AS decided_at, d.decision AS decision, d.previous_label AS previous_label,
       d.label AS label, d.reviewer AS reviewer, d.predicted_label AS predicted_label
ORDER BY decided_at ASC
