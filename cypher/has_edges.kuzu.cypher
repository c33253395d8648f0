// Whether the dataset has a similarity relationship at all (GraphStore.has_edges): one row
// or none, without counting them.
MATCH ()-[r:SIMILAR]->()
WHERE r.dataset = $dataset
RETURN r.weight AS weight
LIMIT 1
