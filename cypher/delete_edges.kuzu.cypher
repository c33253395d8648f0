MATCH (:Entity)-[r:SIMILAR]->(:Entity)
WHERE r.dataset = $dataset
DELETE r
