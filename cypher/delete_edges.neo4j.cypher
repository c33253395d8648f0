// The similarity relationships graphlabel created (${edge_marker} set) from one batch of
// the dataset's nodes $keys; relationships without the marker (a user's) stay. Batched by
// node, so each batch costs its own relationships only (a LIMIT loop over the dataset
// would scan the emptied nodes again on every batch).
UNWIND $keys AS node_key
MATCH (a:${node_label} {${key}: node_key})
WHERE ${a_in_dataset}
MATCH (a)-[r:${rel_type}]->(:${node_label})
WHERE r.${edge_marker} IS NOT NULL
DELETE r
RETURN count(*) AS deleted
