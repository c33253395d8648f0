// Adds the Arrow table $edges (from, to, weight, dataset) to the similarity
// relationships without deleting any (incremental runs). MERGE, not COPY, so that a
// retried call updates the relationships it wrote instead of doubling them; the store
// sends here only the rows existing_edges.kuzu.cypher found stored, and COPYs the rest.
LOAD FROM $edges
MATCH (a:Entity {uid: from}), (b:Entity {uid: to})
MERGE (a)-[r:SIMILAR {dataset: dataset}]->(b)
SET r.weight = weight
