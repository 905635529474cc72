#!/usr/bin/env bash
# deploy/k8s checked with the real kubectl against the fake API server:
#   - `kubectl apply --dry-run=client` maps every manifest (Namespace, ServiceAccount,
#     Role, RoleBinding, Secret, ConfigMap, Deployment, Service, Pod);
#   - `kubectl apply --dry-run=server` has every object validated field by field
#     (strict), and a misspelt field is refused (so the check can fail);
#   - the cluster YAML in the ConfigMap passes orb's own parser (`orb up --dry-run`), and
#     the pods it makes (head and workers) pass the server's validation too.
#   manifests_test.sh BUILD_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
DEPLOY=$(cd "$HERE/../../deploy/k8s" && pwd)
work=$(mktemp -d /tmp/orb-manifests-XXXXXX)
fake_pid=""
cleanup() {
  [[ -n $fake_pid ]] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

/usr/bin/python3 "$HERE/fake_apiserver.py" --port 0 --state-dir "$work/state" --max-lifetime-s 300 >"$work/fake.log" 2>&1 &
fake_pid=$!
for _ in $(seq 100); do [[ -s $work/state/port ]] && break; sleep 0.1; done
cat >"$work/kubeconfig" <<EOF2
apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "http://127.0.0.1:$(cat "$work/state/port")"}}]
users: [{name: tester, user: {}}]
contexts: [{name: fake, context: {cluster: fake, user: tester}}]
current-context: fake
EOF2
k() { timeout 60 kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/kcache" "$@"; }

echo "== kubectl apply --dry-run=client -f deploy/k8s"
k apply --dry-run=client -f "$DEPLOY" || fail "client-side dry run"

echo "== kubectl apply --dry-run=server (strict validation by the API server)"
k apply -f "$DEPLOY/namespace.yaml" || fail "namespace"
for f in "$DEPLOY"/*.yaml; do
  [[ $(basename "$f") == namespace.yaml ]] && continue
  k apply --dry-run=server --validate=strict -f "$f" || fail "server-side dry run of $(basename "$f")"
done
sed 's/restartPolicy:/restartPolicyy:/' "$DEPLOY/worker-pod.yaml" >"$work/bad-pod.yaml"
if k apply --dry-run=server --validate=strict -f "$work/bad-pod.yaml" 2>"$work/bad.err"; then
  fail "a misspelt field was accepted: the validation proves nothing"
fi
grep -q restartPolicyy "$work/bad.err" || fail "the refusal does not name the field: $(cat "$work/bad.err")"

echo "== the cluster YAML of the ConfigMap, and the pods orb makes from it"
k create --dry-run=client -f "$DEPLOY/cluster-config.yaml" -o jsonpath='{.data.cluster\.yaml}' >"$work/cluster.yaml"
"$BUILD/bin/orb" up --dry-run "$work/cluster.yaml" >"$work/pods.json" || fail "orb rejects the cluster YAML"
mkdir "$work/pods"
/usr/bin/python3 - "$work/pods.json" "$work/pods" <<'PYEOF'
import json, sys
for i, pod in enumerate(json.load(open(sys.argv[1]))["items"]):
    json.dump(pod, open("%s/pod-%d.json" % (sys.argv[2], i), "w"))
PYEOF
for f in "$work"/pods/*.json; do
  k create --dry-run=server --validate=strict -f "$f" || fail "a pod orb makes is not valid: $(cat "$f")"
done
echo "PASS"
