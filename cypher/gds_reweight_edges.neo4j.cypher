// Neo4j only (GDS). Turns the similarity gds.knn.write stored into the weights the local
// builder gives (similarity/knn.py), recomputed exactly from the features with the GDS
// similarity functions rather than inverted from kNN's score:
// https://neo4j.com/docs/graph-data-science/current/algorithms/similarity-functions/
// $weights: 'gaussian' exp(-d²/2σ²), 'cosine' max(cos, 0), 'binary' 1, anything else
// keeps the score.
MATCH (a:${node_label})-[r:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset}
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
