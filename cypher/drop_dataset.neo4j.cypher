// One dataset's review decisions, runs, graph and feature-column records
// (GraphStore.drop_dataset); its nodes go by batches of keys (drop_nodes.neo4j.cypher)
// after graphlabel's own relationships (delete_edges.neo4j.cypher).
MATCH (d:LabelDecision) WHERE d.dataset = $dataset DETACH DELETE d;
MATCH (r:${run_label}) WHERE r.dataset = $dataset DETACH DELETE r;
MATCH (g:GraphBuild) WHERE g.dataset = $dataset DETACH DELETE g;
MATCH (c:FeatureColumns) WHERE c.dataset = $dataset DETACH DELETE c
