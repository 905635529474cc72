#!/usr/bin/env bash
# The CLI as a user runs it: start a head node and a second node, run the examples
# against the cluster, read `orb status`, then `orb stop` and check nothing is left.
set -euo pipefail
trap 'echo "cli_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build_dir=$1
orb="$build_dir/bin/orb"
export ORB_TEMP_DIR=$(mktemp -d)
trap '"$orb" stop >/dev/null 2>&1 || true; rm -rf "$ORB_TEMP_DIR"' EXIT

grep -q start <<<"$("$orb" --help)"
grep -q -- "--object-store-memory" <<<"$("$orb" start --help)"
if "$orb" start 2>/dev/null; then echo "orb start without --head/--address must fail"; exit 1; fi
if "$orb" start --head --num-cpus -3 2>/dev/null; then echo "a negative --num-cpus must fail"; exit 1; fi

start=$("$orb" start --head --port 0 --num-cpus 2 --object-store-memory 100000000)
echo "$start"
address=$(sed -n 's/^  GCS address: *//p' <<<"$start")
[[ -n $address ]]
"$orb" start --address "$address" --num-cpus 1 --resources '{"zone_b": 2}'
if "$orb" start --address "$address" --resources '{"bad": -1}' 2>/dev/null; then
  echo "a negative custom resource must fail"; exit 1
fi

# Capture first, then match: `producer | grep -q` can fail the pipeline with SIGPIPE.
hello=$("$build_dir/examples/hello" --orb-address="$address" 2>&1) || { echo "$hello"; exit 1; }
echo "$hello"
grep -q "caught orb::TaskError" <<<"$hello"
pi=$("$build_dir/examples/pi" --orb-address="$address" --tasks=20 2>&1) || { echo "$pi"; exit 1; }
echo "$pi"
grep -q "pi ~= 3.1" <<<"$pi"

status=$("$orb" status)
echo "$status"
grep -q "0.0/3.0 CPU" <<<"$status" || grep -q "/3.0 CPU" <<<"$status"
grep -q "/2.0 zone_b" <<<"$status"
[[ $(sed -n '/^Alive:/,/^Dead:/p' <<<"$status" | grep -c "127.0.0.1:") == 2 ]]

"$orb" stop
left=$(pgrep -u "$(id -u)" -f -- "--orb-worker-mode|$build_dir/bin/(gcs_server|raylet)" || true)
if [[ -n $left ]]; then echo "left behind after orb stop: $left"; exit 1; fi
if "$orb" status 2>/dev/null; then echo "status must fail once the cluster is stopped"; exit 1; fi
echo "cli test passed"
