// Embedded store only (graphlabel copy-store). The bytes of the widest features and the
// widest per-class scores any node holds (BLOBs of float64): what a whole-store export
// and import need their page pool sized by (kuzu_store.buffer_pool_bytes), as a write of
// such rows does.
MATCH (e:Entity)
RETURN coalesce(max(octet_length(e.features)), 0) + coalesce(max(octet_length(e.label_scores)), 0) AS bytes
