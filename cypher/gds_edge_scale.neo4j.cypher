// Neo4j only (GDS). The Gaussian bandwidth the local builder uses by default (similarity/
// knn.py): the mean over nodes of the distance to their farthest kept neighbour, from the
// scores GDS kNN wrote (distance 1/s - 1 for EUCLIDEAN, 1 - cos = 2 - 2s for COSINE: see
// gds_set_weights.neo4j.cypher), so no feature vector is read.
MATCH (a:${node_label})-[r:${rel_type}]->(:${node_label})
WHERE ${a_in_dataset} AND r.${edge_marker} IS NOT NULL
WITH a, min(r.${edge_marker}) AS lowest
RETURN avg(CASE $metric WHEN 'cosine' THEN 2.0 - 2.0 * lowest ELSE 1.0 / lowest - 1.0 END) AS sigma
