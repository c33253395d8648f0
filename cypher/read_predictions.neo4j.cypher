// Every node's latest prediction (null where never labelled), for scoring and export: one
// row holding a list per node, [key, predicted label, confidence, noise flag, noise score]
// (a list keeps its nulls, where collect() of a column would drop them and shift the
// columns), keyless nodes left out.
MATCH (e:${node_label})
WHERE ${e_in_dataset} AND e.${key} IS NOT NULL
RETURN collect([e.${key}, toString(e.${predicted_label}), e.${label_confidence}, e.${label_noise},
                e.${label_noise_score}]) AS rows
