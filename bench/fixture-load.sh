#!/usr/bin/env bash
# The Idempotency-Key layer's own cost: the conformance fixture's POST /echo
# behind the layer (every request a new key: one lock write, one stored
# response) against the same handler unguarded (POST /echo/unguarded), in
# one run, alternating, at the same concurrency. Prints requests/s, p50 and
# p99 of each and the ratio guarded/unguarded.
#
#   bench/fixture-load.sh sqlite|postgres [seconds per point, default 10] [connections, default 64]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
backend=${1:-sqlite}
secs=${2:-10}
conns=${3:-64}
pg=${IDEM_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
# IDEM_BIN runs another build (say, the commit before a change) instead.
[ -n "${IDEM_BIN:-}" ] || cargo build --release -q -p idem-server --bin idem
idem=${IDEM_BIN:-target/release/idem}
data=$(mktemp -d)
case $backend in
  sqlite) url="sqlite://$data/idem.db" ;;
  postgres)
    PGOPTIONS="-c client_min_messages=warning" psql "$pg/postgres" -v ON_ERROR_STOP=1 -qc "drop database if exists idem_fixture_bench with (force)" -c "create database idem_fixture_bench"
    url="$pg/idem_fixture_bench" ;;
  *) echo "usage: $0 sqlite|postgres [seconds] [connections]" >&2; exit 2 ;;
esac
export DATABASE_URL=$url IDEMPOTENCY_HMAC_KEY=${IDEMPOTENCY_HMAC_KEY:-bench-secret}
port=$(free_port)
# The production log level: idem reads IDEM_LOG (default info).
"$idem" serve --conformance-fixture --data-dir "$data" --addr "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done

point() { # path run -> "rps p50 p99"
  PATH_ECHO=$1 RUN=$2 wrk -t2 -c"$conns" -d"${secs}s" --latency -s bench/wrk/echo.lua "http://127.0.0.1:$port" | wrk_summary

}

echo "backend=$backend connections=$conns seconds=$secs"
printf '%-10s %9s %8s %8s %7s\n' round route req/s p50_ms p99_ms
for round in 1 2 3; do
  read -r u_rps u_p50 u_p99 u_bad <<<"$(point /echo/unguarded "u$round")"
  read -r g_rps g_p50 g_p99 g_bad <<<"$(point /echo "g$round")"
  printf '%-10s %9s %8s %8s %7s\n' "$round" unguarded "$u_rps" "$u_p50" "$u_p99"
  printf '%-10s %9s %8s %8s %7s\n' "$round" guarded "$g_rps" "$g_p50" "$g_p99"
  python3 -c "print(f'           ratio guarded/unguarded: {$g_rps/$u_rps:.2f}  (non-2xx: $u_bad / $g_bad)')"
done
