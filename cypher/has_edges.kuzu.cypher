// Whether the dataset has a similarity relationship at all (GraphStore.has_edges): one row
// or none, without counting them.
MATCH ()-[r:SIMILAR]->()
WHERE r.dataset = $dataset
RETURN 1 AS found
LIMIT 1
