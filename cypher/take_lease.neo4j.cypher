// Take the dataset's lease (graphstore/neo4j_lease.py) when it is free: nobody holds it,
// its time ran out (the server's clock), or its holder is $gone (a process of the caller's
// host that is gone). `taken` is written first, from its own value: such a SET takes the
// node's write lock before it reads (Neo4j Operations Manual, "Concurrent data access",
// Lost updates), so the holder is read under the lock and two runs cannot both find the
// lease free. Returns the holder either way.
MERGE (l:GraphlabelLease {dataset: $dataset})
SET l.taken = coalesce(l.taken, 0) + 1
WITH l, l.owner IS NULL OR l.owner = $owner OR l.owner = $gone OR l.expires_at < datetime() AS free
SET l += CASE WHEN free THEN {owner: $owner, holder: $holder, host: $host, pid: $pid, process_started: $started,
                              since: datetime(), expires_at: datetime() + duration({seconds: $seconds})}
              ELSE {} END
RETURN l.owner AS owner, l.holder AS holder, l.host AS host, l.pid AS pid, l.process_started AS started,
       toString(l.since) AS since
