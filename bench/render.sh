#!/usr/bin/env bash
# Server render of the dashboard's pages, measured with wrk (Debian's
# package) against the release server on the embedded default, side by side
# with /healthz (the same server's floor: routing, HTTP and loopback, no
# rendering) in one run. Budget: the calculator's p50 under 10 ms.
#
#   bench/render.sh [seconds per page, default 10] [connections, default 1]
#
# It also prints the release wasm's size, raw and gzipped (budget: 1 MB and
# 300 KB), when `cargo leptos build --release` has produced it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
conns=${2:-1}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --release -q -p idem-server --bin idem
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
LEPTOS_OUTPUT_NAME=idem LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_PKG_DIR=pkg \
  target/release/idem serve --data-dir "$data" --addr "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
base="http://127.0.0.1:$port"
saved=$(curl -fs -o /dev/null -w '%{redirect_url}' -X POST --data 'q=v%3D1%26d%3D0.5&name=bench' "$base/s")
saved=${saved#"$base"}

printf '%-44s %10s %10s %10s %10s\n' page 'req/s' p50 p90 p99
run() {
  local label=$1 path=$2 out
  out=$(wrk -t1 -c"$conns" -d"${secs}s" --latency "$base$path")
  local rps p50 p90 p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p90=$(awk '$1=="90%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  printf '%-44s %10s %10s %10s %10s\n' "$label" "$rps" "$p50" "$p90" "$p99"
}
# Interleaved, so drift on this shared machine hits both sides alike.
for round in 1 2; do
  run "/healthz (floor) #$round" /healthz
  run "/ calculator, reference #$round" /
  run "/?… calculator, edited, English #$round" "/?v=1&c=45000&pi=15&po=75&u=1m&d=0.5&ms=50&ac=180&oc=12.5&cr=2&cur=USD&fx=0.18&lang=en-US"
  run "$saved saved scenario #$round" "$saved"
  run "/compare three scenarios #$round" "/compare?s=v%3D1&s=v%3D1%26d%3D0.5&s=${saved#/s/}"
done

wasm=target/site/pkg/idem.wasm
if [ -f "$wasm" ]; then
  raw=$(stat -c %s "$wasm")
  gz=$(gzip -9 -c "$wasm" | wc -c)
  printf '\nrelease wasm: %d bytes (%.0f KB), gzipped %d bytes (%.0f KB)\n' "$raw" "$((raw))e-3" "$gz" "$((gz))e-3"
fi
