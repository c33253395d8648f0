// The dataset's similarity relationships by the Entity-table offsets of their endpoints
// (read_nodes says why).
MATCH (a:Entity)-[r:SIMILAR]->(b:Entity)
WHERE r.dataset = $dataset
RETURN offset(id(a)) AS source, offset(id(b)) AS target, r.weight AS weight
