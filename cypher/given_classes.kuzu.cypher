// The dataset's classes: its distinct given labels (a correction must name one of them).
MATCH (e:Entity)
WHERE e.dataset = $dataset AND e.given_label IS NOT NULL
RETURN DISTINCT e.given_label AS label
