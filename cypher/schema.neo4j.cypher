// Neo4j is schema-free: instead of Kùzu's typed tables (schema.kuzu.cypher) it gets a
// uniqueness constraint on the node key, which also gives MERGE and the write-back their
// index. ${key_properties} is (e.`dataset`, e.`key`) when a dataset property is configured,
// else e.`key`. Composite property uniqueness constraints are in Community Edition 5:
// https://neo4j.com/docs/cypher-manual/5/constraints/managing-constraints/
// Schema commands are not openCypher: tests check these statements with a strict pattern.
CREATE CONSTRAINT ${key_constraint} IF NOT EXISTS
FOR (e:${node_label}) REQUIRE ${key_properties} IS UNIQUE;
CREATE CONSTRAINT ${run_constraint} IF NOT EXISTS
FOR (r:${run_label}) REQUIRE r.run_id IS UNIQUE
;
// One lease per dataset (graphstore/neo4j_lease.py): the constraint makes two runs that
// MERGE the same dataset's lease at once meet on one node.
CREATE CONSTRAINT `graphlabel_lease_dataset` IF NOT EXISTS
FOR (l:`GraphlabelLease`) REQUIRE l.dataset IS UNIQUE
