// Neo4j only (GDS). The weights of the relationships GDS kNN just wrote from one batch of
// nodes $keys (those with the marker, GDS's score, and no weight yet): the local builder's
// weights (similarity/knn.py), recomputed exactly from the features with the GDS
// similarity functions rather than inverted from kNN's score
// (https://neo4j.com/docs/graph-data-science/current/algorithms/similarity-functions/).
// $weights: 'gaussian' exp(-d²/2σ²), 'cosine' max(cos, 0), 'binary' 1, 'similarity' the
// score itself. Until this has run on every batch the graph is half built, and
// read_edges.neo4j.cypher counts the relationships still without a weight.
UNWIND $keys AS node_key
MATCH (a:${node_label} {${key}: node_key})-[r:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset} AND ${b_in_dataset} AND r.${edge_marker} IS NOT NULL AND r.${weight} IS NULL
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
    ELSE r.${edge_marker}
  END
RETURN count(r) AS weighted
