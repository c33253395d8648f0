// Neo4j only (GDS). Drop the projection $graph_name from the graph catalog; no error when
// it is already gone (failIfMissing false), so the adapter can call it in a finally.
CALL gds.graph.drop($graph_name, false) YIELD graphName
RETURN graphName AS dropped
