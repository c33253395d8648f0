// The neighbours that drove one node's label (GraphStore.explain), strongest first, with the
// label the solvers saw on them: the given one, else the predicted one. The larger weight
// where a pair has a relationship each way, as in explain_node.neo4j.cypher.
MATCH (a:${node_label} {${key}: $key})-[r:${rel_type}]-(b:${node_label})
WHERE ${a_in_dataset} AND ${b_in_dataset} AND b <> a
WITH b, max(coalesce(toFloat(r.${weight}), 1.0)) AS weight
RETURN b.${key} AS key, weight, toString(b.${given_label}) AS given_label,
       b.${predicted_label} AS predicted_label,
       coalesce(toString(b.${given_label}), b.${predicted_label}) AS label
ORDER BY weight DESC, key ASC
LIMIT $max_rows
