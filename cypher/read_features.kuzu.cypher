// The features of the dataset's nodes whose Entity-table offset lies in [$first, $last),
// with that offset: read a slice at a time, so neither Kùzu's result nor its Arrow copy
// holds every node's features at once.
MATCH (e:Entity)
WHERE e.dataset = $dataset AND offset(id(e)) >= $first AND offset(id(e)) < $last
RETURN offset(id(e)) AS node, e.features AS features
