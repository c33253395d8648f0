// Kùzu scans the Arrow table passed as $rows in one statement (LOAD FROM), where Neo4j
// takes a list parameter with UNWIND: hence one file per dialect. Only the rows that are
// nodes already come here; new ones are bulk-loaded (insert_nodes.kuzu.cypher).
// Change tracking: updated_at becomes $now for a new node, and for a stored one only
// when its content_hash (features and given label, graphstore/changes.py) differs; the
// ON MATCH SET reads the stored hash before the SET below replaces it.
LOAD FROM $rows
MERGE (e:Entity {uid: uid})
ON CREATE SET e.updated_at = $now
ON MATCH SET e.updated_at = CASE WHEN e.content_hash IS NULL OR e.content_hash <> content_hash
                                 THEN $now ELSE e.updated_at END
SET e.dataset = dataset, e.key = key, e.features = features, e.given_label = given_label,
    e.categories = categories, e.given_label_confidence = given_label_confidence, e.content_hash = content_hash
