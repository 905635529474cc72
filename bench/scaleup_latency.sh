#!/usr/bin/env bash
# Scale-up latency on the fake Kubernetes API (tests/k8s), whose kubelet runs each pod's
# command as a local process: a head of 1 CPU, a cpu_worker type of 2 CPUs, and one task
# of 2 CPUs that only a new node can run. Prints one JSON line per step, from the task's
# submission to its start, cold (no worker node), cold for a job that prestarts a worker
# on each node (`--orb-prestart-workers=1`: the new node starts it as it joins), and then
# with `warm_pool: 1` (an idle node kept ready):
#   submitted -> launch decided  (the autoscaler's round that saw the demand; its log)
#   -> pod created               (the pod's creationTimestamp: Kubernetes keeps seconds)
#   -> pod running               (its container's startedAt: seconds)
#   -> raylet joined             (the node's start_time_ms in the GCS)
#   -> worker started            (the task's worker process's start, from /proc)
#   -> task running              (the task's own clock)
# Every step is measured from submission. Steps a warm node skips are absent.
#   bench/scaleup_latency.sh BUILD_DIR [RUNS]
set -euo pipefail
BUILD=$(cd "$1" && pwd)
RUNS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../tests/lib/wait.sh"
source "$HERE/../tests/lib/fake_k8s.sh"
PY=/usr/bin/python3
work=$(mktemp -d /tmp/orb-scaleup-XXXXXX)
export ORB_TEMP_DIR=$work/root
mkdir -p "$ORB_TEMP_DIR" "$work/state"
fake_pid=""
trap 'stop_fake_k8s "$BUILD" "$work"' EXIT
fail() {
  echo "scaleup_latency: $*" >&2
  tail -20 "$ORB_TEMP_DIR"/session_latest/logs/autoscaler.log >&2 2>/dev/null || true
  exit 1
}

