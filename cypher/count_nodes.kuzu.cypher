MATCH (e:Entity)
WHERE e.dataset = $dataset
RETURN count(e) AS nodes
