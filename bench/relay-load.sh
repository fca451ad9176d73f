#!/usr/bin/env bash
# The outbox relay's benchmarks, for docs/PERFORMANCE.md.
#
#   bench/relay-load.sh sqlite   [seconds per point, default 10] [rounds, default 3]
#   bench/relay-load.sh postgres [seconds] [rounds]   # database idem_relay_load
#   IDEM_BIN=/old/idem RELAY_BENCH_BIN=/old/relay_bench bench/relay-load.sh sqlite 8 4
#
# 1. Relay throughput: relay_bench queues 20,000 outbox messages for one
#    endpoint whose receiver answers 204 at once, and times the relay
#    delivering them all.
# 2. POST /v1/demo/charges at 64 connections (wrk, every request a new
#    Idempotency-Key; each charge writes `charge.created` to the outbox) with
#    the relay delivering every event to a local receiver, and with
#    `--no-relay`, in alternating rounds on the same database (odd rounds
#    relay first, even rounds relay second): requests/s, p99, and the
#    with/without ratio per round. Each relay round starts once the relay
#    has delivered the backlog the rounds before it left (every
#    `--no-relay` round leaves its events queued), so it measures the
#    relay keeping up with the charges, not draining an old queue.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
backend=${1:-sqlite}
secs=${2:-10}
rounds=${3:-3}
pg=${IDEM_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
# IDEM_BIN / RELAY_BENCH_BIN run other builds (say, the commit before a
# change, built in its own checkout) instead of this tree's.
if [ -z "${IDEM_BIN:-}" ]; then
  cargo build --release -q -p idem-server --bin idem --example relay_bench
fi
idem=${IDEM_BIN:-target/release/idem}
bench=${RELAY_BENCH_BIN:-target/release/examples/relay_bench}

data=$(mktemp -d)
case $backend in
  sqlite) url="sqlite://$data/idem.db"; turl="sqlite://$data/throughput.db" ;;
  postgres)
    for db in idem_relay_load idem_relay_throughput; do
      PGOPTIONS="-c client_min_messages=warning" psql "$pg/postgres" -v ON_ERROR_STOP=1 -qc "drop database if exists $db with (force)" -c "create database $db"
    done
    url="$pg/idem_relay_load"; turl="$pg/idem_relay_throughput" ;;
  *) echo "usage: $0 sqlite|postgres [seconds] [rounds]" >&2; exit 2 ;;
esac
export DATABASE_URL=$url
export IDEMPOTENCY_HMAC_KEY=${IDEMPOTENCY_HMAC_KEY:-bench-secret}
server=""; receiver=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  [ -n "$receiver" ] && kill -INT "$receiver" 2>/dev/null && wait "$receiver" 2>/dev/null
  rm -rf "$data"
}
trap cleanup EXIT

echo "relay throughput ($backend):"
"$bench" throughput --url "$turl" --messages 20000

"$idem" migrate --data-dir "$data" >/dev/null
export IDEM_TOKEN
IDEM_TOKEN=$("$idem" tenant create bench --data-dir "$data")
rport=$(free_port)
"$bench" receive --addr "127.0.0.1:$rport" >"$data/receiver.out" 2>"$data/receiver.log" &
receiver=$!
"$idem" webhook add bench "http://127.0.0.1:$rport/hook" --allow-private-webhooks --events charge.created --data-dir "$data" >/dev/null 2>&1

port=$(free_port)
start() {
  "$idem" serve --demo --data-dir "$data" --addr "127.0.0.1:$port" "$@" >>"$data/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && return; sleep 0.1; done
  echo "idem serve did not start" >&2; exit 1
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; server=""; }
# Waits until no delivery is pending or retrying (at most 5 minutes).
drained() {
  for _ in $(seq 3000); do
    left=$(curl -fs "http://127.0.0.1:$port/metrics" | awk '/^idem_webhook_deliveries\{state="(pending|retrying)"\}/ {n += $2} END {print n + 0}')
    [ "$left" = 0 ] && return
    sleep 0.1
  done
  echo "the relay did not drain its backlog in 5 minutes" >&2; exit 1
}
# -> "rps p99 non2xx"; and to $data/cpu, CPU µs per charge of the whole
# machine, of idem (API and relay), of the receiver and of PostgreSQL.
run() {
  local a0 i0 r0 p0 out
  a0=$(cpu_ms ALL); i0=$(cpu_ms idem); r0=$(cpu_ms relay_bench); p0=$(cpu_ms postgres)
  out=$(RUN="relay$1$$" wrk -t2 -c64 -d${secs}s --latency -s bench/wrk/charges.lua "http://127.0.0.1:$port" | wrk_summary | awk '{print $1, $3, $4}')
  python3 -c "n=${out%% *}*$secs; print(' '.join(f'{v*1000/n:.0f}' for v in ($(cpu_ms ALL)-$a0, $(cpu_ms idem)-$i0, $(cpu_ms relay_bench)-$r0, $(cpu_ms postgres)-$p0)))" >"$data/cpu"
  echo "$out"
}
printf '%-9s %5s %14s %10s %12s %10s %8s   %s\n' backend round relay_on_rps p99_ms relay_off_rps p99_ms ratio \
  "cpu µs/charge on (all idem receiver pg) | off"
on() { start; drained; read -r on_rps on_p99 on_bad < <(run "on$r"); on_cpu=$(cat "$data/cpu"); stop; }
off() { start --no-relay; read -r off_rps off_p99 off_bad < <(run "off$r"); off_cpu=$(cat "$data/cpu"); stop; }
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then on; off; else off; on; fi
  printf '%-9s %5d %14.0f %10.2f %12.0f %10.2f %8.2f   %s | %s\n' "$backend" "$r" "$on_rps" "$on_p99" "$off_rps" "$off_p99" \
    "$(python3 -c "print(round($on_rps/$off_rps, 2))")" "$on_cpu" "$off_cpu"
  [ "$on_bad$off_bad" = "00" ] || echo "non-2xx answers: relay on $on_bad, off $off_bad" >&2
done
