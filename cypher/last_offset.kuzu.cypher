// The largest Entity-table offset among the dataset's nodes (null: none), where a read by
// slices of offsets ends (KuzuStore.read_export).
MATCH (e:Entity)
WHERE e.dataset = $dataset
RETURN max(offset(id(e))) AS last
