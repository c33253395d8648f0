// read_nodes.neo4j.cypher without the feature column, for solvers that need only the graph.
MATCH (e:${node_label})
WHERE ${e_in_dataset}
RETURN collect(e.${key}) AS keys,
       count(e) - count(e.${key}) AS keyless,
       collect(e.${given_label} IS NOT NULL) AS has_label,
       collect(coalesce(toString(e.${given_label}), '')) AS labels
