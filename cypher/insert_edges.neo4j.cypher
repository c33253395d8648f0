// One UNWIND batch of $rows (source, target, weight) given by key; Kùzu bulk-loads an
// Arrow table with COPY. MERGE keeps a retried batch from doubling relationships.
UNWIND $rows AS row
MATCH (a:${node_label} {${key}: row.source})
WHERE ${a_in_dataset}
MATCH (b:${node_label} {${key}: row.target})
WHERE ${b_in_dataset}
MERGE (a)-[r:${rel_type}]->(b)
SET r.${weight} = row.weight
RETURN count(r) AS written
