// The dataset's classes (its distinct given labels: a correction must name one of them) and
// how many nodes give each (ingest compares them before and after a file).
MATCH (e:Entity)
WHERE e.dataset = $dataset AND e.given_label IS NOT NULL
RETURN e.given_label AS label, count(*) AS nodes
