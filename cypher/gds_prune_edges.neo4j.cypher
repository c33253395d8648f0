// Neo4j only (GDS). The δ-graph on top of GDS kNN: deletes graphlabel's relationships from
// one batch of nodes $keys that are longer than $max_distance, measured exactly with the
// GDS distance functions (https://neo4j.com/docs/graph-data-science/current/algorithms/similarity-functions/)
// rather than through kNN's similarity score.
UNWIND $keys AS node_key
MATCH (a:${node_label} {${key}: node_key})-[r:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset} AND r.${edge_marker} IS NOT NULL
  AND CASE $metric
        WHEN 'cosine' THEN 1.0 - gds.similarity.cosine(${a_features}, ${b_features})
        ELSE gds.similarity.euclideanDistance(${a_features}, ${b_features})
      END > $max_distance
DELETE r
RETURN count(*) AS deleted
