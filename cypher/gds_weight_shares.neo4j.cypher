// Neo4j only (GDS). How many of a dataset's weights on the relationships GDS kNN wrote lie
// within $flat of 1 and of 0, and the lowest (1: every weight is 1), counted where the
// weights are rather than read back: a built graph whose Gaussian weights say nothing is
// said to the run, as the local builder says it (similarity.shares_problem).
MATCH (a:${node_label})-[r:${rel_type}]->(:${node_label})
WHERE ${a_in_dataset} AND r.${edge_marker} IS NOT NULL
RETURN count(r) AS n,
       count(CASE WHEN r.${weight} > 1.0 - $flat THEN 1 END) AS near_one,
       count(CASE WHEN r.${weight} < $flat THEN 1 END) AS near_zero,
       min(r.${weight}) AS lowest
