#!/usr/bin/env bash
# Server render of the dashboard's pages, measured with wrk (Debian's
# package) against the release server on the embedded default, side by side
# with /healthz (the same server's floor: routing, HTTP and loopback, no
# rendering) in one run. Budget: the calculator's p50 under 10 ms.
#
#   bench/render.sh [seconds per page, default 10] [connections, default 1]
#   IDEM_BENCH_BASELINE=/path/to/older/idem bench/render.sh 5 1
#
# With IDEM_BENCH_BASELINE, an earlier build serves beside this one and the
# pages both understand are measured on both, interleaved (build it from a
# worktree: `git worktree add /tmp/old <rev>` and `CARGO_TARGET_DIR=...
# cargo build --release -p idem-server` there).
#
# It also prints the release wasm's size, raw and gzipped (budget: 1 MB and
# 300 KB), when scripts/build-site has produced it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
conns=${2:-1}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --release -q -p idem-server --bin idem
# Starts `idem serve` from binary $1 on a free port; sets $url to its base
# URL. (Not run in a subshell: the cleanup must know every server.)
start() {
  local bin=$1 dir port
  dir=$(mktemp -d)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  LEPTOS_OUTPUT_NAME=idem LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_PKG_DIR=pkg \
    "$bin" serve --data-dir "$dir" --addr "127.0.0.1:$port" >"$dir/serve.log" 2>&1 &
  pids+=($!)
  dirs+=("$dir")
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  url="http://127.0.0.1:$port"
}
pids=()
dirs=()
trap 'kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; rm -rf "${dirs[@]}"' EXIT
start target/release/idem
base=$url
# Side by side with an earlier build, when one is given (IDEM_BENCH_BASELINE
# is its `idem` binary): the pages both understand, interleaved.
baseline=${IDEM_BENCH_BASELINE:-}
if [ -n "$baseline" ]; then
  start "$baseline"
  old=$url
fi
save() {
  local b=$1 url
  url=$(curl -fs -o /dev/null -w '%{redirect_url}' -X POST --data 'q=v%3D1%26d%3D0.5&name=bench' "$b/s")
  echo "${url#"$b"}"
}
saved=$(save "$base")

printf '%-48s %10s %10s %10s %10s\n' page 'req/s' p50 p90 p99
run() {
  local label=$1 url=$2 out
  out=$(wrk -t1 -c"$conns" -d"${secs}s" --latency "$url")
  local rps p50 p90 p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p90=$(awk '$1=="90%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  printf '%-48s %10s %10s %10s %10s\n' "$label" "$rps" "$p50" "$p90" "$p99"
}
edited="/?v=1&c=45000&pi=15&po=75&u=1m&d=0.5&ms=50&ac=180&oc=12.5&cr=2&cur=USD&fx=0.18&lang=en-US"
contract="/?v=2&cs=40&cl=1.5&pi=3&pca=0.3&po=15&px=5.33&dcs=80&u=1m&pc=USD&pd=2026-11-30&ms=50&ac=180&oc=12.5&cr=2"
# Interleaved, so drift on this shared machine hits both sides alike.
for round in 1 2; do
  run "/healthz (floor) #$round" "$base/healthz"
  run "/ calculator, reference #$round" "$base/"
  [ -n "$baseline" ] && run "  baseline: / calculator, reference #$round" "$old/"
  run "/?… calculator, v1 link edited, English #$round" "$base$edited"
  [ -n "$baseline" ] && run "  baseline: the same v1 link #$round" "$old$edited"
  run "/?v=2… USD contract, cache, risk #$round" "$base$contract"
  [ -n "$baseline" ] && run "  baseline: the same contract #$round" "$old$contract"
  run "$saved saved scenario #$round" "$base$saved"
  run "/compare three scenarios #$round" "$base/compare?s=v%3D1&s=v%3D1%26d%3D0.5&s=${saved#/s/}"
  run "/compare two links #$round" "$base/compare?s=v%3D1&s=v%3D1%26d%3D0.5"
  [ -n "$baseline" ] && run "  baseline: the same comparison #$round" "$old/compare?s=v%3D1&s=v%3D1%26d%3D0.5"
  run "/charts/loss.svg reference #$round" "$base/charts/loss.svg?v=2"
  [ -n "$baseline" ] && run "  baseline: the same chart #$round" "$old/charts/loss.svg?v=2"
  run "/charts/tornado.svg USD contract #$round" "$base/charts/tornado.svg${contract#/}"
  run "/charts/loss.svg?format=png (1280 px) #$round" "$base/charts/loss.svg?v=2&format=png"
  run "/charts/figures (what typing fetches) #$round" "$base/charts/figures?v=2&d=6"
  run "/live/charts/deliveries.svg #$round" "$base/live/charts/deliveries.svg?window=24h"
  run "/prices?q=claude (model search) #$round" "$base/prices?q=claude"
done

wasm=target/site/pkg/idem.wasm
if [ -f "$wasm" ]; then
  raw=$(stat -c %s "$wasm")
  gz=$(gzip -9 -c "$wasm" | wc -c)
  printf '\nrelease wasm: %d bytes (%.0f KB), gzipped %d bytes (%.0f KB)\n' "$raw" "$((raw))e-3" "$gz" "$((gz))e-3"
fi
