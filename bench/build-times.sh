#!/usr/bin/env bash
# What a change on the money path costs in a dev build, this tree against
# OLD_REV, side by side in alternating rounds: touch the `/v1` actions
# handler (server/src/http/v1/actions.rs in a tree without api/, else
# api/src/v1/actions.rs), then
#   it       rebuild the server's HTTP test binary (cargo test -p idem-server --test it --no-run)
#   openapi  check the committed OpenAPI document (cargo test -p <its crate> --lib openapi)
# and print each one's median in seconds, the ratio new/old, and the size of
# the test binaries that link the API.
#
#   bench/build-times.sh OLD_REV [rounds, 3]
#
# The old tree is a git worktree under target/ that shares this target
# directory: its workspace crates are other units (another path), the
# registry's crates are built once for both.
set -euo pipefail
cd "$(dirname "$0")/.."
old_rev=$1; rounds=${2:-3}
here=$PWD
old="$here/target/build-times-old"
export CARGO_TARGET_DIR="$here/target"
if [ ! -d "$old" ]; then
  git worktree add --detach "$old" "$old_rev" >/dev/null
fi
git -C "$old" checkout --detach -q "$old_rev"

handler() { # tree -> the actions handler's file
  if [ -d "$1/api" ]; then echo "$1/api/src/v1/actions.rs"; else echo "$1/server/src/http/v1/actions.rs"; fi
}
api_crate() { if [ -d "$1/api" ]; then echo idem-api; else echo idem-server; fi; }

timed() { # dir, command... -> seconds on stdout
  local dir=$1; shift
  (cd "$dir" && /usr/bin/time -f %e -o /tmp/build-times.$$ "$@" >/dev/null 2>&1) || true
  cat /tmp/build-times.$$
}

run() { # tree step -> seconds
  local tree=$1 step=$2
  touch "$(handler "$tree")"
  case $step in
    it) timed "$tree" cargo test -q -p idem-server --test it --no-run ;;
    openapi) timed "$tree" cargo test -q -p "$(api_crate "$tree")" --lib openapi ;;
  esac
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# One warm build of each tree first, so every counted round is incremental.
for tree in "$old" "$here"; do
  run "$tree" it >/dev/null
  run "$tree" openapi >/dev/null
done
for step in it openapi; do
  : >"/tmp/build-times.old.$step"; : >"/tmp/build-times.new.$step"
  for _ in $(seq "$rounds"); do
    run "$old" "$step" >>"/tmp/build-times.old.$step"
    run "$here" "$step" >>"/tmp/build-times.new.$step"
  done
  o=$(median <"/tmp/build-times.old.$step"); n=$(median <"/tmp/build-times.new.$step")
  printf '%-8s old %6.1f s   new %6.1f s   new/old %.2f   (%s rounds: old %s; new %s)\n' "$step" "$o" "$n" \
    "$(echo "$n / $o" | bc -l)" "$rounds" "$(tr '\n' ' ' <"/tmp/build-times.old.$step")" "$(tr '\n' ' ' <"/tmp/build-times.new.$step")"
done
size() { # dir cargo-args... -> bytes of the test binary cargo names
  local exe
  exe=$(cd "$1" && shift && cargo test "$@" --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))/\1/p' | tail -1)
  stat -c %s "$(cd "$1" && realpath "$exe")"
}
echo "test binary linking the API (bytes): old server it $(size "$old" -p idem-server --test it)," \
  "new server it $(size "$here" -p idem-server --test it), new idem-api lib tests $(size "$here" -p idem-api --lib)"
rm -f /tmp/build-times.$$
