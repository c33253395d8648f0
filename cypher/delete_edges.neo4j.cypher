// Deletes at most $batch_size of the dataset's similarity relationships per transaction;
// the adapter repeats it until fewer come back. (Kùzu deletes in one statement; Neo4j's
// CALL {} IN TRANSACTIONS needs an auto-commit transaction, which has no driver retries.)
MATCH (a:${node_label})-[r:${rel_type}]->(:${node_label})
WHERE ${a_in_dataset}
WITH r LIMIT $batch_size
DELETE r
RETURN count(*) AS deleted
