// Kùzu scans the Arrow table passed as $rows in one statement (LOAD FROM), where Neo4j
// takes a list parameter with UNWIND: hence one file per dialect.
LOAD FROM $rows
MERGE (e:Entity {uid: uid})
SET e.dataset = dataset, e.key = key, e.features = features, e.given_label = label
