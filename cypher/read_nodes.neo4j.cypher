// One row of parallel columns instead of one record per node: the driver hands back a few
// lists that numpy takes whole. collect() skips nulls, so nullable values are made
// non-null (and has_label / has_features say which were missing) to keep the lists
// aligned (a node without a key would shift them: keyless counts those, and the adapter
// refuses them). Kùzu returns an Arrow table directly (read_nodes.kuzu.cypher).
MATCH (e:${node_label})
WHERE ${e_in_dataset}
WITH e, ${e_features} AS features
RETURN collect(e.${key}) AS keys,
       count(e) - count(e.${key}) AS keyless,
       collect(e.${given_label} IS NOT NULL) AS has_label,
       collect(coalesce(toString(e.${given_label}), '')) AS labels,
       collect(features IS NOT NULL AND none(x IN features WHERE x IS NULL)) AS has_features,
       collect(coalesce(features, [])) AS features,
       collect(e.${categories} IS NOT NULL) AS has_categories,
       collect(coalesce(e.${categories}, [])) AS categories,
       collect(e.${given_label_confidence} IS NOT NULL) AS has_confidence,
       collect(coalesce(toFloat(e.${given_label_confidence}), 1.0)) AS label_confidence
