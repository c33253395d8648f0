// Every node's latest prediction (null where never labelled), for scoring and export.
MATCH (e:Entity)
WHERE e.dataset = $dataset
RETURN e.key AS key,
       e.predicted_label AS predicted_label,
       e.label_confidence AS label_confidence,
       e.label_noise AS label_noise,
       e.label_noise_score AS label_noise_score
