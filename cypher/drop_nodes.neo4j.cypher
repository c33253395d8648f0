// One batch of a dropped dataset's nodes ($keys), with every relationship they still have.
MATCH (e:${node_label})
WHERE ${e_in_dataset} AND e.${key} IN $keys
DETACH DELETE e
RETURN count(e) AS deleted
