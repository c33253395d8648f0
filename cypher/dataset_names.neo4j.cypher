// The datasets that have nodes (the message about a dataset that has none names them);
// without a dataset property, none: every node of the label is in any dataset.
MATCH (e:${node_label})
WHERE ${e_dataset} IS NOT NULL
RETURN DISTINCT toString(${e_dataset}) AS dataset
ORDER BY dataset
