#!/usr/bin/env bash
# The autoscaler with the Kubernetes provider, end to end: `orb up` against a fake API
# server whose kubelet runs each pod's command as a local process (so every raylet
# really joins), with the real kubectl looking on.
#   1. a head of 1 CPU and a worker type of 2 CPUs (min 0, max 4): 12 one-second tasks
#      of 1 CPU make worker pods, the tasks run on them, the pods go after idle_timeout;
#      then 4 tasks of 2 CPUs that sleep 3 s run at once, one on each of the 4 new pods
#      (queued work follows the nodes that join); objects made on worker pods are
#      read after the pods were scaled down (moved first); 50 instant nested tasks
#      start no more workers on a node than it has CPUs; a task killed for memory with
#      memory_growth 4 ends on a node of the big_memory type, brought up for its retry;
#      a pod whose Secret is missing shows CreateContainerConfigError in `orb status`
#      the autoscaler's log and the dashboard's autoscaler view, and its task runs once
#      the Secret is created;
#   2. a STRICT_SPREAD group of 3 bundles on the one-node cluster brings up 2 nodes;
#      `orb logs --pod` prints a pod's container log and its node's orb log files;
#   3. an actor needing GPU 1 brings up a node of the GPU type, and so does a CPU task
#      whose label selector only that type's labels match;
#   4. with faults (every third create's reply lost after the pod was made, 500s on
#      creates and lists, dropped watches) the pods are exactly those the autoscaler
#      launched: none doubled, none leaked, all gone after idle_timeout;
#   5. `orb down` deletes every pod.
#   k8s_autoscaler_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib/wait.sh"
source "$HERE/../lib/fake_k8s.sh"
PY=/usr/bin/python3
work=$(mktemp -d /tmp/orb-k8s-test-XXXXXX)
export ORB_TEMP_DIR=$work/root
mkdir -p "$ORB_TEMP_DIR" "$work/state"
fake_pid=""
trap 'stop_fake_k8s "$BUILD" "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- fake API server log (tail)"; tail -30 "$work/fake.log" 2>/dev/null || true
  if grep -q "Traceback" "$work/fake.log" 2>/dev/null; then
    echo "--- fake API server exceptions"; grep -B2 -A20 "Traceback" "$work/fake.log" | head -80
  fi
  echo "--- pods"; k get pods -L orb.io/node-type 2>&1 || true
  echo "--- autoscaler log (tail)"; tail -40 "$ORB_TEMP_DIR"/session_latest/logs/autoscaler.log 2>/dev/null || true
  exit 1
}
step() { echo; echo "== $*"; }

# --- the fake API server and its kubelet
start_fake_k8s "$work" || fail "the fake API server did not start"
k() { timeout 60 kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" --request-timeout 20s "$@"; }
# kubectl while faults are injected: it meets the 500s too, so it tries again.
kr() {
  local i out
  for i in 1 2 3 4 5 6; do
    out=$(k "$@") && { printf '%s\n' "$out"; return 0; }
    sleep 0.3
  done
  return 1
}
# Pods of a node type that are not being deleted.
count() {
  k get pods -l "orb.io/node-type=$1" -o json |
    "$PY" -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["items"] if not p["metadata"].get("deletionTimestamp")))'
}
# All pods of the cluster, deleting ones included.
count_all() { k get pods -l orb.io/cluster=k8stest -o json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))'; }
workers_gone() {
  [[ $(count cpu_worker) == 0 && $(count gpu_worker) == 0 && $(count big_memory) == 0 && $(count needs_secret) == 0 ]]
}

head_port=$(free_port)
cat >"$work/cluster.yaml" <<EOF2
cluster_name: k8stest
idle_timeout_s: 8
update_interval_s: 0.5
head_port: $head_port
provider:
  type: kubernetes
  namespace: default
  kubeconfig: $work/kubeconfig
head_node_type: head
available_node_types:
  head:
    resources: {CPU: 1, memory: 536870912}
    pod_template: &pod
      spec:
        containers: [{name: orb, image: "orb:latest", command: ["$BUILD/bin/orb"]}]
  cpu_worker:
    resources: {CPU: 2, memory: 1073741824}
    min_workers: 0
    max_workers: 4
    pod_template: *pod
  big_memory:
    resources: {CPU: 2, memory: 4294967296}
    min_workers: 0
    max_workers: 1
    pod_template: *pod
  needs_secret:  # GPUs: only work that asks for its label brings it up (GPU work prefers gpu_worker)
    resources: {CPU: 2, GPU: 2}
    labels: {secret: needed}
    min_workers: 0
    max_workers: 1
    pod_template:
      spec:
        containers:
        - name: orb
          image: "orb:latest"
          command: ["$BUILD/bin/orb"]
          env: [{name: MODEL_KEY, valueFrom: {secretKeyRef: {name: model-key, key: key}}}]
  gpu_worker:
    resources: {CPU: 2, GPU: 1}
    labels: {accelerator: h200}
    min_workers: 0
    max_workers: 1
    pod_template: *pod
