// What holds the dataset's lease now (graphstore/neo4j_lease.py): no row when nothing
// does, or when its time ran out on the server's clock.
MATCH (l:GraphlabelLease {dataset: $dataset})
WHERE l.expires_at >= datetime()
RETURN l.holder AS holder
