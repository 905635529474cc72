#!/usr/bin/env bash
# Runs a workload on an autoscaled cluster of pods: the fake Kubernetes API server of
# tests/k8s (its kubelet runs each pod's command as a local process, so every raylet
# really joins), `orb up` with a head, a CPU worker type and a GPU worker type (GPUs
# declared), the workload with --orb-address, then the pods it brought up watched until
# the autoscaler gives them back, and `orb down`.
#   examples/on_fake_k8s.sh BUILD_DIR PROGRAM [ARGS...]
# Prints the pods by node type as they change, a pod replaced between two looks included
# ("pods: head=1 cpu_worker=2 gpu_worker=1").
# With DELETE_POD_TYPE=gpu_worker (and DELETE_POD_AFTER_S, default 5) one pod of that type
# is deleted that long after the program started, as a node lost under a running job.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
shift
HERE=$(cd "$(dirname "$0")" && pwd)
K8S=$HERE/../tests/k8s
PY=/usr/bin/python3
work=$(mktemp -d /tmp/orb-fake-k8s-XXXXXX)
export ORB_TEMP_DIR=$work/root ORB_BIN_DIR=$BUILD/bin
mkdir -p "$ORB_TEMP_DIR" "$work/state"
fake_pid=""
cleanup() {
  set +e
  [[ -f $work/cluster.yaml ]] && timeout 60 "$BUILD/bin/orb" down "$work/cluster.yaml" >/dev/null 2>&1
  [[ -n $fake_pid ]] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

source "$K8S/../lib/fake_k8s.sh"
start_fake_k8s "$work" || exit 1
head_port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/cluster.yaml" <<EOF
cluster_name: workloads
idle_timeout_s: 6
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
    pod_template: *pod
  gpu_worker:
    resources: {CPU: 4, GPU: 2}
    min_workers: 0
    max_workers: 1
    pod_template: *pod
EOF

# "head=1 cpu_worker=2 gpu_worker=1": the pods not being deleted, by node type.
# After a "|": the pods' names, so that a pod replaced between two looks is seen too.
pods() {
  timeout 30 kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" get pods -o json |
    "$PY" -c 'import json, sys, collections
live = [p for p in json.load(sys.stdin)["items"] if not p["metadata"].get("deletionTimestamp")]
c = collections.Counter(p["metadata"]["labels"].get("orb.io/node-type", "?") for p in live)
print(" ".join("%s=%d" % (t, c[t]) for t in ("head", "cpu_worker", "gpu_worker")) + "|" +
      " ".join(sorted(p["metadata"]["name"] for p in live)))'
}

timeout 120 "$BUILD/bin/orb" up "$work/cluster.yaml" >/dev/null
last=$(pods)
echo "pods: ${last%%|*}"
"$@" --orb-address="127.0.0.1:$head_port" &
program=$!
started=$SECONDS
while kill -0 "$program" 2>/dev/null; do
  if [[ -n ${DELETE_POD_TYPE:-} ]] && ((SECONDS - started >= ${DELETE_POD_AFTER_S:-5})); then
    victim=$(timeout 30 kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" get pods \
      -l "orb.io/node-type=$DELETE_POD_TYPE" -o name | head -1)
    if [[ -n $victim ]]; then
      timeout 60 kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" delete "$victim" --grace-period=0 \
        --wait=false >/dev/null
      echo "deleted $victim"
    fi
    DELETE_POD_TYPE=""
  fi
  now=$(pods || true)
  [[ $now != "$last" ]] && echo "pods: ${now%%|*}" && last=$now
  sleep 1
done
status=0
wait "$program" || status=$?
# The autoscaler gives the idle worker pods back.
for _ in $(seq 90); do
  now=$(pods || true)
  [[ $now != "$last" ]] && echo "pods: ${now%%|*}" && last=$now
  [[ ${now%%|*} == "head=1 cpu_worker=0 gpu_worker=0" ]] && break
  sleep 1
done
exit "$status"
