// Extend the dataset's lease while $owner holds it (graphstore/neo4j_lease.py); 0 rows
// renewed: another run took it, after this one was silent for longer than the lease.
MATCH (l:GraphlabelLease {dataset: $dataset})
WHERE l.owner = $owner
SET l.expires_at = datetime() + duration({seconds: $seconds})
RETURN count(l) AS renewed
