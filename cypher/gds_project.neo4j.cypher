// Neo4j only (GDS). Cypher projection of the dataset's nodes with their feature vector and
// no relationships (kNN ignores existing ones); nodes without a complete feature vector
// are left out and so get no kNN relationships.
// https://neo4j.com/docs/graph-data-science/current/management-ops/projections/graph-project-cypher-projection/
// dataConfig: sourceNodeProperties are the node's properties; with no target node GDS 2.13
// still wants targetNodeProperties named, as null (it refuses the projection otherwise).
MATCH (e:${node_label})
WHERE ${e_in_dataset}
WITH e, ${e_features} AS features
WHERE features IS NOT NULL AND size(features) > 0 AND none(x IN features WHERE x IS NULL)
RETURN gds.graph.project($graph_name, e, null, {
  sourceNodeProperties: {features: [x IN features | toFloat(x)]},
  targetNodeProperties: null
})
