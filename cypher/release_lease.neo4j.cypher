// Let the dataset's lease go, if $owner still holds it (graphstore/neo4j_lease.py).
MATCH (l:GraphlabelLease {dataset: $dataset})
WHERE l.owner = $owner
DELETE l
RETURN count(*) AS released
