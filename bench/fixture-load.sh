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

point() { # path run -> "rps p50 p99 non2xx"; CPU µs per request to $data/cpu
  local all0 idem0 pg0 out rps
  all0=$(cpu_ms ALL); idem0=$(cpu_ms idem); pg0=$(cpu_ms postgres)
  out=$(PATH_ECHO=$1 RUN=$2 wrk -t2 -c"$conns" -d"${secs}s" --latency -s bench/wrk/echo.lua "http://127.0.0.1:$port" | wrk_summary)
  rps=${out%% *}
  python3 -c "n=$rps*$secs; print(f'{($(cpu_ms ALL)-$all0)*1000/n:.0f} {($(cpu_ms idem)-$idem0)*1000/n:.0f} {($(cpu_ms postgres)-$pg0)*1000/n:.0f}')" >"$data/cpu"
  echo "$out"
}

echo "backend=$backend connections=$conns seconds=$secs"
# cpu_us: CPU per request (µs, both cores) of the whole machine, of idem
# and of PostgreSQL's processes (0 on SQLite, which runs inside idem).
printf '%-10s %9s %8s %8s %7s %11s %9s %9s\n' round route req/s p50_ms p99_ms cpu_us_all idem_us pg_us
for round in 1 2 3; do
  read -r u_rps u_p50 u_p99 u_bad <<<"$(point /echo/unguarded "u$round")"
  read -r u_all u_idem u_pg <"$data/cpu"
  read -r g_rps g_p50 g_p99 g_bad <<<"$(point /echo "g$round")"
  read -r g_all g_idem g_pg <"$data/cpu"
  printf '%-10s %9s %8s %8s %7s %11s %9s %9s\n' "$round" unguarded "$u_rps" "$u_p50" "$u_p99" "$u_all" "$u_idem" "$u_pg"
  printf '%-10s %9s %8s %8s %7s %11s %9s %9s\n' "$round" guarded "$g_rps" "$g_p50" "$g_p99" "$g_all" "$g_idem" "$g_pg"
  python3 -c "print(f'           ratio guarded/unguarded: {$g_rps/$u_rps:.2f}  (non-2xx: $u_bad / $g_bad)')"
done