EOF2
gcs="127.0.0.1:$head_port"
driver="$BUILD/tests/autoscale_driver"

step "orb up: the head pod"
timeout 120 "$BUILD/bin/orb" up "$work/cluster.yaml" || fail "orb up"
k get pods -L orb.io/node-type,orb.io/node-kind
[[ $(count head) == 1 && $(count cpu_worker) == 0 ]] || fail "after up: want only the head pod"

step "12 one-second tasks of 1 CPU on a head of 1 CPU"
timeout 180 "$driver" --orb-address="$gcs" tasks 12 1 >"$work/tasks.json" &
driver_pid=$!
max_workers=0
while kill -0 "$driver_pid" 2>/dev/null; do
  n=$(count cpu_worker)
  ((n > max_workers)) && max_workers=$n && k get pods -L orb.io/node-type
  sleep 0.5
done
wait "$driver_pid" || fail "the tasks failed"
cat "$work/tasks.json"
nodes=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["nodes"]))' "$work/tasks.json")
((nodes >= 2)) || fail "the tasks ran on $nodes node(s): worker pods did not take any"
((max_workers >= 1 && max_workers <= 4)) || fail "$max_workers cpu_worker pods at most (want 1..4)"
echo "tasks ran on $nodes nodes; $max_workers worker pods at most"
wait_for 90 "idle worker pods to be deleted" workers_gone
k get pods -L orb.io/node-type

step "4 tasks of 2 CPUs that sleep 3 s on a head of 1 CPU: 4 pods, the tasks at once"
timeout 180 "$driver" --orb-address="$gcs" tasks 4 3 2 >"$work/wide.json" || fail "the 2-CPU tasks failed"
cat "$work/wide.json"
k get pods -L orb.io/node-type
"$PY" - "$work/wide.json" <<'PYEOF' || fail "the 4 tasks did not run at once on 4 new nodes"
import json, sys
r = json.load(open(sys.argv[1]))
print("makespan %.1f s, last node joined at %.1f s, task starts %s" % (
    r["makespan_s"], r["last_join_s"], ", ".join("%.1f" % s for s in sorted(r["starts_s"]))))
assert len(r["nodes"]) == 4, "the 4 tasks ran on %d node(s), want 4" % len(r["nodes"])
# Pods start, then the tasks take one task's time (1.5x for worker start-up and noise).
bound = r["last_join_s"] + 1.5 * 3
assert r["makespan_s"] <= bound, "makespan %.1f s > %.1f s" % (r["makespan_s"], bound)
PYEOF
wait_for 90 "idle worker pods to be deleted" workers_gone

step "objects made on worker pods outlive the pods: scale-down moves them first"
timeout 240 "$driver" --orb-address="$gcs" keep-objects 4 8 >"$work/keep.json" || fail "objects were lost when their nodes were scaled down"
cat "$work/keep.json"
grep "object(s) .* to other nodes before leaving" "$ORB_TEMP_DIR"/session_latest/logs/autoscaler.log ||
  fail "the autoscaler's log does not say the objects moved"
wait_for 90 "idle worker pods to be deleted" workers_gone

step "50 instant nested tasks from one task: no node starts more workers for them than it has CPUs"
timeout 180 "$driver" --orb-address="$gcs" nested 50 >"$work/nested.json" &
nested_pid=$!
nested_pods=0
while kill -0 "$nested_pid" 2>/dev/null; do
  n=$(count cpu_worker)
  ((n > nested_pods)) && nested_pods=$n
  sleep 0.3
done
wait "$nested_pid" || fail "the nested tasks failed"
cat "$work/nested.json"
echo "cpu_worker pods while they ran: $nested_pods at most"
# The head has 1 CPU (lent by the waiting outer task), a worker pod 2: no node starts
# more workers for them than it has CPUs.
"$PY" - "$work/nested.json" "$nested_pods" <<'PYEOF' || fail "more workers than CPUs started for the nested tasks"
import json, sys
r = json.load(open(sys.argv[1]))
assert all(p <= 2 for p in r["worker_pids_by_node"].values()), r
if int(sys.argv[2]) == 0:
    assert r["worker_pids"] <= 1, "the 1-CPU head ran them in %d worker processes" % r["worker_pids"]
PYEOF

