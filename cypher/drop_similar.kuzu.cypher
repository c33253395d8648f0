// Kùzu-only: every similarity relationship at once, when they all belong to the dataset
// being rebuilt (count_other_edges); KuzuStore.ensure_schema creates the table again.
DROP TABLE SIMILAR
