MATCH (c:FeatureColumns)
WHERE c.dataset = $dataset
RETURN c.columns AS columns
