// The datasets that have nodes (the message about a dataset that has none names them).
MATCH (e:Entity)
RETURN DISTINCT e.dataset AS dataset
ORDER BY dataset
