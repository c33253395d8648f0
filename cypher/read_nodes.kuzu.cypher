// The dataset's nodes with their offset in the Entity table, which read_edges
// returns for the endpoints: the export joins the two on integers, not on 13M key strings
// (1.8 s against 6.7 s for 6.7M relationships, kuzu 0.11.3).
MATCH (e:Entity)
WHERE e.dataset = $dataset
RETURN offset(id(e)) AS node, e.key AS key, e.given_label AS label, e.categories AS categories,
       e.given_label_confidence AS label_confidence
