// What retention orders a dataset's runs by (graphstore.base.runs_to_prune).
MATCH (r:LabelRun)
WHERE r.dataset = $dataset
RETURN r.run_id AS run_id, r.status AS status, r.started_at AS started_at
