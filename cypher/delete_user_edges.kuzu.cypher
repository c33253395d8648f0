// The dataset's user edges of one type, before ingest-edges loads that type's file again.
MATCH (:Entity)-[r:USER_EDGE]->(:Entity)
WHERE r.dataset = $dataset AND r.type = $edge_type
DELETE r
