// Embedded store only. The Entity table's columns (the engine's table_info takes a literal,
// not a parameter): widest_row.kuzu.cypher reads two of them, which a store graphlabel did
// not make may lack.
CALL table_info('Entity') RETURN name
