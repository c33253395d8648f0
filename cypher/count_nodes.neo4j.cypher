MATCH (e:${node_label})
WHERE ${e_in_dataset}
RETURN count(e) AS nodes
