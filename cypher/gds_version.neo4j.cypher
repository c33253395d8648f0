// Neo4j only. The GDS plugin's version: the check before any graph build (an unknown
// function means the plugin is not installed).
RETURN gds.version() AS version
