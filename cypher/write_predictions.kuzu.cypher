// One statement over the Arrow table $rows (LOAD FROM); Neo4j uses UNWIND batches. Returns
// how many nodes matched (a row whose key is not a node of the dataset sets nothing).
LOAD FROM $rows
MATCH (e:Entity {uid: uid})
SET e.predicted_label = predicted_label,
    e.label_confidence = label_confidence,
    e.label_noise = label_noise,
    e.label_noise_score = label_noise_score,
    e.label_run_id = label_run_id,
    e.label_solver = label_solver,
    e.labelled_at = labelled_at,
    e.label_scores = label_scores,
    e.label_runner_up = label_runner_up,
    e.label_margin = label_margin
RETURN count(e) AS written
