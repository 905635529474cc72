#!/usr/bin/env bash
# The Ray C++ API conformance suite (tests/conformance), as a user outside orb builds
# it: orb installed into a temporary prefix, the suite built by its own CMake project
# with find_package(orb), then run on the embedded default, in local mode, and on a
# two-node cluster started with `orb start` (whose autoscaling config lets GPU work
# wait). Also compiles and runs the README's quick start exactly as printed.
set -euo pipefail
trap 'echo "conformance_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build_dir=$1
source_dir=$2
work=$(mktemp -d)
orb="$work/prefix/bin/orb"
cleanup() {
  env -u ORB_BIN_DIR "$orb" stop --force >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
unset ORB_BIN_DIR ORB_ADDRESS
export ORB_TEMP_DIR="$work/orbtmp"

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# The quick start, exactly as the README prints it: the first C++ block after its heading.
awk '/^## Quick start/{in_section=1} in_section && /^```cpp/{grab=1; next} grab && /^```/{exit} grab' \
  "$source_dir/README.md" >"$work/quickstart.cc"
grep -q "orb::Init" "$work/quickstart.cc"
cmake -S "$source_dir/tests/conformance" -B "$work/suite" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DORB_QUICKSTART_SOURCE="$work/quickstart.cc" >/dev/null
cmake --build "$work/suite" -j 2 >/dev/null
export LD_LIBRARY_PATH="$work/prefix/lib"

tests=(api_conformance_test actor_conformance_test object_ref_conformance_test placement_group_conformance_test
       runtime_env_conformance_test config_conformance_test observability_conformance_test)
run_suite() {  # run_suite <label>
  for t in "${tests[@]}"; do
    echo "--- $1: $t"
    timeout 600 "$work/suite/$t" --gtest_brief=1
  done
  echo "--- $1: kv_failover"
  timeout 300 "$work/suite/kv_failover" | tee "$work/kv.out"
  grep -q "kv failover ok" "$work/kv.out"
  echo "--- $1: the README quick start"
  [[ $(timeout 120 "$work/suite/quickstart") == "13" ]]
}

run_suite "embedded default"
echo "--- local mode"
timeout 300 "$work/suite/local_mode_conformance_test" --gtest_brief=1
if pgrep -u "$(id -u)" -f "$work/prefix/bin/" >/dev/null; then
  echo "processes left behind by the embedded runs:"; pgrep -a -u "$(id -u)" -f "$work/prefix/bin/"; exit 1
fi

cat >"$work/autoscaling.yaml" <<'YAML'
available_node_types:
  gpu_worker:
    resources: {CPU: 4, GPU: 1}
    max_workers: 2
YAML
start=$("$orb" start --head --port 0 --num-cpus 2 --num-gpus 0 --autoscaling-config "$work/autoscaling.yaml")
address=$(sed -n 's/^  GCS address: *//p' <<<"$start")
"$orb" start --address "$address" --num-cpus 2 --num-gpus 0 >/dev/null
export ORB_ADDRESS=$address
run_suite "two-node cluster"
"$orb" stop >/dev/null
if pgrep -u "$(id -u)" -f "$work/(prefix/bin/|suite/)" >/dev/null; then
  echo "processes left behind after orb stop:"; pgrep -a -u "$(id -u)" -f "$work/"; exit 1
fi
echo "conformance test passed"