step "a task killed for memory, with memory_growth 4: 256 MiB, 1 GiB, then 4 GiB on a big_memory node"
timeout 240 "$driver" --orb-address="$gcs" memory-growth 1536 256 4 >"$work/growth.json" || fail "the growing task failed"
cat "$work/growth.json"
k get pods -L orb.io/node-type
if grep -q skipped "$work/growth.json"; then
  echo "SKIPPED: workers are not in cgroups here, so no task is killed for passing its memory request"
else
  "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["memory_bytes"] == 4294967296, r' "$work/growth.json" ||
    fail "the task did not finish on a big_memory node"
fi
wait_for 90 "idle worker pods to be deleted" workers_gone

step "a STRICT_SPREAD group of 3 bundles on a one-node cluster"
timeout 180 "$driver" --orb-address="$gcs" strict-spread 3 || fail "the STRICT_SPREAD group"
k get pods -L orb.io/node-type
[[ $(count cpu_worker) == 2 ]] || fail "want exactly 2 new nodes for the group, have $(count cpu_worker)"
# A pod's container log beside its node's orb logs, by pod name and by node ID.
pod=$(k get pods -l orb.io/node-type=cpu_worker -o jsonpath='{.items[0].metadata.name}')
"$BUILD/bin/orb" logs --pod "$pod" --config "$work/cluster.yaml" --tail 50 >"$work/podlog.txt" || fail "orb logs --pod $pod"
head -5 "$work/podlog.txt"
grep -q "==> pod $pod: its container's log" "$work/podlog.txt" || fail "no container log for $pod"
[[ $(sed -n '2p' "$work/podlog.txt") != "" ]] || fail "the container log of $pod is empty"
grep -q "orb's log files" "$work/podlog.txt" && grep -q "raylet" "$work/podlog.txt" || fail "no orb logs beside the pod's"
node=$("$BUILD/bin/orb" list nodes --format json | "$PY" -c 'import json,sys; print([n["node_id"] for n in json.load(sys.stdin) if sys.argv[1] in str(n["labels"])][0])' "$pod")
"$BUILD/bin/orb" logs --pod "${node:0:10}" --config "$work/cluster.yaml" | grep -q "==> pod $pod:" || fail "orb logs --pod NODE_ID"
! "$BUILD/bin/orb" logs --pod no-such-pod --config "$work/cluster.yaml" 2>"$work/nopod.txt" || fail "a missing pod is not an error"
grep -q "no-such-pod" "$work/nopod.txt" || fail "the error does not name the pod"

step "an actor needing GPU 1 (the head has none)"
timeout 180 "$driver" --orb-address="$gcs" gpu-actor || fail "the GPU actor"
k get pods -L orb.io/node-type
[[ $(count gpu_worker) == 1 ]] || fail "want one gpu_worker pod, have $(count gpu_worker)"
wait_for 90 "idle worker pods to be deleted" workers_gone

step "a CPU task whose label selector only the GPU type's nodes match"
timeout 180 "$driver" --orb-address="$gcs" selector-task "accelerator = h200" || fail "the labelled task"
k get pods -L orb.io/node-type
[[ $(count gpu_worker) == 1 && $(count cpu_worker) == 0 ]] || fail "want the labelled type's pod only"
wait_for 90 "idle worker pods to be deleted" workers_gone

step "a pod that cannot start (a Secret it needs is missing): orb status says why; it starts once the Secret exists"
timeout 240 "$driver" --orb-address="$gcs" selector-task "secret = needed" >"$work/secret.json" &
secret_driver=$!
status_says_why() { "$BUILD/bin/orb" status 2>/dev/null | grep -q "needs_secret  launching (pending: CreateContainerConfigError"; }
wait_for 60 "orb status to show the pod's CreateContainerConfigError" status_says_why
"$BUILD/bin/orb" status | grep -A3 "needs_secret" | head -8
grep -q "is pending: CreateContainerConfigError" "$ORB_TEMP_DIR"/session_latest/logs/autoscaler.log ||
  fail "the autoscaler's log does not say why the pod is pending"
