// The dataset's node keys as an Arrow column, to check that relationships to be written
// join nodes of the dataset before anything is deleted or written (Kùzu's COPY fails on a
// missing endpoint only after replace_edges has deleted the old relationships).
MATCH (e:Entity)
WHERE e.dataset = $dataset
RETURN e.key AS key
