// Of the nodes $keys, those with a complete feature vector: the only ones a GDS projection
// (gds_project*.neo4j.cypher) takes in, so the only ones filtered kNN can give edges.
UNWIND $keys AS node_key
MATCH (e:${node_label} {${key}: node_key})
WHERE ${e_in_dataset}
WITH e, ${e_features} AS features
WHERE features IS NOT NULL AND size(features) > 0 AND none(x IN features WHERE x IS NULL)
RETURN collect(e.${key}) AS keys
