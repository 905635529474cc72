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

echo "--- state is this user's alone: the session root, sessions, tables and logs"
session=$(sed -n 's/^  session: *//p' <<<"$start")
[[ $(stat -c %a "$ORB_TEMP_DIR") == 700 ]]
[[ $(stat -c %a "$session") == 700 ]]
[[ -z $(find "$session/storage" -type f -perm /077) ]] || { ls -l "$session/storage"; exit 1; }

echo "--- a program's embedded cluster leaves orb status on the running head"
"$build_dir/examples/hello" >/dev/null 2>&1
grep -q "$address" <<<"$("$orb" status)"

echo "--- orb stop stops the clusters of its own session root, not another's"
other_root=$(mktemp -d)
other=$(ORB_TEMP_DIR=$other_root "$orb" start --head --port 0 --num-cpus 1)
other_address=$(sed -n 's/^  GCS address: *//p' <<<"$other")
"$orb" stop
left=$(pgrep -u "$(id -u)" -f -- "--orb-worker-mode|$build_dir/bin/(gcs_server|raylet).*$ORB_TEMP_DIR" || true)
if [[ -n $left ]]; then echo "left behind after orb stop: $left"; exit 1; fi
if "$orb" status 2>/dev/null; then echo "status must fail once the cluster is stopped"; exit 1; fi
grep -q "$other_address" <<<"$(ORB_TEMP_DIR=$other_root "$orb" status)"  # the other one runs on
ORB_TEMP_DIR=$other_root "$orb" stop --address "$other_address" >/dev/null
if ORB_TEMP_DIR=$other_root "$orb" status 2>/dev/null; then echo "orb stop --address left it running"; exit 1; fi
rm -rf "$other_root"
echo "cli test passed"
