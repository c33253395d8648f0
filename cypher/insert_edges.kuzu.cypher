// Bulk load of the relationships from the Arrow table $edges (columns from, to, weight,
// dataset); Neo4j's GDS writes them itself or takes UNWIND batches.
COPY SIMILAR FROM $edges
