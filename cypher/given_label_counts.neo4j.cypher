// The dataset's classes (its distinct given labels: a correction must name one of them) and
// how many nodes give each (ingest compares them before and after a file).
MATCH (e:${node_label})
WHERE ${e_in_dataset} AND e.${given_label} IS NOT NULL
RETURN toString(e.${given_label}) AS label, count(*) AS nodes
