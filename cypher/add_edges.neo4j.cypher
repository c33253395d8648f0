// One UNWIND batch of $rows (source, target, weight) given by key, added next to the
// dataset's relationships without deleting any (incremental runs). The same statement as
// insert_edges.neo4j.cypher, which replace_edges runs after deleting: MERGE on the
// marker ${edge_marker} keeps a retried batch from doubling relationships.
UNWIND $rows AS row
MATCH (a:${node_label} {${key}: row.source})
WHERE ${a_in_dataset}
MATCH (b:${node_label} {${key}: row.target})
WHERE ${b_in_dataset}
MERGE (a)-[r:${rel_type} {${edge_marker}: row.weight}]->(b)
SET r.${weight} = row.weight
RETURN count(r) AS written
