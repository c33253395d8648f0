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
    label_noise_score DOUBLE,
    label_run_id STRING,
    label_solver STRING,
    labelled_at TIMESTAMP,
    updated_at TIMESTAMP,
    content_hash INT64,
    PRIMARY KEY(uid)
);
// Change tracking (graphstore/changes.py) for stores created before it existed.
ALTER TABLE Entity ADD IF NOT EXISTS updated_at TIMESTAMP;
ALTER TABLE Entity ADD IF NOT EXISTS content_hash INT64;
// Noise scores (issue 15) for stores created before them.
ALTER TABLE Entity ADD IF NOT EXISTS label_noise_score DOUBLE;
// Categorical features (text, one per --categorical column) and the trust in the given
// label (issue 17); null on nodes ingested without them.
ALTER TABLE Entity ADD IF NOT EXISTS categories STRING[];
ALTER TABLE Entity ADD IF NOT EXISTS given_label_confidence DOUBLE;
CREATE REL TABLE IF NOT EXISTS SIMILAR(FROM Entity TO Entity, weight DOUBLE, dataset STRING);
// The user's own edges (graphlabel ingest-edges), read only by labelling: `type` names the
// edge type a file was loaded as (--graph edges:TYPE), `weight` is null when it had none.
CREATE REL TABLE IF NOT EXISTS USER_EDGE(FROM Entity TO Entity, type STRING, weight DOUBLE, dataset STRING);
// The parameters each dataset's similarity relationships were built with, as JSON text
// (graph, k, metric, weights, the Gaussian sigma used), for edges added incrementally.
CREATE NODE TABLE IF NOT EXISTS GraphBuild(
    dataset STRING,
    spec STRING,
    built_at TIMESTAMP,
    PRIMARY KEY(dataset)
);
// The columns each dataset's features come from, by name, as JSON text
// (labelling/feature_columns.py): later files are matched to them by name.
CREATE NODE TABLE IF NOT EXISTS FeatureColumns(
    dataset STRING,
    columns STRING,
    recorded_at TIMESTAMP,
    PRIMARY KEY(dataset)
);
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
    status STRING,
    versions STRING,
    error STRING,
    PRIMARY KEY(run_id)
);
// Stores created before a LabelRun column existed get it here (CREATE ... IF NOT EXISTS
// leaves an existing table as it was). Runs written before statuses existed were runs
// that completed: hence that default for them.
ALTER TABLE LabelRun ADD IF NOT EXISTS status STRING DEFAULT 'completed';
ALTER TABLE LabelRun ADD IF NOT EXISTS versions STRING;
ALTER TABLE LabelRun ADD IF NOT EXISTS error STRING;
// Where a run runs and its last sign of life (labelling/liveness.py).
ALTER TABLE LabelRun ADD IF NOT EXISTS process STRING;
ALTER TABLE LabelRun ADD IF NOT EXISTS heartbeat_at TIMESTAMP;
// Per-class scores (issue 17): label_scores is a BLOB of little-endian float64, one per
// class of the node's run (LabelRun.classes), as features are, because every run re-sets
// it: on 100k nodes with 1M relationships, 1.9 s as a BLOB against 147 s as DOUBLE[]
// (python -m bench scores_write, bench/results/scores_write.md).
ALTER TABLE Entity ADD IF NOT EXISTS label_scores BLOB;
ALTER TABLE Entity ADD IF NOT EXISTS label_runner_up STRING;
ALTER TABLE Entity ADD IF NOT EXISTS label_margin DOUBLE;
// The given label a reviewer vouched for (graphlabel accept, or correct's new label):
// review lists the node no more while its given label is this one.
ALTER TABLE Entity ADD IF NOT EXISTS label_accepted STRING;
// The class order of the run's label_scores, as JSON text.
ALTER TABLE LabelRun ADD IF NOT EXISTS classes STRING;
// One node per review decision (graphlabel accept / correct), linked to its entity.
CREATE NODE TABLE IF NOT EXISTS LabelDecision(
    decision_id STRING,
    dataset STRING,
    key STRING,
    decision STRING,
    previous_label STRING,
    label STRING,
    reviewer STRING,
    decided_at TIMESTAMP,
    predicted_label STRING,
    label_noise_score DOUBLE,
    label_run_id STRING,
    PRIMARY KEY(decision_id)
);
CREATE REL TABLE IF NOT EXISTS REVIEWS(FROM LabelDecision TO Entity);
