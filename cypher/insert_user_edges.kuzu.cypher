// Bulk load of the user's edges from the Arrow table $edges (columns from, to, type,
// weight, dataset), as insert_edges.kuzu.cypher does for the similarity relationships.
COPY USER_EDGE FROM $edges
