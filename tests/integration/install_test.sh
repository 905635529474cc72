#!/usr/bin/env bash
# Installs orb into a temporary prefix, builds an outside project against it with
# find_package(orb), and runs that program on the embedded default and on a cluster
# started by the installed `orb start --head`. Nothing from the build tree is used.
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'env -u ORB_BIN_DIR "$work/prefix/bin/orb" stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
unset ORB_BIN_DIR
export ORB_TEMP_DIR="$work/orbtmp"

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/tests/install_consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
export LD_LIBRARY_PATH="$work/prefix/lib"

echo "--- embedded default"
out=$("$work/consumer/app")
echo "$out"
grep -q "consumer ok: 210 on 1 node(s)" <<<"$out"
if pgrep -u "$(id -u)" -f "$work/(prefix/bin/|consumer/app)" >/dev/null; then
  echo "Shutdown left processes behind:"; pgrep -a -u "$(id -u)" -f "$work/"; exit 1
fi

echo "--- actors on the embedded default"
out=$("$work/consumer/actor_tour" 2>&1) || { echo "$out"; exit 1; }
echo "$out"
grep -q "actor tour ok" <<<"$out"

echo "--- cluster from orb start --head"
start=$("$work/prefix/bin/orb" start --head --port 0 --num-cpus 2)
echo "$start"
address=$(sed -n 's/^  GCS address: *//p' <<<"$start")
out=$("$work/consumer/app" --orb-address="$address")
echo "$out"
grep -q "consumer ok: 210 on 1 node(s)" <<<"$out"
grep -q "CPU" <<<"$("$work/prefix/bin/orb" status)"

echo "--- three nodes: steer by resources, a 64 MiB object across nodes, a raylet killed mid-batch"
"$work/prefix/bin/orb" start --address "$address" --num-cpus 2 --resources '{"zone_b": 2}'
joined=$("$work/prefix/bin/orb" start --address "$address" --num-cpus 2 --resources '{"zone_c": 1}' \
  --object-store-memory 200000000)
echo "$joined"
victim=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' <<<"$joined")
[[ -n $victim ]]
"$work/consumer/cluster_tour" --orb-address="$address" --batch-started-file="$work/batch-started" \
  >"$work/tour.out" 2>&1 &
tour=$!
for _ in $(seq 1 600); do [[ -e "$work/batch-started" ]] && break; sleep 0.1; done
[[ -e "$work/batch-started" ]] || { cat "$work/tour.out"; echo "the tour never reached its batch"; exit 1; }
sleep 1  # the first slow tasks are running on every node
kill -9 "$victim"
wait "$tour" || { cat "$work/tour.out"; exit 1; }
cat "$work/tour.out"
grep -q "cluster tour ok" "$work/tour.out"
dead=false  # shown with its reason: it stopped answering gossip probes
for _ in $(seq 1 40); do
  status=$("$work/prefix/bin/orb" status)
  if grep -q "probes" <<<"$(sed -n '/^Dead:/,/^Resources/p' <<<"$status")"; then dead=true; break; fi
  sleep 0.5
done
$dead || { "$work/prefix/bin/orb" status; echo "the killed node is not shown dead"; exit 1; }
"$work/prefix/bin/orb" stop
if pgrep -u "$(id -u)" -f "$work/prefix/bin/" >/dev/null; then
  echo "processes left behind after orb stop:"; pgrep -a -u "$(id -u)" -f "$work/prefix/bin/"; exit 1
fi
echo "install test passed"
