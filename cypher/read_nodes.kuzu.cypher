MATCH (e:Entity)
WHERE e.dataset = $dataset
RETURN e.key AS key, e.given_label AS label, e.features AS features, e.categories AS categories,
       e.given_label_confidence AS label_confidence
