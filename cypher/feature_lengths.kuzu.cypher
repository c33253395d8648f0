// How many of the dataset's nodes have each feature length (GraphStore.feature_lengths):
// ingest rejects rows whose length differs. `features` is a BLOB of float64, 8 bytes each.
MATCH (e:Entity)
WHERE e.dataset = $dataset
RETURN octet_length(e.features) / 8 AS length, count(*) AS nodes
ORDER BY nodes DESC, length ASC
