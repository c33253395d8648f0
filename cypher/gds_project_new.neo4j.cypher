// Neo4j only (GDS). gds_project.neo4j.cypher with node labels in the projection for
// filtered kNN: every node gets GraphlabelNode, the nodes whose key is in $new_keys also
// GraphlabelNew, so that gds.knn.filtered.write can take sourceNodeFilter 'GraphlabelNew'
// and targetNodeFilter 'GraphlabelNode' (labels exist in the projection only).
// https://neo4j.com/docs/graph-data-science/current/management-ops/projections/graph-project-cypher-projection/
// (dataConfig sourceNodeLabels; the Filtered KNN page projects labels(p) the same way).
// With no target node GDS 2.13 wants targetNodeLabels and targetNodeProperties named, as null.
MATCH (e:${node_label})
WHERE ${e_in_dataset}
WITH e, ${e_features} AS features
WHERE features IS NOT NULL AND size(features) > 0 AND none(x IN features WHERE x IS NULL)
RETURN gds.graph.project($graph_name, e, null, {
  sourceNodeLabels: CASE WHEN e.${key} IN $new_keys THEN ['GraphlabelNode', 'GraphlabelNew']
                         ELSE ['GraphlabelNode'] END,
  sourceNodeProperties: {features: [x IN features | toFloat(x)]},
  targetNodeLabels: null,
  targetNodeProperties: null
})
