# Shared by the scripts that run orb on the fake Kubernetes API of tests/k8s, whose
# kubelet runs each pod's command as a local process (so every raylet really joins).

# start_fake_k8s WORK: starts the fake API server with its kubelet (state in WORK/state,
# log in WORK/fake.log; pods see ORB_TEMP_DIR) and writes WORK/kubeconfig for it (no
# token: kubectl sends none over plain http). Sets fake_pid and api (its URL).
start_fake_k8s() {
  local work=$1 lib
  lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  mkdir -p "$work/state"
  /usr/bin/python3 "$lib/../k8s/fake_apiserver.py" --port 0 --state-dir "$work/state" --kubelet \
    --max-lifetime-s 900 --kubelet-env-passthrough ORB_TEMP_DIR >"$work/fake.log" 2>&1 &
  fake_pid=$!
  for _ in $(seq 100); do [[ -s $work/state/port ]] && break; sleep 0.1; done
  if [[ ! -s $work/state/port ]]; then
    echo "the fake API server did not start:" >&2
    tail -20 "$work/fake.log" >&2
    return 1
  fi
  api="http://127.0.0.1:$(cat "$work/state/port")"
  cat >"$work/kubeconfig" <<EOF2
apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "$api"}}]
users: [{name: orb, user: {token: unused-over-http}}]
contexts: [{name: fake, context: {cluster: fake, user: orb, namespace: default}}]
current-context: fake
EOF2
}

# stop_fake_k8s BUILD WORK: `orb down` for WORK/cluster.yaml if there is one, the fake
# API server, any orb daemon left on this machine, and WORK itself. For an EXIT trap.
stop_fake_k8s() {
  set +e
  [[ -f $2/cluster.yaml ]] && timeout 60 "$1/bin/orb" down "$2/cluster.yaml" >/dev/null 2>&1
  [[ -n ${fake_pid:-} ]] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  timeout 20 "$1/bin/orb" stop >/dev/null 2>&1
  rm -rf "$2"
}
