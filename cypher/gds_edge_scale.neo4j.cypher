// Neo4j only (GDS). The Gaussian bandwidth the local builder uses by default (similarity/
// knn.py, median_kth_distance): the median over nodes of the distance to their farthest
// kept neighbour, among nodes where it is positive (one far outlier must not flatten every
// weight, as the mean did), from the scores GDS kNN wrote (distance 1/s - 1 for EUCLIDEAN,
// 1 - cos = 2 - 2s for COSINE: see gds_set_weights.neo4j.cypher; positive where s < 1), so
// no feature vector is read.
MATCH (a:${node_label})-[r:${rel_type}]->(:${node_label})
WHERE ${a_in_dataset} AND r.${edge_marker} IS NOT NULL
WITH a, min(r.${edge_marker}) AS lowest
WHERE lowest < 1.0
RETURN percentileCont(CASE $metric WHEN 'cosine' THEN 2.0 - 2.0 * lowest ELSE 1.0 / lowest - 1.0 END, 0.5) AS sigma
