// The run's fitted model (GraphStore.write_model): the bytes of labelling.run_model, a
// byte-array property of its LabelRun node (Neo4j keeps byte[] natively; the server shares
// no file system with graphlabel, so a file next to the database is not an option here).
// read_runs.neo4j.cypher names its columns, so listing runs never reads this property.
MATCH (r:${run_label} {run_id: $run_id})
SET r.model = $model
RETURN count(r) AS written
