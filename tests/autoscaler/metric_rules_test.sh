#!/usr/bin/env bash
# The autoscaler's metric rules against a real Prometheus server (Debian's prometheus)
# scraping a stand-in for the DCGM exporter whose GPU utilisation the test sets, on a
# cluster brought up by `orb up` with the local provider (nodes are raylet processes).
# The autoscaler's clock runs 60 times faster (ORB_AUTOSCALER_CLOCK_SPEEDUP), so:
#   85% for 5 minutes (5 s) adds a gpu_worker node (and not before);
#   0% for 30 minutes (30 s) scales gpu_worker in to min_workers (0), although the
#   demand-driven idle_timeout (10 hours) would keep it.
#   metric_rules_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/wait.sh"
PY=/usr/bin/python3
if ! command -v prometheus >/dev/null; then
  echo "SKIP: prometheus is not installed (Debian package prometheus; make deps installs it)"
  exit 77
fi
work=$(mktemp -d /tmp/orb-metric-rules-XXXXXX)
export ORB_TEMP_DIR=$work/root
export ORB_AUTOSCALER_CLOCK_SPEEDUP=60
mkdir -p "$ORB_TEMP_DIR"
pids=()
cleanup() {
  set +e
  [[ -f $work/cluster.yaml ]] && timeout 60 "$BUILD/bin/orb" down "$work/cluster.yaml" >/dev/null 2>&1
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  timeout 20 "$BUILD/bin/orb" stop >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "$ORB_TEMP_DIR/session_latest/logs/autoscaler.log"; }
fail() {
  echo "FAIL: $*" >&2
  echo "--- autoscaler log (tail)"; tail -30 "$(log)" 2>/dev/null || true
  echo "--- prometheus log (tail)"; tail -10 "$work/prometheus.log" 2>/dev/null || true
  exit 1
}

"$PY" "$HERE/gpu_exporter.py" --port-file "$work/exporter.port" --node-type gpu_worker &
pids+=($!)
for _ in $(seq 100); do [[ -s $work/exporter.port ]] && break; sleep 0.1; done
exporter="127.0.0.1:$(cat "$work/exporter.port")"
set_util() { curl -sf -X POST "http://$exporter/set?value=$1" || fail "cannot set the exporter's value"; }

prom_port=$(free_port)
cat >"$work/prometheus.yml" <<EOF2
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: dcgm
    static_configs: [{targets: ["$exporter"]}]
EOF2
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
prom="http://127.0.0.1:$prom_port"
query="avg by (node_type) (DCGM_FI_DEV_GPU_UTIL)"
seen() {  # the utilisation Prometheus answers for gpu_worker
  curl -sf -G "$prom/api/v1/query" --data-urlencode "query=$query" |
    "$PY" -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'
}
prom_sees() { [[ $(seen 2>/dev/null) == "$1" ]]; }
set_util 0
wait_for 60 "Prometheus to scrape the exporter" prom_sees 0

cat >"$work/cluster.yaml" <<EOF2
cluster_name: rules
head_port: 0
update_interval_s: 0.5
idle_timeout_minutes: 600
provider: {type: local}
head_node_type: head
available_node_types:
  head: {resources: {CPU: 1}}
  gpu_worker:
    resources: {CPU: 1, GPU: 1}
    min_workers: 0
    max_workers: 2
metric_rules:
  prometheus: {url: "$prom", query: "$query", type_label: node_type}
  scale_out: [{node_type: gpu_worker, utilisation_above: 80, for_s: 300, add_nodes: 1}]
  scale_in: [{node_type: gpu_worker, utilisation_below: 0, for_s: 1800}]
EOF2
timeout 120 "$BUILD/bin/orb" up "$work/cluster.yaml" || fail "orb up"
gcs=$(cat "$ORB_TEMP_DIR/session_latest/address")
gpu_nodes() {  # alive nodes with a GPU
  "$BUILD/bin/orb" status --address "$gcs" 2>/dev/null | awk '/^ [0-9.]+\/[0-9.]+ GPU$/ {split($1, a, "/"); print int(a[2])}' | head -1
}
nodes_with_gpu() { local n; n=$(gpu_nodes); echo "${n:-0}"; }
has_gpu_nodes() { [[ $(nodes_with_gpu) == "$1" ]]; }

echo "== GPU utilisation 85%: 5 minutes (5 s) adds a node"
set_util 85
wait_for 30 "Prometheus to see 85" prom_sees 85
sleep 2  # 2 minutes on the autoscaler's clock: too early
[[ $(nodes_with_gpu) == 0 ]] || fail "a node was added before the utilisation held for 5 minutes"
wait_for 60 "a gpu_worker node" has_gpu_nodes 1
grep -q "scale out gpu_worker to 1 nodes: utilisation 85% above 80% for 300 s" "$(log)" || fail "no scale-out decision logged"

echo "== GPU utilisation 0%: 30 minutes (30 s) scales in to min_workers"
set_util 0
wait_for 30 "Prometheus to see 0" prom_sees 0
wait_for 120 "gpu_worker nodes to be scaled in" has_gpu_nodes 0
grep -q "scale in gpu_worker to min_workers: utilisation 0% at or below 0% for 1800 s" "$(log)" ||
  fail "no scale-in decision logged"
"$BUILD/bin/orb" status --address "$gcs" | sed -n '/Autoscaler/,$p'

echo "== orb down"
timeout 60 "$BUILD/bin/orb" down "$work/cluster.yaml" || fail "orb down"
if "$BUILD/bin/orb" status --address "$gcs" >/dev/null 2>&1; then fail "the cluster still answers after orb down"; fi
if pgrep -f "orb_autoscaler.*$ORB_TEMP_DIR" >/dev/null; then fail "the autoscaler outlived orb down"; fi
echo "PASS"
