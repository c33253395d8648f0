// A review decision (GraphStore.record_decision), in one transaction: a LabelDecision
// node linked to the entity by REVIEWS, holding who, when, the given label before and
// after, and the prediction the reviewer saw. "correct" makes $label the given label and
// marks the node changed (updated_at; content_hash removed, so re-ingesting the old file
// is a change again); "accept" keeps the given label. Either way the given label after it is
// the one a reviewer vouched for (label_accepted): review lists the node no more.
MATCH (e:${node_label} {${key}: $key})
WHERE ${e_in_dataset}
WITH e, e.${given_label} AS previous
SET e.${given_label} = CASE WHEN $decision = 'correct' THEN $label ELSE previous END,
    e.${updated_at} = CASE WHEN $decision = 'correct' THEN $decided_at ELSE e.${updated_at} END,
    e.${content_hash} = CASE WHEN $decision = 'correct' THEN null ELSE e.${content_hash} END,
    e.${label_accepted} = CASE WHEN $decision = 'correct' THEN $label ELSE toString(previous) END
CREATE (d:LabelDecision {decision_id: $decision_id, dataset: $dataset, key: e.${key}, decision: $decision,
                         previous_label: toString(previous), label: toString(e.${given_label}),
                         reviewer: $reviewer, decided_at: $decided_at,
                         predicted_label: e.${predicted_label}, label_noise_score: e.${label_noise_score},
                         label_run_id: e.${label_run_id}})-[:REVIEWS]->(e)
RETURN toString(previous) AS previous_label, toString(e.${given_label}) AS label
