// Neo4j only (GDS). The δ-graph on top of GDS kNN: deletes the dataset's similarity
// relationships longer than $max_distance, measured exactly with the GDS distance
// functions (https://neo4j.com/docs/graph-data-science/current/algorithms/similarity-functions/)
// rather than through kNN's similarity score.
MATCH (a:${node_label})-[r:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset}
  AND CASE $metric
        WHEN 'cosine' THEN 1.0 - gds.similarity.cosine(${a_features}, ${b_features})
        ELSE gds.similarity.euclideanDistance(${a_features}, ${b_features})
      END > $max_distance
DELETE r
RETURN count(*) AS deleted
