// How many of the dataset's nodes have each feature length (GraphStore.feature_lengths):
// ingest rejects rows whose length differs. With several feature properties the length
// is their number; a node without features has a null length (left out by the adapter).
MATCH (e:${node_label})
WHERE ${e_in_dataset}
RETURN size(${e_features}) AS length, count(*) AS nodes
ORDER BY nodes DESC, length ASC
