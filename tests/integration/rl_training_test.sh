#!/usr/bin/env bash
# The reinforcement-learning workflow at small scale, on the embedded default and on a
# two-node CLI cluster: training improves the return, a run that loses a rollout worker
# and a learner mid-way rebuilds them from the last checkpoint and ends with exactly the
# policy of an undisturbed run (also with a parameter server in place of AllReduce), the
# checkpoint is written and the groups released, and the learning curves plot.
set -euo pipefail
trap 'echo "rl_training_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
export ORB_TEMP_DIR=$work/tmp ORB_BIN_DIR=$build_dir/bin
orb=$build_dir/bin/orb
cleanup() { "$orb" stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
rl=$build_dir/examples/rl_training

echo "--- undisturbed, embedded cluster"
"$rl" --iterations=40 --csv "$work/clean.csv" --checkpoint "$work/clean.ckpt" 2>"$work/clean.err" | tee "$work/clean.out"
/usr/bin/python3 - "$work/clean.csv" <<'PY'
import csv, sys
returns = [float(r["mean_return"]) for r in csv.DictReader(open(sys.argv[1]))]
assert len(returns) == 40, len(returns)
first, last = sum(returns[:5]) / 5, sum(returns[-5:]) / 5
assert last > 2 * first, "the return did not improve: %.1f then %.1f" % (first, last)
print("mean return %.1f over the first 5 iterations, %.1f over the last 5" % (first, last))
PY
[[ $(wc -l <"$work/clean.ckpt") == 31 ]]  # the optimizer's state: policy, moments, step
grep -q '"stage": "released", "rebuilds": 0' "$work/clean.out"

echo "--- a rollout worker and a learner killed at iteration 15"
"$rl" --iterations=40 --kill-at-iteration=15 --csv "$work/killed.csv" 2>"$work/killed.err" | tee "$work/killed.out"
grep -q '"stage": "rebuild", "iteration": 15, "resume_from": 15' "$work/killed.out"
grep -q '"stage": "released", "rebuilds": 1' "$work/killed.out"
[[ $(grep '^policy:' "$work/killed.out") == $(grep '^policy:' "$work/clean.out") ]]
cmp "$work/clean.csv" "$work/killed.csv"

echo "--- a parameter server instead of AllReduce, the same faults: the same policy"
"$rl" --iterations=40 --sync=parameter-server --kill-at-iteration=15 2>"$work/ps.err" | tee "$work/ps.out"
grep -q '"stage": "released", "rebuilds": 1' "$work/ps.out"
[[ $(grep '^policy:' "$work/ps.out") == $(grep '^policy:' "$work/clean.out") ]]

echo "--- on a two-node CLI cluster"
"$orb" start --head --port 0 --num-cpus 4 --num-gpus 2 >/dev/null
address=$(cat "$ORB_TEMP_DIR/session_latest/address")
"$orb" start --address "$address" --num-cpus 4 >/dev/null
"$rl" --orb-address="$address" --iterations=40 --kill-at-iteration=5 2>"$work/cli.err" | tee "$work/cli.out"
grep -q '"stage": "rebuild"' "$work/cli.out"
[[ $(grep '^policy:' "$work/cli.out") == $(grep '^policy:' "$work/clean.out") ]]
"$orb" stop >/dev/null

echo "--- the plot"
/usr/bin/python3 "$here/../../examples/rl_training/plot.py" "$work/curve.png" "undisturbed=$work/clean.csv" \
  "killed at 15=$work/killed.csv"
[[ $(stat -c %s "$work/curve.png") -gt 10000 ]]
echo "rl_training_test: PASS"
