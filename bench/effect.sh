#!/usr/bin/env bash
# One guarded effect's latency against two /healthz round trips, for two
# `idem` binaries side by side in one interleaved run (server/examples/
# effect_bench.rs says what each kind is).
#
#   bench/effect.sh OLD_IDEM NEW_IDEM sqlite|postgres [rounds, 2000]
#
# Pass the same binary twice to measure one build. Build the old binary from
# its commit in a separate checkout with its own CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
a=$1; b=$2; backend=$3; n=${4:-2000}
pg=${IDEM_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
export IDEMPOTENCY_HMAC_KEY=${IDEMPOTENCY_HMAC_KEY:-bench-secret}
cargo build --release -q -p idem-server --example effect_bench
pids=(); dirs=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "${dirs[@]}"; return 0; }
trap cleanup EXIT
targets=()
for side in a b; do
  idem=${!side}
  data=$(mktemp -d); dirs+=("$data")
  case $backend in
    sqlite) url="sqlite://$data/idem.db" ;;
    postgres)
      PGOPTIONS="-c client_min_messages=warning" psql "$pg/postgres" -v ON_ERROR_STOP=1 -qc "drop database if exists idem_effect_$side with (force)" -c "create database idem_effect_$side"
      url="$pg/idem_effect_$side" ;;
    *) echo "usage: $0 OLD NEW sqlite|postgres [rounds]" >&2; exit 2 ;;
  esac
  "$idem" migrate --data-dir "$data" --database-url "$url" >/dev/null 2>&1
  token=$("$idem" tenant create bench --data-dir "$data" --database-url "$url" 2>/dev/null)
  port=$(free_port)
  "$idem" serve --data-dir "$data" --database-url "$url" --addr "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  targets+=(--target "$side=http://127.0.0.1:$port=$token")
done
# `bare`: the storage an effect needs at its least, on the bench's own
# connection to the same engine (a database of its own).
case $backend in
  sqlite) bare=$(mktemp -d); dirs+=("$bare"); store="sqlite://$bare/bare.db" ;;
  postgres)
    PGOPTIONS="-c client_min_messages=warning" psql "$pg/postgres" -v ON_ERROR_STOP=1 -qc "drop database if exists idem_effect_bare with (force)" -c "create database idem_effect_bare"
    store="$pg/idem_effect_bare" ;;
esac
if [ "$backend" = postgres ]; then
  # A production database has been analyzed: autovacuum does it within a
  # minute of the first 50 writes. A fresh one has not, and each pooled
  # connection caches a generic plan made while the table was empty, which
  # for a key lookup can be a scan of the tenant's whole `actions_updated`
  # index (docs/PERFORMANCE.md). Write some rows, analyze, then measure.
  target/release/examples/effect_bench --n 200 "${targets[@]}" >/dev/null
  for side in a b; do psql "$pg/idem_effect_$side" -qc analyze; done
fi
echo "backend $backend; a = $a, b = $b; $n rounds"
target/release/examples/effect_bench --n "$n" --store "$store" "${targets[@]}"
