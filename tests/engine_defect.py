"""kuzu 0.11.3's string-column defect, reduced (README "The embedded engine"): rounds of
nodes added by COPY with a text property null, then SET; the database reopened; one more
node COPYed; the property read. Run as ``python engine_defect.py ENGINE FOLDER`` in a
process of its own (kuzu ends it with a segmentation fault); prints the counts read."""

import importlib
import sys

import pyarrow as pa

engine, folder = sys.argv[1], sys.argv[2]
module = importlib.import_module(engine)
path = f"{folder}/db"
db = module.Database(path)
conn = module.Connection(db)
conn.execute("CREATE NODE TABLE Entity(uid STRING, s STRING, PRIMARY KEY(uid))")
n = 0
for values in (["a"] * 5 + ["b"] * 5, ["c"] * 5, ["d"] * 5 + ["e"] * 5):  # as ingest then label, per dataset
    uids = [f"u{n + i}" for i in range(len(values))]
    n += len(values)
    conn.execute("COPY Entity(uid) FROM $rows", {"rows": pa.table({"uid": uids})})
    conn.execute("LOAD FROM $rows MATCH (e:Entity {uid: uid}) SET e.s = s",
                 {"rows": pa.table({"uid": uids, "s": values})})
conn.close()
db.close()
db = module.Database(path)
conn = module.Connection(db)
conn.execute("COPY Entity(uid) FROM $rows", {"rows": pa.table({"uid": [f"u{n}"]})})  # the next dataset's ingest
print(conn.execute("MATCH (e:Entity) RETURN count(e.s), count(*)").get_next(), flush=True)
