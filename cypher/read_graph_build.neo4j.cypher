MATCH (g:GraphBuild)
WHERE g.dataset = $dataset
RETURN g.spec AS spec, g.built_at AS built_at
