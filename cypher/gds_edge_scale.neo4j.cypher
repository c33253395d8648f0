// Neo4j only (GDS). The Gaussian bandwidth the local builder uses by default (similarity/
// knn.py, median_kth_distance): the median over nodes of the distance to their farthest
// kept neighbour, among nodes where it is positive (one far outlier must not flatten
// every weight, as the mean did), computed from the features with the GDS similarity
// functions (https://neo4j.com/docs/graph-data-science/current/algorithms/similarity-functions/).
MATCH (a:${node_label})-[:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset}
WITH a, max(CASE $metric
              WHEN 'cosine' THEN 1.0 - gds.similarity.cosine(${a_features}, ${b_features})
              ELSE gds.similarity.euclideanDistance(${a_features}, ${b_features})
            END) AS farthest
WHERE farthest > 0
RETURN percentileCont(farthest, 0.5) AS sigma
