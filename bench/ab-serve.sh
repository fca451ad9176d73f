#!/usr/bin/env bash
# Two `idem` binaries (say the last release and this tree) on one route, in
# alternating rounds on the same machine, each point on a fresh database:
# requests/s and p99 from wrk, and the B/A ratio per round.
#
#   bench/ab-serve.sh OLD_IDEM NEW_IDEM sqlite|postgres [charges|intents|claim-complete] [seconds, 10] [rounds, 3] [connections, 64]
#
# Build the old binary from its commit in a separate checkout with its own
# CARGO_TARGET_DIR (sharing one makes cargo reuse the newer artifacts).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
a=$1; b=$2; backend=$3
route=${4:-charges}; secs=${5:-10}; rounds=${6:-3}; conns=${7:-64}
pg=${IDEM_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
export IDEMPOTENCY_HMAC_KEY=${IDEMPOTENCY_HMAC_KEY:-bench-secret}
server=""; data=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; [ -n "$data" ] && rm -rf "$data"; return 0; }
trap cleanup EXIT

point() { # binary tag -> "rps p99"
  local idem=$1 tag=$2 url
  data=$(mktemp -d)
  case $backend in
    sqlite) url="sqlite://$data/idem.db" ;;
    postgres)
      PGOPTIONS="-c client_min_messages=warning" psql "$pg/postgres" -v ON_ERROR_STOP=1 -qc "drop database if exists idem_ab with (force)" -c "create database idem_ab"
      url="$pg/idem_ab" ;;
    *) echo "usage: $0 OLD NEW sqlite|postgres [charges|intents|claim-complete] [seconds] [rounds] [connections]" >&2; exit 2 ;;
  esac
  "$idem" migrate --data-dir "$data" --database-url "$url" >/dev/null 2>&1
  IDEM_TOKEN=$("$idem" tenant create bench --data-dir "$data" --database-url "$url" 2>/dev/null)
  export IDEM_TOKEN
  local port
  port=$(free_port)
  "$idem" serve --demo --data-dir "$data" --database-url "$url" --addr "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  RUN="ab$tag$$" wrk -t2 -c"$conns" -d"${secs}s" --latency -s "bench/wrk/$route.lua" "http://127.0.0.1:$port" | wrk_summary | awk '{print $1, $3}'

  kill "$server"; wait "$server" 2>/dev/null || true; server=""
  rm -rf "$data"; data=""
}

printf '%-9s %-8s %5s %5s %10s %8s %10s %8s %6s\n' backend route conns round A_rps A_p99 B_rps B_p99 B/A
for r in $(seq "$rounds"); do
  read -r ar ap < <(point "$a" "a$r")
  read -r br bp < <(point "$b" "b$r")
  printf '%-9s %-8s %5d %5d %10.0f %8.2f %10.0f %8.2f %6.2f\n' "$backend" "$route" "$conns" "$r" "$ar" "$ap" "$br" "$bp" \
    "$(python3 -c "print(round($br/$ar, 2))")"
done
