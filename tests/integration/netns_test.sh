#!/usr/bin/env bash
# Three nodes with their own network addresses, each in a network namespace on one
# bridge, as on three machines: the cluster tour (steering by resources, a 64 MiB object
# across nodes, a raylet killed mid-batch) runs from the head's namespace; then one
# node is cut off the network, the GCS declares it dead, and when its link returns the
# old raylet learns it is dead and exits instead of coming back.
# Needs root (network namespaces); exits 77 (skipped) elsewhere.
set -euo pipefail
trap 'echo "netns_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build_dir=$1
orb="$build_dir/bin/orb"
tag=orb$$
source "$(dirname "$0")/../lib/netns.sh"
if [[ $(id -u) != 0 ]] || ! netns_available "$tag"; then
  echo "SKIP: network namespaces need root (CAP_NET_ADMIN); not available here"
  exit 77
fi

work=$(mktemp -d)
cleanup() {
  netns_down "$tag"
  rm -rf "$work"
}
trap cleanup EXIT
netns_up "$tag" 198.18.13 || { echo "SKIP: namespaces cannot reach each other here"; exit 77; }
mkdir -p "$work/a" "$work/b" "$work/c"
in_ns() { local n=$1; shift; ip netns exec "$tag$n" env ORB_TEMP_DIR="$work/$n" "$@"; }

head=$(in_ns a "$orb" start --head --port 0 --node-ip-address 198.18.13.1 --num-cpus 2)
echo "$head"
address=$(sed -n 's/^  GCS address: *//p' <<<"$head")
[[ $address == 198.18.13.1:* ]]
token=$(cat "$(sed -n 's/^  session: *//p' <<<"$head")/token")
node_b=$(in_ns b "$orb" start --address "$address" --token "$token" --node-ip-address 198.18.13.2 --num-cpus 2 \
  --resources '{"zone_b": 2}')
echo "$node_b"
node_c=$(in_ns c "$orb" start --address "$address" --token "$token" --node-ip-address 198.18.13.3 --num-cpus 2 \
  --resources '{"zone_c": 1}' --object-store-memory 200000000)
echo "$node_c"
pid_b=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' <<<"$node_b")
pid_c=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' <<<"$node_c")

status=$(in_ns a "$orb" status)
echo "$status"
for ip in 198.18.13.1 198.18.13.2 198.18.13.3; do grep -q "$ip:" <<<"$(sed -n '/^Alive:/,/^Dead:/p' <<<"$status")"; done

echo "--- the cluster tour from the head's namespace; node c is killed mid-batch"
in_ns a "$build_dir/tests/cluster_tour" --orb-address="$address" --batch-started-file="$work/batch-started" \
  >"$work/tour.out" 2>&1 &
tour=$!
for _ in $(seq 1 600); do [[ -e "$work/batch-started" ]] && break; sleep 0.1; done
[[ -e "$work/batch-started" ]] || { cat "$work/tour.out"; echo "the tour never reached its batch"; exit 1; }
sleep 1
kill -9 "$pid_c"
wait "$tour" || { cat "$work/tour.out"; exit 1; }
cat "$work/tour.out"
grep -q "cluster tour ok" "$work/tour.out"

echo "--- node b cut off the network"
ip -n "${tag}b" link set "${tag}b" down
cut=$(date +%s)
dead=false
for _ in $(seq 1 60); do
  status=$(in_ns a "$orb" status)
  if grep -q "198.18.13.2:" <<<"$(sed -n '/^Dead:/,/^Resources/p' <<<"$status")"; then dead=true; break; fi
  sleep 0.5
done
echo "$status"
$dead || { echo "node b was not declared dead"; exit 1; }
echo "declared dead $(( $(date +%s) - cut )) s after the cut"
(( $(date +%s) - cut < 15 ))
kill -0 "$pid_b"  # still running, cut off

echo "--- link back: the old raylet hears it is dead and exits"
ip -n "${tag}b" link set "${tag}b" up
gone=false
for _ in $(seq 1 40); do
  if ! kill -0 "$pid_b" 2>/dev/null || [[ $(ps -o stat= -p "$pid_b" 2>/dev/null) == Z* ]]; then gone=true; break; fi
  sleep 0.5
done
$gone || { echo "the raylet declared dead kept running"; exit 1; }
status=$(in_ns a "$orb" status)
! grep -q "198.18.13.2:" <<<"$(sed -n '/^Alive:/,/^Dead:/p' <<<"$status")"
echo "netns test passed"
