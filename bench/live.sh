#!/usr/bin/env bash
# The live monitor at scale, for docs/PERFORMANCE.md.
#
#   bench/live.sh [intents, default 10000000] [seconds per writer run, default 15]
#
# 1. Fills a PostgreSQL database (idem_live_bench, dropped first) with the
#    given number of intents over 20 tenants and 30 days (10% redelivered),
#    one action per ten intents (0.1% uncertain, 0.1% in flight), and the
#    statistics rollups that traffic implies (minute rows for 2 days, hour
#    and day rows for 30 days).
# 2. Serves it with `idem serve` (release) and reads /live/data.json cold,
#    120 times per view (IDEM_LIVE_BENCH_READS), 0.6 s apart so the monitor's half-second shared
#    read never answers: one tenant at 1h, 24h, 7d and 30d, and the admin's
#    all-tenants view at 24h and 30d. Prints p50, p95 and max.
# 3. Runs the API benchmark's writer (wrk, 16 connections, POST
#    /v1/intents, every request a new intent) alone, then with five
#    dashboards open (five /live/events feeds on the admin's 24 h view),
#    alternating three times, and prints the throughput of each run and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000000}
secs=${2:-15}
pg=${IDEM_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --release -q -p idem-server --bin idem
idem=target/release/idem
data=$(mktemp -d)
psql_q() { PGOPTIONS="-c client_min_messages=warning" psql "$1" -v ON_ERROR_STOP=1 -qAt "${@:2}"; }
url="$pg/idem_live_bench"
export DATABASE_URL=$url
# On PostgreSQL idem serve needs the deployment's shared secret.
export IDEMPOTENCY_HMAC_KEY=${IDEMPOTENCY_HMAC_KEY:-bench-secret}
# IDEM_LIVE_BENCH_REUSE=1 keeps a database an earlier run seeded.
if [ -n "${IDEM_LIVE_BENCH_REUSE:-}" ] && psql_q "$url" -c "select 1 from intents limit 1" >/dev/null 2>&1; then
  echo "reusing idem_live_bench: $(psql_q "$url" -c "select count(*) from intents") intents" >&2
  "$idem" migrate --data-dir "$data" >/dev/null
  seed=no
else
  psql_q "$pg/postgres" -c "drop database if exists idem_live_bench with (force)" -c "create database idem_live_bench"
  "$idem" migrate --data-dir "$data" >/dev/null
  seed=yes
fi
now=$(date +%s%3N)
t0=$(date +%s)
[ $seed = yes ] && echo "seeding $n intents (this takes a few minutes)..." >&2
[ $seed = yes ] && psql_q "$url" <<SQL
insert into tenants (tenant_id, name, created_ms)
select 'bench-' || t, 'bench ' || t, 0 from generate_series(0, 19) t;
-- Retention above the 30 days the intents span, so the periodic purge
-- keeps them all (the default 7 days would delete three quarters).
insert into tenant_settings (tenant_id, intent_retention_ms, action_retention_ms, http_retention_ms)
select 'bench-' || t, 40 * 86400000::bigint, 40 * 86400000::bigint, 86400000 from generate_series(0, 19) t;
-- Intents spread evenly over 30 days; every tenth one was redelivered.
insert into intents (tenant_id, reference, action, rules_version, idem_key, payload,
    revision, deliveries, divergences, first_seen_ms, last_seen_ms)
select 'bench-' || (i % 20), 'ref-' || i, 'pix.cobranca', 1,
    md5(i::text) || md5((i + 1)::text),
    '{"chave_pix_destino":"x@example.com","cliente_id":"c","referencia_intencao":"ref-' || i || '","valor":"10000"}',
    1, case when i % 10 = 0 then 2 else 1 end, 0,
    $now - (i * (2592000000 / $n::bigint)), $now - (i * (2592000000 / $n::bigint))
from generate_series(1, $n) i;
-- One action per ten intents: 0.1% uncertain, 0.1% still holding a lease.
insert into actions (tenant_id, idem_key, action, state, fencing_token, attempts,
    lease_until_ms, started_ms, updated_ms, response)
select 'bench-' || (i % 20), md5(i::text) || md5((i + 1)::text), 'pix.cobranca',
    case when i % 1000 = 10 then 'uncertain' when i % 1000 = 20 then 'started' else 'completed' end,
    1, 1,
    case when i % 1000 = 20 then $now + 3600000 end,
    $now - (i * (2592000000 / $n::bigint)), $now - (i * (2592000000 / $n::bigint)),
    case when i % 1000 not in (10, 20) then '{"id":"ch"}' end
from generate_series(10, $n, 10) i;
-- The rollups that traffic implies, per tenant.
insert into stats_rollup (tenant_id, granularity, bucket_start_ms, action, intents,
    deliveries, redeliveries, redelivered_intents, actions_started, actions_completed,
    actions_uncertain, delay_max_ms)
select 'bench-' || t, g.name, g.start, 'pix.cobranca', g.per, g.per + g.per / 10, g.per / 10,
    g.per / 10, g.per / 10, g.per / 10, g.per / 10000, 90000
from generate_series(0, 19) t
cross join lateral (
    select 'minute' as name, ($now / 60000 - k) * 60000 as start, greatest($n / 20 / 43200, 1) as per
    from generate_series(0, 2879) k
    union all
    select 'hour', ($now / 3600000 - k) * 3600000, greatest($n / 20 / 720, 1)
    from generate_series(0, 719) k
    union all
    select 'day', ($now / 86400000 - k) * 86400000, greatest($n / 20 / 30, 1)
    from generate_series(0, 29) k
) g;
insert into stats_delay (tenant_id, granularity, bucket_start_ms, action, le_ms, count)
select tenant_id, granularity, bucket_start_ms, action, 5000, redeliveries from stats_rollup;
analyze;
SQL
[ $seed = yes ] && echo "seeded in $(( $(date +%s) - t0 )) s: $(psql_q "$url" -c "select count(*) from intents") intents, $(psql_q "$url" -c "select count(*) from actions") actions, $(psql_q "$url" -c "select count(*) from stats_rollup") rollup rows" >&2

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export IDEM_TOKEN
IDEM_TOKEN=$("$idem" tenant create "bench-writer-$$" --data-dir "$data" 2>/dev/null)
admin=bench-admin-token-of-at-least-32-characters
IDEM_ADMIN_TOKEN=$admin "$idem" serve --data-dir "$data" --addr "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
server=$!
feeds=()
trap 'kill ${feeds[@]:-} $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
base="http://127.0.0.1:$port"

# p50, p95 and max (ms) of cold reads of one view.
cold() {
  for _ in $(seq "${IDEM_LIVE_BENCH_READS:-120}"); do
    curl -fsS -o /dev/null -w '%{time_total}\n' -H "authorization: Bearer $admin" "$base/live/data.json?$1"
    sleep 0.6
  done | python3 -c '
import sys
v = sorted(float(x) * 1000 for x in sys.stdin)
print(f"p50 {v[len(v) // 2]:.1f} ms  p95 {v[int(len(v) * 0.95) - 1]:.1f} ms  max {v[-1]:.1f} ms  ({len(v)} reads)")'
}
echo
echo "== /live/data.json, cold reads, $n intents"
for view in "tenant=bench-3&window=1h" "tenant=bench-3&window=24h" "tenant=bench-3&window=7d" "tenant=bench-3&window=30d" "window=24h" "window=30d"; do
  printf '%-28s %s\n' "$view" "$(cold "$view")"
done

rps() {
  RUN="live$1$$" wrk -t2 -c16 -d"${secs}s" -s bench/wrk/intents.lua "$base" | awk '/Requests\/sec/ { print $2 }'
}
echo
echo "== writer (wrk, 16 connections, POST /v1/intents) alone and with five dashboards open"
for round in 1 2 3; do
  alone=$(rps "a$round")
  for i in 1 2 3 4 5; do
    curl -sN -H "authorization: Bearer $admin" "$base/live/events?window=24h" >/dev/null &
    feeds+=($!)
  done
  sleep 1
  with=$(rps "b$round")
  kill "${feeds[@]}" 2>/dev/null || true
  wait "${feeds[@]}" 2>/dev/null || true
  feeds=()
  echo "round $round: alone $alone req/s, with five dashboards $with req/s, ratio $(python3 -c "print(round($with / $alone, 3))")"
done
