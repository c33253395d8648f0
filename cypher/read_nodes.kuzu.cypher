MATCH (e:Entity)
WHERE e.dataset = $dataset
RETURN e.key AS key, e.given_label AS label, e.features AS features
