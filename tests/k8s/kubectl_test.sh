#!/usr/bin/env bash
# The real kubectl against the fake API server with its kubelet, as a user drives a cluster: create a
# namespace and a secret, run a pod that reads both, wait for it, read its logs, label it, delete it
# (and its process), then validate a directory of manifests and reject invalid ones.
set -euo pipefail
trap 'echo "kubectl_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
here=$(cd "$(dirname "$0")" && pwd)
kubectl_bin=${KUBECTL:-/usr/bin/kubectl}
python=${PYTHON:-/usr/bin/python3}
if ! [[ -x $kubectl_bin ]]; then echo "kubectl_test: no kubectl at $kubectl_bin" >&2; exit 1; fi

work=$(mktemp -d)
fake_pid=
cleanup() {
  if [[ -n $fake_pid ]] && kill -0 "$fake_pid" 2>/dev/null; then
    kill -TERM "$fake_pid"
    for _ in $(seq 100); do kill -0 "$fake_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$fake_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# No --token: client-go (so kubectl) sends credentials only over TLS, and the fake speaks plain HTTP.
# The token in the kubeconfig below is what a real cluster's would hold; it is not sent.
"$python" "$here/fake_apiserver.py" --port 0 --state-dir "$work/state" --kubelet --max-lifetime-s 240 \
  2>"$work/server.log" &
fake_pid=$!
for _ in $(seq 100); do [[ -s $work/state/port ]] && break; sleep 0.1; done
[[ -s $work/state/port ]] || { echo "the fake API server did not start"; cat "$work/server.log"; exit 1; }
port=$(cat "$work/state/port")
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: http://127.0.0.1:$port
users:
- name: tester
  user:
    token: kubectl-test-token
contexts:
- name: fake
  context: {cluster: fake, user: tester, namespace: default}
current-context: fake
EOF
# Output is captured before it is matched: `k ... | grep -q` fails under pipefail when grep exits
# early and kubectl dies of SIGPIPE.
# A bound on every call, and a cache of our own (discovery is cached per server address).
k() { timeout 60 "$kubectl_bin" --kubeconfig "$work/kubeconfig" --cache-dir "$work/cache" --request-timeout 30s "$@"; }
fail() { echo "kubectl_test: $*" >&2; echo "--- server log (tail)" >&2; tail -40 "$work/server.log" >&2; exit 1; }

echo "--- version and discovery"
version=$(k version -o json)
[[ $(jq -r .serverVersion.gitVersion <<<"$version") == v1.32.0 ]] || fail "unexpected server version: $version"
resources=$(k api-resources)
grep -qE '^pods +po +v1 +true +Pod' <<<"$resources" || fail "pods not in api-resources"

echo "--- namespace, secret, pod"
k create namespace t
k create secret generic orb-token --from-literal=token=abc -n t
[[ $(k get secret orb-token -n t -o jsonpath='{.data.token}' | base64 -d) == abc ]] || fail "secret data"
cat >"$work/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: worker
  namespace: t
  labels: {app: x}
spec:
  terminationGracePeriodSeconds: 5
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    # $$$$ is the shell's $$ once Kubernetes has expanded $(VAR) references ($$ escapes $).
    command: ["sh", "-c", "echo token=$ORB_TOKEN pod=$MY_NAME ip=$MY_IP ns=$(MY_NS) pid=$$$$; sleep 300 & wait"]
    env:
    - name: ORB_TOKEN
      valueFrom: {secretKeyRef: {name: orb-token, key: token}}
    - name: MY_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: MY_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    - name: MY_NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
EOF
k apply -f "$work/pod.yaml"
k wait --for=condition=Ready pod/worker -n t --timeout=20s
# Ready means started, not that it has printed yet.
for _ in $(seq 100); do logs=$(k logs worker -n t); [[ -n $logs ]] && break; sleep 0.1; done
echo "$logs"
[[ $logs =~ ^token=abc\ pod=worker\ ip=127\.0\.0\.1\ ns=t\ pid=([0-9]+)$ ]] || fail "unexpected logs: $logs"
pid=${BASH_REMATCH[1]}
kill -0 "$pid" 2>/dev/null || fail "the pod's process $pid is not running"
pgrep -g "$pid" -x sleep >/dev/null || fail "the pod's child process is not in its process group"

[[ $(k get pods -n t -l app=x -o jsonpath='{.items[*].metadata.name}') == worker ]] || fail "label selector"
[[ $(k get pods -n t -l 'app in (y,z)' -o jsonpath='{.items[*].metadata.name}') == "" ]] || fail "set selector"
[[ $(k get pods -n t -o json | jq -r '.items[0].status.phase') == Running ]] || fail "phase"
running=$(k get pods -n t --field-selector status.phase=Running -o name)
grep -qx pod/worker <<<"$running" || fail "field selector"
table=$(k get pods -n t)
echo "$table"
grep -qE '^worker +1/1 +Running +0 ' <<<"$table" || fail "kubectl get pods table: $table"

k label pod worker -n t k=v
[[ $(k get pods -n t -l k=v -o jsonpath='{.items[*].metadata.name}') == worker ]] || fail "label patch"
k annotate pod worker -n t note=hello
[[ $(k get pod worker -n t -o jsonpath='{.metadata.annotations.note}') == hello ]] || fail "annotate"

echo "--- delete waits for the process to go"
k delete pod worker -n t --wait --timeout=20s
if kill -0 "$pid" 2>/dev/null; then fail "the pod's process $pid survived the delete"; fi
if pgrep -g "$pid" >/dev/null; then fail "processes of the pod's group survived the delete"; fi
empty=$(k get pods -n t 2>&1)
[[ $empty == "No resources found in t namespace." ]] || fail "pods left: $empty"

echo "--- manifests: client dry run, then server-side validation"
mkdir "$work/manifests"
cat >"$work/manifests/orb.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: orb-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: orb-autoscaler, namespace: orb-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: orb-pods, namespace: orb-system}
rules:
- apiGroups: [""]
  resources: [pods, pods/log, pods/status]
  verbs: [get, list, watch, create, delete, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: orb-pods, namespace: orb-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: orb-pods}
subjects:
- {kind: ServiceAccount, name: orb-autoscaler, namespace: orb-system}
---
apiVersion: v1
kind: Secret
metadata: {name: orb-token, namespace: orb-system}
stringData: {token: abc}
---
apiVersion: v1
kind: Service
metadata: {name: orb-head, namespace: orb-system}
spec:
  selector: {app: orb-head}
  ports: [{name: gcs, port: 6379, targetPort: 6379}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: orb-head, namespace: orb-system}
spec:
  replicas: 1
  selector: {matchLabels: {app: orb-head}}
  template:
    metadata: {labels: {app: orb-head}}
    spec:
      serviceAccountName: orb-autoscaler
      containers:
      - name: head
        image: orb:latest
        command: [orb, start, --head, --block]
        ports: [{containerPort: 6379}]
        resources: {requests: {cpu: "1", memory: 1Gi}}
EOF
dry=$(k apply --dry-run=client -f "$work/manifests/")
echo "$dry"
[[ $(grep -c 'created (dry run)' <<<"$dry") == 7 ]] || fail "client dry run: $dry"
k get namespace orb-system >/dev/null 2>&1 && fail "a client dry run created something"
k apply -f "$work/manifests/"
[[ $(k get deployment orb-head -n orb-system -o jsonpath='{.spec.replicas}') == 1 ]] || fail "deployment"
applied=$(k apply -f "$work/manifests/")
grep -q 'deployment.apps/orb-head unchanged' <<<"$applied" || fail "re-apply changed the deployment"
k delete -f "$work/manifests/" --wait --timeout=30s
k get namespace orb-system >/dev/null 2>&1 && fail "namespace orb-system still there"

# kubectl validates fields on the server (the fake advertises fieldValidation in its OpenAPI v3, as
# kube-apiserver does), so unknown fields and wrong types fail on create, apply and server dry runs.
sed 's/^  restartPolicy: Never/  restartPolicy: Never\n  bogusField: 1/' "$work/pod.yaml" >"$work/unknown.yaml"
sed 's/terminationGracePeriodSeconds: 5/terminationGracePeriodSeconds: "five"/' "$work/pod.yaml" >"$work/type.yaml"
for bad in unknown type; do
  for cmd in "create -f" "apply -f" "apply --dry-run=server -f"; do
    # shellcheck disable=SC2086
    if out=$(k $cmd "$work/$bad.yaml" 2>&1); then fail "kubectl $cmd accepted $bad.yaml: $out"; fi
    case $bad in
      unknown) grep -q 'strict decoding error: unknown field "spec.bogusField"' <<<"$out" || fail "$out" ;;
      type) grep -q 'cannot unmarshal string into Go struct field PodSpec.spec.terminationGracePeriodSeconds' \
              <<<"$out" || fail "$out" ;;
    esac
  done
done
dry_run=$(k apply --dry-run=server -f "$work/pod.yaml")
grep -q 'pod/worker created (server dry run)' <<<"$dry_run" || fail "server dry run"
# Without strict validation the unknown field is dropped, as a real server does.
k create --validate=false -f "$work/unknown.yaml"
k get pod worker -n t -o json | jq -e '.spec | has("bogusField") | not' >/dev/null || fail "unknown field stored"
k delete pod worker -n t --grace-period=0 --force >/dev/null 2>&1
[[ $(k get pods -A -o name) == "" ]] || fail "pods left at the end"

echo "--- the fake stops cleanly"
kill -TERM "$fake_pid"
for _ in $(seq 100); do kill -0 "$fake_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$fake_pid" 2>/dev/null; then fail "the fake did not stop on SIGTERM"; fi
wait "$fake_pid" || fail "the fake exited with $?"
fake_pid=
if grep -q Traceback "$work/server.log"; then
  cat "$work/server.log" >&2
  fail "the fake hit an unexpected exception"
fi
echo "kubectl_test: PASS"
