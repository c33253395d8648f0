// Neo4j only (GDS). gds_reweight_edges.neo4j.cypher for the relationships filtered kNN
// just wrote from the nodes $keys: their score becomes the weight of the existing graph
// ('gaussian' with the recorded $sigma, 'cosine', 'binary'), computed exactly from the
// features with the GDS similarity functions
// (https://neo4j.com/docs/graph-data-science/current/algorithms/similarity-functions/).
UNWIND $keys AS new_key
MATCH (a:${node_label} {${key}: new_key})-[r:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset} AND ${b_in_dataset}
WITH r,
     CASE $metric
       WHEN 'cosine' THEN 1.0 - gds.similarity.cosine(${a_features}, ${b_features})
       ELSE gds.similarity.euclideanDistance(${a_features}, ${b_features})
     END AS distance,
     gds.similarity.cosine(${a_features}, ${b_features}) AS cosine
SET r.${weight} = CASE $weights
    WHEN 'gaussian' THEN exp(-(distance * distance) / (2.0 * $sigma * $sigma))
    WHEN 'cosine' THEN CASE WHEN cosine > 0.0 THEN cosine ELSE 0.0 END
    WHEN 'binary' THEN 1.0
    ELSE r.${weight}
  END
RETURN count(r) AS kept