# The dashboard's autoscaler view says the same; its address is in the head pod's output.
head_pod=$(k get pods -l orb.io/node-type=head -o jsonpath='{.items[0].metadata.name}')
dashboard=$("$BUILD/bin/orb" logs --pod "$head_pod" --config "$work/cluster.yaml" | sed -n 's/^ *dashboard: *//p' | head -1)
[[ $dashboard == http://*"?token="* ]] || fail "the head pod's output names no dashboard"
curl -sf "${dashboard/\?token=/api/autoscaler?token=}" >"$work/dash-autoscaler.json" || fail "GET /api/autoscaler"
"$PY" - "$work/dash-autoscaler.json" <<'PYEOF' || fail "the dashboard's autoscaler API lacks the pending pod or the node types"
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d["node_types"]) >= {"cpu_worker", "big_memory", "needs_secret"}, d["node_types"]
pending = [n for n in d["status"]["nodes"] if n["type"] == "needs_secret"]
assert pending and "CreateContainerConfigError" in pending[0].get("reason", ""), pending
assert any("launch 1 x needs_secret" in x["what"] for x in d["status"]["decisions"]), d["status"]["decisions"]
PYEOF
timeout 60 chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir="$work/chromium" \
  --virtual-time-budget=8000 --dump-dom "$dashboard#/autoscaler" 2>/dev/null >"$work/dash-autoscaler.html" || true
grep -q "CreateContainerConfigError" "$work/dash-autoscaler.html" && grep -q "Decisions, newest first" "$work/dash-autoscaler.html" ||
  fail "the dashboard's autoscaler page does not show the pending pod"
k create secret generic model-key --from-literal=key=s3cret >/dev/null
wait "$secret_driver" || fail "the task for the secret-needing node failed"
cat "$work/secret.json"
wait_for 90 "idle worker pods to be deleted" workers_gone

step "faults: every 3rd create's reply lost after the pod is made, 500s, dropped watches"
curl -sf -X DELETE "$api/_fake/stats" >/dev/null 2>&1 || true
log="$ORB_TEMP_DIR/session_latest/logs/autoscaler.log"
lines_before=$(wc -l <"$log")
curl -sf -X POST "$api/_fake/faults" -H 'Content-Type: application/json' -d '{
  "lose_create_reply_every": 3,
  "status_every": [{"code": 500, "every": 4, "verbs": ["create", "list"]}],
  "drop_watches_after_events": 4}' >/dev/null || fail "cannot set faults"
# Watches open now were opened before the fault: cut them, so the provider's resumes meet it.
curl -sf -X POST "$api/_fake/drop_watches" >/dev/null || fail "cannot drop watches"
timeout 180 "$driver" --orb-address="$gcs" tasks 12 1 || fail "the tasks failed under faults"
sleep 2  # let the last launches settle
kr get pods -L orb.io/node-type,orb.io/launch-request
tail -n +"$((lines_before + 1))" "$log" | grep -o 'launch [0-9]* x [a-z_]* (.*) as [a-z0-9-]*' >"$work/launches.txt" || true
cat "$work/launches.txt"
kr get pods -l orb.io/node-kind=worker -o json >"$work/pods.json"
curl -sf "$api/_fake/faults" >"$work/faults.json"
curl -sf "$api/_fake/stats" >"$work/stats.json"
"$PY" - "$work/launches.txt" "$work/pods.json" "$work/faults.json" "$work/stats.json" <<'PYEOF' || fail "pods differ from launches"
import collections, json, re, sys
launches = {}
for line in open(sys.argv[1]):
    m = re.match(r"launch (\d+) x (\S+) \(.*\) as (\S+)", line.strip())
    launches[m.group(3)] = int(m.group(1))
pods = [p for p in json.load(open(sys.argv[2]))["items"] if not p["metadata"].get("deletionTimestamp")]
by_launch = collections.Counter(p["metadata"]["labels"].get("orb.io/launch-request") for p in pods)
injected = json.load(open(sys.argv[3]))["injected"]
print("launched:", launches, "pods by launch:", dict(by_launch), "injected:", injected)
assert launches, "the autoscaler launched nothing under faults"
assert injected.get("lost_replies", 0) >= 1, "no create reply was lost: the fault did not fire"
assert injected.get("status_500", 0) >= 1, "no 500 was injected"
assert injected.get("dropped_watches", 0) >= 1, "no watch was dropped"
for launch, n in by_launch.items():
    assert launch in launches, "pod of launch %s that the autoscaler never made (leaked)" % launch
    assert n <= launches[launch], "launch %s has %d pods, %d wanted (doubled)" % (launch, n, launches[launch])
assert sum(by_launch.values()) == sum(launches.values()), "pods %d != launched %d" % (sum(by_launch.values()), sum(launches.values()))
PYEOF
curl -sf -X DELETE "$api/_fake/faults" >/dev/null
wait_for 90 "idle worker pods to be deleted after the faults" workers_gone
k get pods -L orb.io/node-type

step "orb down"
timeout 120 "$BUILD/bin/orb" down "$work/cluster.yaml" || fail "orb down"
[[ $(count_all) == 0 ]] || fail "pods left after orb down"
k get pods
if grep -q "Traceback" "$work/fake.log"; then
  grep -A20 "Traceback" "$work/fake.log" | head -40
  fail "the fake API server raised an exception"
fi
echo; echo "PASS"
