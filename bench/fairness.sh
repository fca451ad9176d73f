#!/usr/bin/env bash
# Another tenant's write latency under the attacks of issue 63, two `idem`
# binaries (say the last release and this tree) side by side in one run,
# each on a fresh database: bench/fairness.py's table for each.
#
#   bench/fairness.sh OLD_IDEM NEW_IDEM sqlite|postgres [writes, 40]
#
# Build the old binary from its commit in a separate checkout with its own
# CARGO_TARGET_DIR (sharing one makes cargo reuse the newer artifacts).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
a=$1; b=$2; backend=$3; writes=${4:-40}
pg=${IDEM_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
export IDEMPOTENCY_HMAC_KEY=${IDEMPOTENCY_HMAC_KEY:-bench-secret}
server=""; data=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; [ -n "$data" ] && rm -rf "$data"; return 0; }
trap cleanup EXIT

point() { # binary tag
  local idem=$1 tag=$2 url port noisy other
  data=$(mktemp -d)
  case $backend in
    sqlite) url="sqlite://$data/idem.db" ;;
    postgres)
      PGOPTIONS="-c client_min_messages=warning" psql "$pg/postgres" -v ON_ERROR_STOP=1 -qc "drop database if exists idem_fair with (force)" -c "create database idem_fair"
      url="$pg/idem_fair" ;;
    *) echo "usage: $0 OLD NEW sqlite|postgres [writes]" >&2; exit 2 ;;
  esac
  "$idem" migrate --data-dir "$data" --database-url "$url" >/dev/null 2>&1
  noisy=$("$idem" tenant create noisy --data-dir "$data" --database-url "$url" 2>/dev/null)
  other=$("$idem" tenant create other --data-dir "$data" --database-url "$url" 2>/dev/null)
  port=$(free_port)
  "$idem" serve --data-dir "$data" --database-url "$url" --addr "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  echo "== $tag ($backend): $idem"
  python3 bench/fairness.py "$port" "$noisy" "$other" "$writes"
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
  rm -rf "$data"; data=""
}

point "$a" before
point "$b" after
