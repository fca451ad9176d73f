#!/usr/bin/env bash
# A fresh machine's first page, measured: a new clone of this repository,
# an empty cargo home and npm cache (so every crate and package is
# downloaded again), then `scripts/serve` until http://127.0.0.1:PORT/
# answers. Prints the seconds, and build-site's own step times.
#   bench/first-page.sh [--remove-wasm-target] [PORT, default 3100]
# --remove-wasm-target also removes rustup's wasm32 target first (setup
# adds it back), as a machine that never built the site would lack it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --remove-wasm-target ]; then
  rustup target remove wasm32-unknown-unknown
  shift
fi
port=${1:-3100}
work=$(mktemp -d)
git clone -q "$PWD" "$work/idem"
mkdir -p "$work/cargo/bin"
export CARGO_HOME="$work/cargo" npm_config_cache="$work/npm"
export PATH="$work/cargo/bin:$HOME/.cargo/bin:$PATH"
cd "$work/idem"
start=$(date +%s)
scripts/serve --addr "127.0.0.1:$port" --data-dir "$work/data" >"$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
until curl -fsS -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; do
  kill -0 $server 2>/dev/null || { tail -20 "$work/serve.log"; echo "scripts/serve exited"; exit 1; }
  sleep 2
done
grep -a 'build-site' "$work/serve.log" || true
echo "first page after $(( $(date +%s) - start )) s (clone, cargo home and log under $work)"
