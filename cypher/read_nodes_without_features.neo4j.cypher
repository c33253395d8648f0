// read_nodes.neo4j.cypher without the feature column, for solvers that need only the graph.
MATCH (e:${node_label})
WHERE ${e_in_dataset}
RETURN collect(e.${key}) AS keys,
       count(e) - count(e.${key}) AS keyless,
       collect(e.${given_label} IS NOT NULL) AS has_label,
       collect(coalesce(toString(e.${given_label}), '')) AS labels,
       collect(e.${categories} IS NOT NULL) AS has_categories,
       collect(coalesce(e.${categories}, [])) AS categories,
       collect(e.${given_label_confidence} IS NOT NULL) AS has_confidence,
       collect(coalesce(toFloat(e.${given_label_confidence}), 1.0)) AS label_confidence
