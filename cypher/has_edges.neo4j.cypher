// Whether a relationship of the configured type joins two of the dataset's nodes
// (GraphStore.has_edges): one row or none, without counting them. A user's own
// relationships count, as read_edges reads them.
MATCH (a:${node_label})-[r:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset} AND ${b_in_dataset} AND a <> b
RETURN 1 AS found
LIMIT 1
