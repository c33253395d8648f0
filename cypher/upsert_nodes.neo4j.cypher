// One UNWIND batch of $rows (key, features, label); Kùzu scans an Arrow table with LOAD
// FROM instead, hence one file per dialect. ${merge_identity} is the key (and the dataset
// when a dataset property is configured), so a re-run batch updates the same nodes.
UNWIND $rows AS row
MERGE (e:${node_label} {${merge_identity}})
SET ${set_features}, e.${given_label} = row.label
RETURN count(e) AS written
