// What changed since each node was last labelled (graphstore/changes.py), compared in
// the query: never labelled, or features / given label updated after labelled_at. One
// row of parallel columns as in read_nodes.neo4j.cypher (keyless nodes left out so that
// the lists stay aligned; read_subgraph refuses them).
MATCH (e:${node_label})
WHERE ${e_in_dataset} AND e.${key} IS NOT NULL
RETURN collect(e.${key}) AS keys,
       collect(e.${labelled_at} IS NULL
               OR (e.${updated_at} IS NOT NULL AND e.${updated_at} > e.${labelled_at})) AS changed,
       collect(e.${labelled_at} IS NOT NULL) AS labelled,
       collect(e.${predicted_label} IS NOT NULL) AS has_predicted,
       collect(coalesce(toString(e.${predicted_label}), '')) AS predicted
