#!/usr/bin/env bash
# The production topology's cost, side by side in one run, for
# docs/DEPLOY.md: POST /v1/demo/charges (every request a new
# Idempotency-Key: a guarded charge, ledger row and stored response) at 64
# connections with wrk,
#   1. one instance on this machine's PostgreSQL (127.0.0.1:5432), direct;
#   2. one instance on the Patroni cluster through HAProxy (scripts/ha-cluster:
#      a synchronous standby must confirm each commit);
#   3. two instances on the cluster behind HAProxy in HTTP mode.
# Prints requests/s, p50 and p99 of each and the ratios to the first.
# Needs root (the cluster runs its members as postgres).
#
#   bench/ha.sh [seconds per point, default 15] [connections, default 64]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
secs=${1:-15}
conns=${2:-64}
pg=${IDEM_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --release -q -p idem-server --bin idem
idem=$PWD/target/release/idem
export IDEMPOTENCY_HMAC_KEY=bench-secret
export IDEM_HA_DIR=${IDEM_HA_DIR:-/tmp/idem-ha-bench}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  scripts/ha-cluster stop 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "bench/ha: starting the cluster" >&2
cluster=$(scripts/ha-cluster start)
fresh_db() { # admin URL base, database name
  PGOPTIONS="-c client_min_messages=warning" psql "$1/postgres" -v ON_ERROR_STOP=1 -qc "drop database if exists $2 with (force)" -c "create database $2"
}
fresh_db "$pg" idem_ha_bench
fresh_db "${cluster%/postgres}" idem_ha_bench

serve() { # url data-dir -> prints "pid port"
  local url=$1 dir=$2 port
  port=$(free_port)
  mkdir -p "$dir"
  "$idem" serve --demo --no-relay --database-url "$url" --data-dir "$dir" --addr "127.0.0.1:$port" >"$dir/serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  echo "$pid $port"
}

point() { # label base-url token
  local label=$1 base=$2
  read -r rps p50 p99 bad < <(IDEM_TOKEN=$3 RUN="$label$$" wrk -t2 -c"$conns" -d"${secs}s" --latency -s bench/wrk/charges.lua "$base" | wrk_summary)
  echo "$label $rps $p50 $p99 $bad"
}

results=()
# 1. Direct.
url="$pg/idem_ha_bench"
"$idem" migrate --database-url "$url" --data-dir "$work/d" >/dev/null
token=$("$idem" tenant create bench --database-url "$url" --data-dir "$work/d")
read -r pid port < <(serve "$url" "$work/d")
pids+=("$pid")
results+=("$(point direct "http://127.0.0.1:$port" "$token")")
kill "$pid"

# 2. One instance through HAProxy on the cluster.
url="${cluster%/postgres}/idem_ha_bench"
"$idem" migrate --database-url "$url" --data-dir "$work/c" >/dev/null
token=$("$idem" tenant create bench --database-url "$url" --data-dir "$work/c")
read -r pid1 port1 < <(serve "$url" "$work/c1")
pids+=("$pid1")
results+=("$(point cluster-1 "http://127.0.0.1:$port1" "$token")")

# 3. Two instances behind HAProxy in HTTP mode.
read -r pid2 port2 < <(serve "$url" "$work/c2")
pids+=("$pid2")
lb=$(free_port)
cat >"$work/lb.cfg" <<EOF
defaults
  mode http
  timeout connect 1s
  timeout client 60s
  timeout server 60s
frontend idem
  bind 127.0.0.1:$lb
  default_backend instances
backend instances
  balance roundrobin
  option httpchk GET /readyz
  server i1 127.0.0.1:$port1 check
  server i2 127.0.0.1:$port2 check
EOF
haproxy -db -f "$work/lb.cfg" >"$work/lb.log" 2>&1 &
pids+=("$!")
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$lb/readyz" >/dev/null && break; sleep 0.1; done
results+=("$(point cluster-2 "http://127.0.0.1:$lb" "$token")")

printf '%-10s %8s %8s %8s %8s %9s %s\n' setup req/s p50_ms p99_ms vs_direct p99_ratio non2xx
base_rps=""; base_p99=""
for r in "${results[@]}"; do
  read -r label rps p50 p99 bad <<<"$r"
  [ -z "$base_rps" ] && { base_rps=$rps; base_p99=$p99; }
  python3 - "$label" "$rps" "$p50" "$p99" "$bad" "$base_rps" "$base_p99" <<'EOF'
import sys
label, rps, p50, p99, bad, brps, bp99 = sys.argv[1:]
print(f"{label:<10} {float(rps):8.0f} {float(p50):8.2f} {float(p99):8.2f} {float(rps)/float(brps):9.2f} {float(p99)/float(bp99):9.2f} {bad}")
EOF
done
