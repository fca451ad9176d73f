#!/usr/bin/env bash
# HTTP load benchmark of the /v1 API with wrk (Debian's package), side by
# side with the store called directly, for docs/PERFORMANCE.md.
#
#   bench/api-load.sh sqlite   [seconds per point, default 10]
#   bench/api-load.sh postgres [seconds]   # uses database idem_api_bench
#
# At 1, 16 and 64 connections, for POST /v1/intents (every request a new
# intent) and the guarded POST /v1/demo/charges (every request a new
# Idempotency-Key: ledger row + stored response), it prints requests/s, p50
# and p99 from wrk, the store's direct throughput for the same work at the
# same concurrency (record_bench, run just before), and their ratio; then
# GET /healthz's rate at the same concurrency (null/s) and the highest ratio
# those two rates allow on this machine (ceiling, explained below).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
backend=${1:-sqlite}
secs=${2:-10}
pg=${IDEM_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --release -q -p idem-server --bin idem
cargo build --release -q -p idem-store --example record_bench
idem=target/release/idem
direct=target/release/examples/record_bench

data=$(mktemp -d)
case $backend in
  sqlite) url="sqlite://$data/idem.db" ;;
  postgres)
    PGOPTIONS="-c client_min_messages=warning" psql "$pg/postgres" -v ON_ERROR_STOP=1 -qc "drop database if exists idem_api_bench with (force)" -c "create database idem_api_bench"
    url="$pg/idem_api_bench" ;;
  *) echo "usage: $0 sqlite|postgres [seconds]" >&2; exit 2 ;;
esac
export DATABASE_URL=$url
# On PostgreSQL idem serve needs the deployment's shared secret.
export IDEMPOTENCY_HMAC_KEY=${IDEMPOTENCY_HMAC_KEY:-bench-secret}
port=$(free_port)
"$idem" migrate --data-dir "$data" >/dev/null
export IDEM_TOKEN
IDEM_TOKEN=$("$idem" tenant create bench --data-dir "$data")
"$idem" serve --demo --data-dir "$data" --addr "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; [ -n "${KEEP_LOG:-}" ] && cp "$data/serve.log" "$KEEP_LOG"; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done


printf '%-9s %-17s %5s %10s %10s %8s %8s %6s %8s %8s %s\n' backend route conns direct/s http/s p50_ms p99_ms ratio null/s ceiling non2xx
for route in intents charges; do
  for c in 1 16 64; do
    ops=$(( c == 1 ? 5000 : 30000 ))
    flag=""; [ $route = charges ] && flag="--charges"
    d=$("$direct" --url "$url" --callers $c --ops $ops --tenant "direct-$c" $flag | python3 -c 'import json,sys; print(json.load(sys.stdin)["ops_per_s"])')
    t=$(( c < 2 ? 1 : 2 ))
    read -r rps p50 p99 bad < <(RUN="$route$c$$" wrk -t$t -c$c -d${secs}s --latency -s "bench/wrk/$route.lua" "http://127.0.0.1:$port" | wrk_summary)
    # The same connections on GET /healthz: what wrk and the HTTP stack cost
    # with no work behind them. Each request pays both that and the store's
    # work on the same 2 cores (or, at 1 connection, both latencies), so
    # http/direct cannot exceed null/(null+direct): the `ceiling` column.
    read -r null _ < <(wrk -t$t -c$c -d$(( (secs + 1) / 2 ))s --latency "http://127.0.0.1:$port/healthz" | wrk_summary)
    path=/v1/intents; [ $route = charges ] && path=/v1/demo/charges
    printf '%-9s %-17s %5d %10.0f %10.0f %8.2f %8.2f %6.2f %8.0f %8.2f %s\n' "$backend" "$path" $c "$d" "$rps" "$p50" "$p99" \
      "$(python3 -c "print(round($rps/$d, 2))")" "$null" "$(python3 -c "print(round($null/($null+$d), 2))")" "$bad"
  done
done
