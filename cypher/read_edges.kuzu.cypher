MATCH (a:Entity)-[r:SIMILAR]->(b:Entity)
WHERE r.dataset = $dataset
RETURN a.key AS source, b.key AS target, r.weight AS weight
