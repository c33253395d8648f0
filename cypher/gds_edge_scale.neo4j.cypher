// Neo4j only (GDS). The Gaussian bandwidth the local builder uses by default (similarity/
// knn.py): the mean over nodes of the distance to their farthest kept neighbour, computed
// from the features with the GDS similarity functions
// (https://neo4j.com/docs/graph-data-science/current/algorithms/similarity-functions/).
MATCH (a:${node_label})-[r:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset} AND r.${edge_marker} IS NOT NULL
WITH a, max(CASE $metric
              WHEN 'cosine' THEN 1.0 - gds.similarity.cosine(${a_features}, ${b_features})
              ELSE gds.similarity.euclideanDistance(${a_features}, ${b_features})
            END) AS farthest
RETURN avg(farthest) AS sigma
