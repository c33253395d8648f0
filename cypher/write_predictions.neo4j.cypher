// One UNWIND batch of $rows keyed by the node key (Kùzu: LOAD FROM over an Arrow table).
// Neo4j also keeps the prediction of the run before, for "what changed between two
// runs": it is shifted only when the node's run id differs from the row's, so a run that
// died half way and is re-run under its run id shifts each node once, and ends as one
// clean run. The first SET reads the old values before the second overwrites them.
UNWIND $rows AS row
MATCH (e:${node_label} {${key}: row.key})
WHERE ${e_in_dataset}
SET e.${previous_predicted_label} = CASE
      WHEN e.${label_run_id} IS NULL OR e.${label_run_id} = row.label_run_id
      THEN e.${previous_predicted_label} ELSE e.${predicted_label} END,
    e.${previous_label_run_id} = CASE
      WHEN e.${label_run_id} IS NULL OR e.${label_run_id} = row.label_run_id
      THEN e.${previous_label_run_id} ELSE e.${label_run_id} END
SET e.${predicted_label} = row.predicted_label,
    e.${label_confidence} = row.label_confidence,
    e.${label_noise} = row.label_noise,
    e.${label_noise_score} = row.label_noise_score,
    e.${label_run_id} = row.label_run_id,
    e.${label_solver} = row.label_solver,
    e.${labelled_at} = row.labelled_at,
    e.${label_scores} = row.label_scores,
    e.${label_runner_up} = row.label_runner_up,
    e.${label_margin} = row.label_margin
RETURN count(e) AS written
