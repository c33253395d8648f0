// Neo4j only (GDS). kNN on the projection $graph_name, written back as relationships:
// $config holds topK, nodeProperties, writeRelationshipType, writeProperty (the edge
// marker: GDS's similarity score) and the optional sampling settings, as in
// https://neo4j.com/docs/graph-data-science/current/algorithms/knn/
CALL gds.knn.write($graph_name, $config)
YIELD relationshipsWritten, nodesCompared, didConverge, ranIterations
RETURN relationshipsWritten AS written, nodesCompared AS compared, didConverge AS converged,
       ranIterations AS iterations
