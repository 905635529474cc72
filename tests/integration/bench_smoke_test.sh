#!/usr/bin/env bash
# The benchmarks `make bench` runs still run and print what docs/performance.md says
# they print: JSON lines, each targeted figure with its target and the limit measured in
# the same run, right results from 20,000 queued tasks, the daemons' memory, and the
# orb/Dask ratios. Short runs (--quick, fewer tasks): figures are printed, never judged.
set -euo pipefail
trap 'echo "bench_smoke_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build_dir=$1
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
export ORB_TEMP_DIR=$(mktemp -d)
out=$(mktemp -d)
trap '"$build_dir/bin/orb" stop --force >/dev/null 2>&1 || true; rm -rf "$ORB_TEMP_DIR" "$out"' EXIT

# check <file> <python expression over `f`, a dict of metric -> list of lines>
check() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
f = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        d = json.loads(line)
        if "metric" in d:
            f.setdefault(d["metric"], []).append(d)
ok = eval(sys.argv[2])
if not ok:
    print("not true of", sys.argv[1] + ":", sys.argv[2]); print(open(sys.argv[1]).read()); sys.exit(1)
PY
}

"$build_dir/bin/orb_scheduler_benchmark" > "$out/scheduler"
check "$out/scheduler" 'all(l["target"] == 100000 and l["placed"] == 50000 for l in f["scheduling_decisions_per_second"] if l["nodes"] == 10000) and len(f["scheduling_decisions_per_second"]) == 8'

"$build_dir/bin/orb_microbenchmark" --quick > "$out/micro"
check "$out/micro" 'f["single_client_tasks_sync"][0]["limit_of"] == "unix_socket_round_trips" and f["single_client_tasks_sync"][0]["limit"] > 0'
check "$out/micro" 'abs(f["single_client_put_gigabytes"][0]["target"] - 0.8 * f["memcpy_prefaulted_gigabytes"][0]["value"]) < 0.01'
check "$out/micro" 'f["gcs_server_rss_mib_before"][0]["value"] > 0 and f["raylet_rss_mib_after"][0]["value"] > 0'

"$build_dir/bin/orb_queue_benchmark" --tasks=20000 > "$out/queue"
check "$out/queue" 'len(f["queued_tasks_submit_rate"]) == 10 and f["driver_memory_per_queued_task"][0]["target"] == 1024 and f["queued_tasks_drained"][0]["value"] > 0'

PYTHONPATH="$build_dir/python" ORB_BIN_DIR="$build_dir/bin" /usr/bin/python3 "$source_dir/bench/dask_compare.py" --quick \
  > "$out/dask" 2>/dev/null
check "$out/dask" 'all(m + "_orb_over_dask" in f and f[m + "_orb_over_dask"][0]["value"] > 0 for m in ("tasks_sync", "tasks_async", "actor_calls_sync", "actor_calls_async", "put_gigabytes", "get_calls"))'
echo "bench_smoke_test: ok"
