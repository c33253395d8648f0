// One node's features (GraphStore.node_features: explain after a maxmargin run weighs the
// support vectors at them), read as read_nodes.neo4j.cypher reads them (one list
// property, or several properties in order).
MATCH (a:${node_label} {${key}: $key})
WHERE ${a_in_dataset}
RETURN ${a_features} AS features
LIMIT 1
