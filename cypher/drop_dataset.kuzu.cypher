// Everything of one dataset (GraphStore.drop_dataset), run in one transaction by the
// adapter: its review decisions, similarity relationships, runs, graph and feature-column
// records and nodes (DETACH DELETE takes the user's edges of ingest-edges, USER_EDGE, with
// the nodes).
MATCH (d:LabelDecision) WHERE d.dataset = $dataset DETACH DELETE d;
MATCH (:Entity)-[r:SIMILAR]->(:Entity) WHERE r.dataset = $dataset DELETE r;
MATCH (r:LabelRun) WHERE r.dataset = $dataset DELETE r;
MATCH (g:GraphBuild) WHERE g.dataset = $dataset DELETE g;
MATCH (c:FeatureColumns) WHERE c.dataset = $dataset DELETE c;
MATCH (e:Entity) WHERE e.dataset = $dataset DETACH DELETE e
