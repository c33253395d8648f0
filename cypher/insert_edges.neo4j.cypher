// One UNWIND batch of $rows (source, target, weight) given by key; Kùzu bulk-loads an
// Arrow table with COPY. The relationships carry the marker ${edge_marker} (here the
// weight) that says graphlabel created them: MERGE on it keeps a retried batch from
// doubling relationships and never takes over a user's relationship of the same type.
UNWIND $rows AS row
MATCH (a:${node_label} {${key}: row.source})
WHERE ${a_in_dataset}
MATCH (b:${node_label} {${key}: row.target})
WHERE ${b_in_dataset}
MERGE (a)-[r:${rel_type} {${edge_marker}: row.weight}]->(b)
SET r.${weight} = row.weight
RETURN count(r) AS written
