// Why a node got its label: how much weight its neighbours give each class, a neighbour
// counting with its given label, else its predicted one; a class's share is its weight over
// the sum of the weight column (the node's weighted degree). This is the weighted vote a
// harmonic (label propagation) solution averages, each neighbour's scores rounded to its
// label. A pair with a relationship each way counts once, with the larger weight, as the
// solvers read the graph. `graphlabel explain KEY --dataset NAME` prints the shares with the
// strongest neighbours (prediction_drivers.cypher).
// Parameters: $dataset, $key.
MATCH (e:Entity)-[r:SIMILAR]-(n:Entity)
WHERE e.dataset = $dataset AND e.key = $key AND n <> e
WITH n, max(r.weight) AS weight
RETURN coalesce(n.given_label, n.predicted_label) AS label, count(n) AS neighbours, sum(weight) AS class_weight
ORDER BY class_weight DESC, label ASC
