// Kùzu-only: fold the write-ahead log into the database. After a bulk MERGE/SET on nodes,
// deleting relationships before a checkpoint ran 25x slower here (53 s against 2 s for
// 200k relationships, kuzu 0.11.3), so every bulk write ends with one.
CHECKPOINT
