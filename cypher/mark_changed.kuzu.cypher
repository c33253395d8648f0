// Mark nodes changed (updated_at, as an ingest marks a node whose features changed), so
// the next incremental run relabels the region around them: the ends of the user's edges
// that ingest-edges added, removed or reweighted (graphstore/user_edges.py). $rows is an
// Arrow table of uids.
LOAD FROM $rows
MATCH (e:Entity {uid: uid})
SET e.updated_at = $now
