// Kùzu needs typed tables declared up front (Neo4j is schema-free and gets a key
// constraint instead, in schema.neo4j.cypher). A node's primary key is `uid`, the
// dataset name and the user's key joined by ':' (dataset names cannot hold ':').
// `features` is a BLOB of little-endian float64 (see graphstore/kuzu_store.py for why).
CREATE NODE TABLE IF NOT EXISTS Entity(
    uid STRING,
    dataset STRING,
    key STRING,
    features BLOB,
    given_label STRING,
    predicted_label STRING,
    label_confidence DOUBLE,
    label_noise BOOLEAN,
    label_run_id STRING,
    label_solver STRING,
    labelled_at TIMESTAMP,
    PRIMARY KEY(uid)
);
CREATE REL TABLE IF NOT EXISTS SIMILAR(FROM Entity TO Entity, weight DOUBLE, dataset STRING);
CREATE NODE TABLE IF NOT EXISTS LabelRun(
    run_id STRING,
    dataset STRING,
    solver STRING,
    parameters STRING,
    metrics STRING,
    timings STRING,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    n_nodes INT64,
    n_labeled INT64,
    n_flagged INT64,
    PRIMARY KEY(run_id)
);
