// The parameters the dataset's similarity relationships were built with (JSON text).
MERGE (g:GraphBuild {dataset: $dataset})
SET g.spec = $spec, g.built_at = $built_at
