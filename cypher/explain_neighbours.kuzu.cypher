// The neighbours that drove one node's label (GraphStore.explain), strongest first, with the
// label the solvers saw on them: the given one, else the predicted one. The larger weight
// where a pair has a relationship each way, as in explain_node.kuzu.cypher.
MATCH (e:Entity {uid: $uid})-[r:SIMILAR]-(n:Entity)
WHERE n <> e
WITH n, max(r.weight) AS weight
RETURN n.key AS key, weight, n.given_label AS given_label, n.predicted_label AS predicted_label,
       coalesce(n.given_label, n.predicted_label) AS label
ORDER BY weight DESC, key ASC
LIMIT $max_rows