start_fake_k8s "$work" || fail "the fake API server did not start"
k() { timeout 60 kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" --request-timeout 20s "$@"; }
head_port=$(free_port)
gcs="127.0.0.1:$head_port"

# write_config WARM_POOL
write_config() {
  cat >"$work/cluster.yaml" <<EOF
cluster_name: scaleup
idle_timeout_s: 5
update_interval_s: 0.5
head_port: $head_port
provider: {type: kubernetes, namespace: default, kubeconfig: $work/kubeconfig}
head_node_type: head
available_node_types:
  head:
    resources: {CPU: 1}
    pod_template: &pod
      spec:
        containers: [{name: orb, image: "orb:latest", command: ["$BUILD/bin/orb"]}]
  cpu_worker:
    resources: {CPU: 2}
    min_workers: 0
    max_workers: 4
    warm_pool: $1
    pod_template: *pod
EOF
}
alive_workers() {
  "$BUILD/bin/orb" list nodes --format json 2>/dev/null |
    "$PY" -c 'import json,sys; print(sum(1 for n in json.load(sys.stdin) if n["state"]=="ALIVE" and "cpu_worker" in str(n["labels"])))'
}
no_worker_pods() { [[ $(alive_workers) == 0 ]]; }
one_warm_node() { [[ $(alive_workers) -ge 1 ]]; }
head_up() { [[ -f $ORB_TEMP_DIR/session_latest/logs/autoscaler.log ]] && "$BUILD/bin/orb" list nodes >/dev/null 2>&1; }

# measure MODE [DRIVER_FLAG]: one task, then the breakdown as JSON lines.
measure() {
  local mode=$1 log="$ORB_TEMP_DIR/session_latest/logs/autoscaler.log"
  local before
  before=$(wc -l <"$log")
  timeout 120 "$BUILD/tests/autoscale_driver" --orb-address="$gcs" ${2:-} tasks 1 0.2 2 >"$work/task.json" || fail "the task failed"
  tail -n +"$((before + 1))" "$log" >"$work/decisions.log"
  k get pods -o json >"$work/pods.json"
  "$BUILD/bin/orb" list nodes --format json >"$work/nodes.json"
  "$PY" - "$mode" "$work" <<'PYEOF'
import calendar, datetime, json, re, sys, time
mode, work = sys.argv[1], sys.argv[2]
task = json.load(open(work + "/task.json"))
t0 = task["submitted_unix"]
node_id = task["nodes"][0]
steps = {}
for line in open(work + "/decisions.log"):
    m = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\].*autoscaler: launch \d+ x cpu_worker .* as (\S+)", line)
    if m and "launch_decided" not in steps:
        steps["launch_decided"] = time.mktime(time.strptime(m.group(1)[:19], "%Y-%m-%d %H:%M:%S")) + float("0." + m.group(1)[20:])
        launch = m.group(2)
nodes = {n["node_id"]: n for n in json.load(open(work + "/nodes.json"))}
node = nodes[node_id]
labels = node["labels"] if isinstance(node["labels"], dict) else json.loads(node["labels"])
pod_name = labels.get("orb.io/provider-node-id", "")
def k8s_time(text):
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
joined = int(node["start_time_ms"]) / 1000
if joined >= t0:  # a node that joined after the submission: its pod was made for it
    for pod in json.load(open(work + "/pods.json"))["items"]:
        if pod["metadata"]["name"] != pod_name:
            continue
        steps["pod_created"] = k8s_time(pod["metadata"]["creationTimestamp"])
        for cs in pod["status"].get("containerStatuses", []):
            if "running" in cs.get("state", {}):
                steps["pod_running"] = k8s_time(cs["state"]["running"]["startedAt"])
    steps["raylet_joined"] = joined
worker_started = t0 + task["worker_starts_s"][0]
if worker_started >= t0:  # started for this task, not kept from earlier work
    steps["worker_started"] = worker_started
steps["task_running"] = t0 + task["starts_s"][0]
if "raylet_joined" not in steps:
    steps.pop("launch_decided", None)  # a warm node ran it: that launch refilled the pool
previous = t0
for step in ("launch_decided", "pod_created", "pod_running", "raylet_joined", "worker_started", "task_running"):
    if step not in steps:
        continue
    line = {"metric": "scale_up_seconds", "mode": mode, "step": step, "unit": "s since submission"}
    if step.startswith("pod_"):
        # Kubernetes keeps whole seconds: the step lies within the second it names.
        line["resolution_s"] = 1
        steps[step] = min(max(steps[step], previous), steps.get("raylet_joined", steps[step]))
    line["value"] = round(steps[step] - t0, 3)
    previous = steps[step]
    print(json.dumps(line))
PYEOF
}

write_config 0
timeout 120 "$BUILD/bin/orb" up "$work/cluster.yaml" >/dev/null || fail "orb up"
wait_for 60 "the head" head_up
for run in $(seq "$RUNS"); do
  wait_for 120 "worker nodes to go" no_worker_pods
  measure cold
done
# A job that prestarts a worker on each node: the new node starts it as it joins,
# before the task's lease reaches it.
for run in $(seq "$RUNS"); do
  wait_for 120 "worker nodes to go" no_worker_pods
  measure cold_prestarted --orb-prestart-workers=1
done
# The same cluster with a warm pool of one node: the autoscaler picks the change up
# from the config file it was started with, so start again.
timeout 60 "$BUILD/bin/orb" down "$work/cluster.yaml" >/dev/null || fail "orb down"
write_config 1
timeout 120 "$BUILD/bin/orb" up "$work/cluster.yaml" >/dev/null || fail "orb up (warm)"
wait_for 60 "the head" head_up
for run in $(seq "$RUNS"); do
  wait_for 120 "a warm node" one_warm_node
  sleep 1  # the head's raylet hears of it by gossip
  measure warm
  sleep 6  # the used node is idle again; the pool refills
done
