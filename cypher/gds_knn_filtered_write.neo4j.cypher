// Neo4j only (GDS). Filtered kNN for incremental runs: relationships from the nodes with
// the projection label in $config.sourceNodeFilter to their nearest among
// $config.targetNodeFilter (gds_project_new.neo4j.cypher gives the labels):
// https://neo4j.com/docs/graph-data-science/current/algorithms/filtered-knn/
CALL gds.knn.filtered.write($graph_name, $config)
YIELD relationshipsWritten, nodesCompared, didConverge, ranIterations
RETURN relationshipsWritten AS written, nodesCompared AS compared, didConverge AS converged,
       ranIterations AS iterations
