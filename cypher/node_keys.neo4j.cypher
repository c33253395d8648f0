// The dataset's node keys as one list, for writes the adapter batches by node (weights,
// δ pruning and deletion of the dataset's similarity relationships).
MATCH (e:${node_label})
WHERE ${e_in_dataset} AND e.${key} IS NOT NULL
RETURN collect(e.${key}) AS keys
