// The model write_model.neo4j.cypher kept on a run (null when the run kept none).
MATCH (r:${run_label} {run_id: $run_id})
RETURN r.model AS model
