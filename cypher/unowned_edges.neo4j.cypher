// Relationships of the similarity type between the dataset's nodes that graphlabel did not
// create (no ${edge_marker} property): graphlabel never writes into, or deletes from, a
// relationship type that holds a user's relationships between these nodes.
MATCH (a:${node_label})-[r:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset} AND ${b_in_dataset} AND r.${edge_marker} IS NULL
RETURN count(r) AS unowned
