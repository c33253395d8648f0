// The user's edges of one type between the dataset's nodes (graphstore/user_edges.py), as
// stored; a self loop is left out (a node is not its own neighbour).
MATCH (a:Entity)-[r:USER_EDGE]->(b:Entity)
WHERE r.dataset = $dataset AND r.type = $edge_type AND a.uid <> b.uid
RETURN a.key AS source, b.key AS target, r.weight AS weight
