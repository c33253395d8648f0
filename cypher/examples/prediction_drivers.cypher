// The neighbours that drove one node's prediction: strongest relationships first, with
// their given and predicted labels and whether they agree with this node's prediction.
// Parameters: $dataset, $key, $max_rows (e.g. 10).
MATCH (e:Entity)-[r:SIMILAR]-(n:Entity)
WHERE e.dataset = $dataset AND e.key = $key
WITH e, n, max(r.weight) AS weight
RETURN n.key AS neighbour,
       weight,
       n.given_label AS given_label,
       n.predicted_label AS predicted_label,
       coalesce(n.given_label, n.predicted_label) = e.predicted_label AS agrees
ORDER BY weight DESC, neighbour ASC
LIMIT $max_rows
