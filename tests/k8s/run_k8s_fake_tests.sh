#!/usr/bin/env bash
# Runs every test of the fake Kubernetes API server (tests/k8s/README.md); non-zero if any fails.
# Each test has its own hard time limit, so a hang fails the run instead of stalling it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-/usr/bin/python3}
failed=()
run() {
  local name=$1; shift
  echo "=== $name"
  local start=$SECONDS
  if timeout -k 10 150 "$@"; then
    echo "=== $name: PASS ($((SECONDS - start))s)"
  else
    echo "=== $name: FAIL (exit $?, $((SECONDS - start))s)"
    failed+=("$name")
  fi
}
run fake_api_test "$python" "$here/fake_api_test.py"
run fake_faults_test "$python" "$here/fake_faults_test.py"
run fake_kubelet_stress_test "$python" "$here/fake_kubelet_stress_test.py"
run python_client_test "$python" "$here/python_client_test.py"
run kubectl_test "$here/kubectl_test.sh"
if ((${#failed[@]})); then
  echo "k8s fake tests failed: ${failed[*]}"
  exit 1
fi
echo "k8s fake tests: all passed"
