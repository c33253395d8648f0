// Kùzu-only: which rows of the Arrow table $edges (from, to, weight, dataset) are already
// stored as relationships. add_edges bulk-loads the others with COPY (insert_edges) and
// MERGEs only these (add_edges.kuzu.cypher): MERGE over LOAD FROM matches node pairs row
// by row (1.75 s for 50k rows, against 0.04 s for this check and a COPY, kuzu 0.11.3).
LOAD FROM $edges
MATCH (a:Entity {uid: from})-[r:SIMILAR]->(b:Entity {uid: to})
WHERE r.dataset = dataset
RETURN from, to
