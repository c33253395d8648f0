// How many review decisions the dataset has (drop-dataset says what it deletes).
MATCH (d:LabelDecision)
WHERE d.dataset = $dataset
RETURN count(d) AS decisions
