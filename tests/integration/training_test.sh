#!/usr/bin/env bash
# The data-parallel training example: on the embedded default with 2 ranks and on a
# 3-node `orb start` cluster with 3 ranks, an undisturbed run and a run in which a
# trainer is killed mid-way (recovered from the last checkpoint) end with the same
# weights (within 1e-5), and both match a single-process run of the same data (1e-4).
set -euo pipefail
trap 'echo "training_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build_dir=$1
example="$build_dir/examples/data_parallel_training"
orb="$build_dir/bin/orb"
export ORB_TEMP_DIR=$(mktemp -d)
trap '"$orb" stop --force >/dev/null 2>&1 || true; rm -rf "$ORB_TEMP_DIR"' EXIT

weights() { sed -n 's/^weights: //p' <<<"$1"; }
# close <a> <b> <tolerance>: every weight within the tolerance.
close() {
  awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN {
    n = split(a, x, " "); m = split(b, y, " ");
    if (n != m || n == 0) { print "weight counts differ: " n " vs " m; exit 1 }
    for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (d > tol) { print "weight " i ": " x[i] " vs " y[i]; exit 1 } }
  }'
}
check_runs() {  # check_runs <label> <args...>
  local label=$1; shift
  single=$("$example" --single-process --epochs=30)
  plain=$("$example" --epochs=30 "$@" 2>&1)
  killed=$("$example" --epochs=30 --kill-at-epoch=12 "$@" 2>&1)
  echo "--- $label"; grep -E "final accuracy|killing|restoring" <<<"$killed"
  grep -q "after 1 restart" <<<"$killed"
  grep -q "after 0 restart" <<<"$plain"
  close "$(weights "$killed")" "$(weights "$plain")" 1e-5
  close "$(weights "$killed")" "$(weights "$single")" 1e-4
}

check_runs "embedded default, 2 ranks" --ranks=2

start=$("$orb" start --head --port 0 --num-cpus 2)
address=$(sed -n 's/^  GCS address: *//p' <<<"$start")
"$orb" start --address "$address" --num-cpus 2 >/dev/null
"$orb" start --address "$address" --num-cpus 2 >/dev/null
check_runs "3-node cluster, 3 ranks" --ranks=3 --orb-address="$address"
echo "training test passed"
