// Neo4j only (GDS). The weights of the relationships GDS kNN just wrote from one batch of
// nodes $keys (those with the marker, GDS's score s, and no weight yet): the local
// builder's weights (similarity/knn.py) from the score alone. GDS kNN scores a pair
// s = 1 / (1 + d) with EUCLIDEAN and s = (1 + cos) / 2 with COSINE (checked to 2e-15 on
// GDS 2.13 against gds.similarity.*), so the distance, and each weight, follows from s
// exactly, without reading two feature vectors per relationship (10x slower).
// $weights: 'gaussian' exp(-d²/2σ²), 'cosine' max(cos, 0), 'binary' 1, 'similarity' s.
// Until this has run on every batch the graph is half built, and read_edges.neo4j.cypher
// counts the relationships still without a weight.
UNWIND $keys AS node_key
MATCH (a:${node_label} {${key}: node_key})-[r:${rel_type}]->(:${node_label})
WHERE ${a_in_dataset} AND r.${edge_marker} IS NOT NULL AND r.${weight} IS NULL
WITH r, r.${edge_marker} AS s,
     CASE $metric WHEN 'cosine' THEN 2.0 - 2.0 * r.${edge_marker} ELSE 1.0 / r.${edge_marker} - 1.0 END AS distance
SET r.${weight} = CASE $weights
    WHEN 'gaussian' THEN exp(-(distance * distance) / (2.0 * $sigma * $sigma))
    WHEN 'cosine' THEN CASE WHEN s > 0.5 THEN 2.0 * s - 1.0 ELSE 0.0 END
    WHEN 'binary' THEN 1.0
    ELSE s
  END
RETURN count(r) AS weighted
