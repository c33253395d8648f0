// The dataset's classes: its distinct given labels (a correction must name one of them).
MATCH (e:${node_label})
WHERE ${e_in_dataset} AND e.${given_label} IS NOT NULL
RETURN DISTINCT toString(e.${given_label}) AS label
