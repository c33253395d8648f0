// Kùzu-only: bulk load of new nodes from the Arrow table $rows, whose columns are these, in
// this order (KuzuStore.write_nodes); a uid that is already a node fails the whole COPY, so
// the adapter sends only the rows existing_nodes did not find. Neo4j MERGEs in UNWIND batches.
COPY Entity(uid, dataset, key, features, given_label, categories, given_label_confidence, content_hash, updated_at)
FROM $rows
