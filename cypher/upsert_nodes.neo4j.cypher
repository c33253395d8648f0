// One UNWIND batch of $rows (key, features, label); Kùzu scans an Arrow table with LOAD
// FROM instead, hence one file per dialect. ${merge_identity} is the key (and the dataset
// when a dataset property is configured), so a re-run batch updates the same nodes.
// Change tracking (graphstore/changes.py): the first SET reads the stored content hash
// before the second replaces it, so updated_at becomes $now only for new nodes and nodes
// whose features or given label changed.
UNWIND $rows AS row
MERGE (e:${node_label} {${merge_identity}})
SET e.${updated_at} = CASE WHEN e.${content_hash} IS NULL OR e.${content_hash} <> row.content_hash
                           THEN $now ELSE e.${updated_at} END
SET ${set_features}, e.${given_label} = row.label, e.${content_hash} = row.content_hash,
    e.${categories} = row.categories, e.${given_label_confidence} = row.label_confidence
RETURN count(e) AS written
