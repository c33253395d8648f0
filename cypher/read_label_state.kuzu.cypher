// What changed since each node was last labelled (graphstore/changes.py): never
// labelled, or features / given label updated after labelled_at.
MATCH (e:Entity)
WHERE e.dataset = $dataset
RETURN e.key AS key,
       e.labelled_at IS NULL OR (e.updated_at IS NOT NULL AND e.updated_at > e.labelled_at) AS changed,
       e.labelled_at IS NOT NULL AS labelled,
       e.predicted_label AS predicted_label
