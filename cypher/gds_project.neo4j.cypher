// Neo4j only (GDS). Cypher projection of the dataset's nodes with their feature vector and
// no relationships (kNN ignores existing ones); nodes without a complete feature vector
// are left out and so get no kNN relationships.
// https://neo4j.com/docs/graph-data-science/current/management-ops/projections/graph-project-cypher-projection/
// dataConfig key sourceNodeProperties: the node properties to project for the source node.
MATCH (e:${node_label})
WHERE ${e_in_dataset}
WITH e, ${e_features} AS features
WHERE features IS NOT NULL AND size(features) > 0 AND none(x IN features WHERE x IS NULL)
RETURN gds.graph.project($graph_name, e, null, {sourceNodeProperties: {features: [x IN features | toFloat(x)]}})
