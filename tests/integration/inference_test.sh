#!/usr/bin/env bash
# The inference workload at small scale, on an embedded cluster: both schedulers serve the
# same requests with identical outputs, and continuous batching's p99 latency is below
# static batching's at the same load (a comparison within one run, not a fixed time). Then
# a pool that starts with one server grows when its queue passes the threshold and shrinks
# back when idle, and the figures plot.
set -euo pipefail
trap 'echo "inference_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ORB_TEMP_DIR=$work/tmp ORB_BIN_DIR=$build_dir/bin
demo=$build_dir/examples/inference_demo

echo "--- continuous and static batching, the same requests"
"$demo" --loads=60 --duration-s=5 --servers=1 --csv "$work/figures.csv" | tee "$work/run.jsonl"
/usr/bin/python3 - "$work/run.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
runs = {l["scheduler"]: l for l in lines if "scheduler" in l}
assert set(runs) == {"continuous", "static"}, runs
assert runs["continuous"]["requests"] == runs["static"]["requests"] > 50, runs
same = [l["outputs_identical"] for l in lines if "outputs_identical" in l]
assert same == [True], "outputs differ between the schedulers: %s" % same
c, s = runs["continuous"]["p99_ms"], runs["static"]["p99_ms"]
assert c < s, "continuous p99 %.1f ms is not below static p99 %.1f ms" % (c, s)
print("identical outputs; p99 continuous %.1f ms < static %.1f ms" % (c, s))
PY

echo "--- the pool grows with its queue, and shrinks back once idle"
"$demo" --loads=120 --duration-s=4 --servers=1 --max-servers=2 --scale-pool --scale-up-queue=4 --idle-tail-s=4 \
  --schedulers=continuous | tee "$work/scale.jsonl"
grep -q '"event": "pool_grew", "servers": 2' "$work/scale.jsonl"
grep -q '"event": "pool_shrank", "servers": 1' "$work/scale.jsonl"
grep -q '"scheduler": "continuous".*"servers": 2, "servers_end": 1}' "$work/scale.jsonl"

echo "--- the plot"
/usr/bin/python3 "$here/../../examples/inference/plot.py" "$work/figures.csv" "$work/figures.png"
[[ $(stat -c %s "$work/figures.png") -gt 10000 ]]
echo "inference_test: PASS"
