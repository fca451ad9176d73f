#!/usr/bin/env bash
# CPU per request of two idem binaries on one route (charges or intents),
# alternating rounds (the order flips each round), each on a fresh SQLite
# database:
# the server's own user+sys time (from /proc) over the requests wrk made,
# and the B/A ratio per round. Less noisy than requests/s on a shared
# machine, where wrk and the server share two cores.
#
#   bench/cpu-ab.sh OLD_IDEM NEW_IDEM charges|intents [seconds, 8] [rounds, 5] [connections, 16]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
a=$1; b=$2; route=$3; secs=${4:-8}; rounds=${5:-5}; conns=${6:-16}
export IDEMPOTENCY_HMAC_KEY=bench-secret
point() {
  local idem=$1 tag=$2 data port pid
  data=$(mktemp -d)
  "$idem" migrate --data-dir "$data" >/dev/null 2>&1
  IDEM_TOKEN=$("$idem" tenant create bench --data-dir "$data" 2>/dev/null); export IDEM_TOKEN
  port=$(free_port)
  "$idem" serve --demo --data-dir "$data" --addr "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  out=$(RUN="c$tag$$" wrk -t1 -c"$conns" -d"${secs}s" -s "bench/wrk/$route.lua" "http://127.0.0.1:$port")
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  n=$(echo "$out" | awk '/requests in/ {print $1}')
  kill $pid; wait $pid 2>/dev/null || true; rm -rf "$data"
  python3 -c "import os,sys; hz=os.sysconf('SC_CLK_TCK'); print(f'{($t1-$t0)/hz*1e6/$n:.1f} $n')"
}
printf '%-8s %5s %12s %12s %6s\n' route round A_us/req B_us/req B/A
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then read -r au an < <(point "$a" a$r); read -r bu bn < <(point "$b" b$r)
  else read -r bu bn < <(point "$b" b$r); read -r au an < <(point "$a" a$r); fi
  printf '%-8s %5d %12s %12s %6.3f\n' "$route" "$r" "$au" "$bu" "$(python3 -c "print($bu/$au)")"
done
