// The user's own relationships of type $edge_type between the dataset's nodes, read only
// (graphstore/user_edges.py). The type and the weight property are values here, not
// identifiers in the template: type(r) and r[$weight_property] take them as parameters,
// at the price of looking at every relationship of the dataset's nodes. Parallel columns
// as in read_edges.neo4j.cypher; each weight is wrapped in a one-element list so that a
// missing one (null) keeps its place (collect() drops nulls) and is reported, not read as 1.
MATCH (a:${node_label})-[r]->(b:${node_label})
WHERE type(r) = $edge_type AND ${a_in_dataset} AND ${b_in_dataset} AND a <> b
  AND a.${key} IS NOT NULL AND b.${key} IS NOT NULL
RETURN collect(a.${key}) AS source,
       collect(b.${key}) AS target,
       collect([CASE WHEN $weight_property IS NULL THEN 1.0 ELSE r[$weight_property] END]) AS weight
