// Of the nodes $keys, those with a complete feature vector: the only ones a GDS projection
// (gds_project*.neo4j.cypher) takes in, so the only ones filtered kNN can give edges. A
// node of categorical columns only has an empty feature list and its categories (the
// projection gives it their one-hot).
UNWIND $keys AS node_key
MATCH (e:${node_label} {${key}: node_key})
WHERE ${e_in_dataset}
WITH e, ${e_features} AS features
WHERE features IS NOT NULL AND none(x IN features WHERE x IS NULL)
  AND (size(features) > 0 OR size(coalesce(e.${categories}, [])) > 0)
RETURN collect(e.${key}) AS keys
