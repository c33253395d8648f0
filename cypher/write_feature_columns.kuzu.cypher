// The columns the dataset's features come from, by name (JSON text,
// labelling/feature_columns.py), one FeatureColumns node per dataset name.
MERGE (c:FeatureColumns {dataset: $dataset})
SET c.columns = $columns, c.recorded_at = $recorded_at
