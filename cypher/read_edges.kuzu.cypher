// The dataset's similarity relationships whose source node's Entity-table offset lies in
// [$first, $last), by the offsets of their endpoints (read_nodes says why): read a slice at
// a time, so Kùzu's result, which it keeps in its buffer pool, stays a slice's size.
MATCH (a:Entity)-[r:SIMILAR]->(b:Entity)
WHERE r.dataset = $dataset AND offset(id(a)) >= $first AND offset(id(a)) < $last
RETURN offset(id(a)) AS source, offset(id(b)) AS target, r.weight AS weight
