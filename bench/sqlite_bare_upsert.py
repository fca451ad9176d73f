"""The bare-loop side of the SQLite record_intent comparison: the same
single-statement upsert, one autocommit transaction each, on the same kind
of file (WAL) and synchronous setting idem uses.

python3 bench/sqlite_bare_upsert.py FILE OPS [normal|full]
"""
import json
import sqlite3
import sys
import time

path, ops = sys.argv[1], int(sys.argv[2])
sync = sys.argv[3] if len(sys.argv) > 3 else "normal"
db = sqlite3.connect(path, isolation_level=None)
db.execute("pragma journal_mode=wal")
db.execute(f"pragma synchronous={sync}")
db.execute("pragma busy_timeout=5000")
db.execute(
    """create table if not exists intents (
    tenant_id text not null, reference text not null, action text not null,
    rules_version integer not null, idem_key text not null, payload text not null,
    revision integer not null default 1, deliveries integer not null default 1,
    divergences integer not null default 0, first_seen_ms integer not null,
    last_seen_ms integer not null, revised_ms integer,
    primary key (tenant_id, reference, action)) without rowid"""
)
SQL = """insert into intents as i
    (tenant_id, reference, action, rules_version, idem_key, payload,
     deliveries, divergences, first_seen_ms, last_seen_ms)
values (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?8)
on conflict (tenant_id, reference, action) do update set
    deliveries = i.deliveries + excluded.deliveries,
    divergences = i.divergences
        + case when i.payload = excluded.payload then 0 else excluded.deliveries end,
    last_seen_ms = case when i.last_seen_ms > excluded.last_seen_ms
        then i.last_seen_ms else excluded.last_seen_ms end
returning rules_version, idem_key, payload, revision, deliveries, divergences,
    first_seen_ms, last_seen_ms"""
payload = json.dumps({"valor": "18000", "referencia_intencao": "x"})
run = time.time_ns()
start = time.perf_counter()
for n in range(ops):
    db.execute(SQL, ("bare", f"r{run}-{n}", "pix.cobranca", 1, "k" * 64, payload, 1, 1790000000000)).fetchall()
secs = time.perf_counter() - start
print(json.dumps({"ops": ops, "seconds": round(secs, 3), "ops_per_s": round(ops / secs)}))
