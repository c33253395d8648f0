// The parameters the dataset's similarity relationships were built with (JSON text),
// one GraphBuild node per dataset name.
MERGE (g:GraphBuild {dataset: $dataset})
SET g.spec = $spec, g.built_at = $built_at
