// Parallel columns, as in read_nodes.neo4j.cypher (null keys filtered so that collect()
// keeps the three lists aligned). A relationship without a weight (a user's own
// relationship type) counts as weight 1.0; one that graphlabel created (marker set) without
// a weight is from a GDS build that stopped half way: `unweighted` counts them and the
// adapter refuses the graph. GDS kNN writes a pair once per direction it was found in;
// the adapter keeps one row per undirected pair.
MATCH (a:${node_label})-[r:${rel_type}]->(b:${node_label})
WHERE ${a_in_dataset} AND ${b_in_dataset} AND a <> b
  AND a.${key} IS NOT NULL AND b.${key} IS NOT NULL
RETURN collect(a.${key}) AS source,
       collect(b.${key}) AS target,
       collect(coalesce(toFloat(r.${weight}), 1.0)) AS weight,
       count(CASE WHEN r.${edge_marker} IS NOT NULL AND r.${weight} IS NULL THEN 1 END) AS unweighted
