// Neo4j only (GDS). Cypher projection of the dataset's nodes with their feature vector and
// no relationships (kNN ignores existing ones); nodes without a complete feature vector
// are left out and so get no kNN relationships.
// https://neo4j.com/docs/graph-data-science/current/management-ops/projections/graph-project-cypher-projection/
// dataConfig: sourceNodeProperties are the node's properties; with no target node GDS 2.13
// still wants targetNodeProperties named, as null (it refuses the projection otherwise).
MATCH (e:${node_label})
WHERE ${e_in_dataset}
// The encoding the graph is measured in (similarity/encoding.py), applied in the projection
// so that no scaled copy is written to the nodes: numeric features as (x - $center) / $width
// ($center empty: as stored), then one indicator per (column, value) of the vocabulary,
// $onehot_columns[j] / $onehot_values[j], compared with the node's categories list. One
// WITH (the features expression repeated): the openCypher grammar the tests parse with
// refuses a WITH after a WITH.
WITH e, ${e_features} AS features,
     [i IN range(0, size(${e_features}) - 1) |
         CASE WHEN size($center) = 0 THEN toFloat(${e_features}[i])
              ELSE (toFloat(${e_features}[i]) - $center[i]) / $width[i] END] +
        [j IN range(0, size($onehot_columns) - 1) |
         CASE WHEN e.${categories}[$onehot_columns[j]] = $onehot_values[j] THEN 1.0 ELSE 0.0 END] AS encoded
WHERE features IS NOT NULL AND none(x IN features WHERE x IS NULL) AND size(encoded) > 0
RETURN gds.graph.project($graph_name, e, null, {
  sourceNodeProperties: {features: encoded},
  targetNodeProperties: null
})
