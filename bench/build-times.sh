#!/usr/bin/env bash
# What a change on the money path costs in a dev build, this tree against
# OLD_REV, side by side in alternating rounds: change the `/v1` actions
# handler (server/src/http/v1/actions.rs in a tree without api/, else
# api/src/v1/actions.rs: one constant added, a new value each round, taken
# out at the end), then
#   it       rebuild the server's HTTP test binary (cargo test -p idem-server --test it --no-run)
#   openapi  check the committed OpenAPI document (cargo test -p <its crate> --lib openapi)
# and print each one's median in seconds, the ratio new/old, and the size of
# the test binaries that link the API.
#
#   bench/build-times.sh OLD_REV [rounds, 3]
#
# The old tree is a git worktree under target/ with a target directory of
# its own (cargo names a workspace crate's artifacts without its path, so
# two trees in one target directory overwrite each other), seeded once
# from this tree's debug build so the registry's crates are not built again.
set -euo pipefail
cd "$(dirname "$0")/.."
old_rev=$1; rounds=${2:-3}
here=$PWD
old="$here/target/build-times-old"
old_target="$here/target/build-times-old-target"
if [ ! -d "$old" ]; then
  git worktree add --detach "$old" "$old_rev" >/dev/null
fi
git -C "$old" checkout --detach -q "$old_rev"
if [ ! -d "$old_target/debug" ]; then
  mkdir -p "$old_target"
  cp -a "$here/target/debug" "$old_target/debug"
  rm -rf "$old_target/debug/incremental"
fi
target_of() { if [ "$1" = "$old" ]; then echo "$old_target"; else echo "$here/target"; fi; }

handler() { # tree -> the actions handler's file
  if [ -d "$1/api" ]; then echo "$1/api/src/v1/actions.rs"; else echo "$1/server/src/http/v1/actions.rs"; fi
}
api_crate() { if [ -d "$1/api" ]; then echo idem-api; else echo idem-server; fi; }

timed() { # dir, command... -> seconds on stdout; a failed build stops the run
  local dir=$1; shift
  (cd "$dir" && CARGO_TARGET_DIR=$(target_of "$dir") /usr/bin/time -f %e -o /tmp/build-times.$$ "$@" >/tmp/build-times.out.$$ 2>&1) || {
    echo "build-times: '$*' failed in $dir:" >&2; tail -20 /tmp/build-times.out.$$ >&2; exit 1; }
  cat /tmp/build-times.$$
}

round=0
restore() { git -C "$old" checkout -q -- . 2>/dev/null; git -C "$here" checkout -q -- "$(handler "$here" | sed "s|^$here/||")"; }
trap restore EXIT

run() { # tree step -> seconds
  local tree=$1 step=$2 file
  file=$(handler "$tree")
  round=$((round + 1))
  sed -i '/^const BUILD_TIMES_ROUND/d' "$file"
  echo "const BUILD_TIMES_ROUND: u32 = $round$RANDOM; const _: u32 = BUILD_TIMES_ROUND;" >>"$file"
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
  local dir=$1; shift
  exe=$(cd "$dir" && CARGO_TARGET_DIR=$(target_of "$dir") cargo test "$@" --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))/\1/p' | tail -1)
  stat -c %s "$(cd "$dir" && realpath "$exe")"
}
echo "test binary linking the API (bytes): old server it $(size "$old" -p idem-server --test it)," \
  "new server it $(size "$here" -p idem-server --test it), new idem-api lib tests $(size "$here" -p idem-api --lib)"
rm -f /tmp/build-times.$$
