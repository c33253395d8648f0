// One UNWIND batch of $rows (source, target, weight) given by key, added next to the
// dataset's relationships without deleting any others (incremental runs). A relationship
// graphlabel wrote between the two nodes before (marker ${edge_marker} set) is replaced,
// so that a retried batch, or a pair added again with another weight, is updated and not
// doubled (a MERGE on the marker alone made a second relationship when the weight
// differed: the store contract caught it); a user's own relationships (no marker) are
// never touched. replace_edges deletes first and then runs insert_edges.neo4j.cypher.
UNWIND $rows AS row
MATCH (a:${node_label} {${key}: row.source})
WHERE ${a_in_dataset}
MATCH (b:${node_label} {${key}: row.target})
WHERE ${b_in_dataset}
OPTIONAL MATCH (a)-[old:${rel_type}]->(b)
WHERE old.${edge_marker} IS NOT NULL
DELETE old
WITH DISTINCT a, b, row
MERGE (a)-[r:${rel_type} {${edge_marker}: row.weight}]->(b)
SET r.${weight} = row.weight
RETURN count(r) AS written
