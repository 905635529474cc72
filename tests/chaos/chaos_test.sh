#!/usr/bin/env bash
# The chaos suite: a three-node cluster runs tests/chaos/chaos_workload (tasks with
# retries, an actor with restarts and task retries, objects passed between nodes, a
# placement group; every item with a sequence number and a known answer) while one kind
# of fault is injected per run:
#
#   worker_kill     kill -9 a random worker every 2 s
#   poison          tasks that abort their worker, mixed in with healthy ones
#   actor_kill      kill -9 the actor's process every 3 s
#   raylet_kill     kill -9 a raylet (its node is replaced afterwards)
#   raylet_freeze   SIGSTOP a raylet and its workers past the death timeout, then SIGCONT:
#                   the zombie must leave, and nothing it says after is taken
#   gcs_restart     kill -9 the GCS and restart it on the same storage
#   gcs_empty       kill -9 the GCS and restart it on empty storage: raylets must leave
#                   (another cluster now), the workload must end with errors, not hang
#   partition       cut one node off the network past the death timeout, then reconnect
#   netem           delay, loss and duplication on one node's link (where the kernel has
#                   no netem: a slow token-bucket link that delays and drops)
#   tiny_disk       the GCS's storage on an 8 MiB tmpfs that fills up during the run: the
#                   GCS refuses writes with errors, keeps serving, and comes back whole
#   full_spill_disk the head's spill directory on a 48 MiB tmpfs while the workload also
#                   Puts and holds 4 MiB objects until the store and the disk are full:
#                   refused Puts are fine, every acknowledged object must read back right
#
# partition and netem need network namespaces, tiny_disk and full_spill_disk a tmpfs mount (root); where
# they cannot be had they are skipped with a message. Each run prints a table row:
# submitted / completed / lost / duplicated / wrong. The suite fails on any lost or wrong
# result, any daemon that died unbidden, and any process or /dev/shm file left behind
# after the cluster stops.
#
#   chaos_test.sh BUILD_DIR [FAULT...]      (ORB_CHAOS_SECONDS: workload seconds per run)
set -uo pipefail
build_dir=$(cd "$1" && pwd)
shift
faults=("$@")
[[ ${#faults[@]} == 0 ]] && faults=(worker_kill poison actor_kill raylet_kill raylet_freeze gcs_restart gcs_empty
  partition netem tiny_disk full_spill_disk)
orb="$build_dir/bin/orb"
workload="$build_dir/tests/chaos_workload"
seconds=${ORB_CHAOS_SECONDS:-12}
work=$(mktemp -d /tmp/orb-chaos.XXXXXX)
tag=orbc$$
failures=0
table=()

fail() {
  echo "CHAOS FAILURE: $*" >&2
  failures=$((failures + 1))
}

# --- where nodes live: network namespaces (a, b, c on a bridge) when root can make
# them, else all on loopback.
source "$(dirname "$0")/../lib/netns.sh"
netns=false
[[ $(id -u) == 0 ]] && netns_available "$tag" && netns=true
node_names=(a b c)
ip_of() { if $netns; then echo "198.18.14.$(( $1 + 1 ))"; else echo 127.0.0.1; fi; }
in_node() {  # in_node INDEX CMD...: run as on that node
  local i=$1
  shift
  if $netns; then ip netns exec "$tag${node_names[$i]}" env ORB_TEMP_DIR="$work/root$i" "$@"
  else env ORB_TEMP_DIR="$work/root0" "$@"; fi
}
setup_network() {
  $netns || return 0
  # Namespaces that cannot reach each other (a sandbox without bridging) are no use.
  if ! netns_up "$tag" 198.18.14; then
    echo "network namespaces cannot reach each other here; nodes run on loopback"
    netns_down "$tag"
    netns=false
  fi
}
teardown_network() { netns_down "$tag"; }

# --- the cluster
address=""
session=""
token=""
declare -a raylet_pid
gcs_pid=""
start_node() {  # start_node INDEX: a worker node (1 or 2) joins
  local i=$1 out
  out=$(in_node "$i" "$orb" start --address "$address" --token "$token" --node-ip-address "$(ip_of "$i")" \
    --num-cpus 2 --object-store-memory 134217728 2>&1) || { echo "$out"; return 1; }
  raylet_pid[$i]=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' <<<"$out")
}
start_cluster() {  # start_cluster [extra head flags]
  local out
  out=$(in_node 0 "$orb" start --head --port 0 --node-ip-address "$(ip_of 0)" --num-cpus 2 \
    --object-store-memory 134217728 "$@" 2>&1) || { echo "$out"; return 1; }
  address=$(sed -n 's/^  GCS address: *//p' <<<"$out")
  session=$(sed -n 's/^  session: *//p' <<<"$out")
  token=$(cat "$session/token")
  raylet_pid[0]=$(sed -n 's/^  raylet:.*(pid \([0-9]*\)).*/\1/p' <<<"$out")
  gcs_pid=$(cat "$session/gcs.pid")
  start_node 1 && start_node 2 || return 1
  wait_alive 3 30
}
alive_nodes() {
  in_node 0 "$orb" status --address "$address" 2>/dev/null | sed -n '/^Alive:/,/^Dead:/p' | grep -c ':[0-9]' || true
}
wait_alive() {  # wait_alive N SECONDS
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    [[ $(alive_nodes) == "$1" ]] && return 0
    sleep 0.5
  done
  echo "expected $1 live nodes, have $(alive_nodes)"
  return 1
}
stop_cluster() {
  for i in 0 1 2; do in_node "$i" "$orb" stop --all >/dev/null 2>&1; done
  if $netns; then
    # The nodes' session roots differ: stop each, then anything that outlived them.
    sleep 0.5
  fi
}
daemons_alive() {  # daemons_alive PID...: every one still runs (not a zombie)
  local p
  for p in "$@"; do
    if ! kill -0 "$p" 2>/dev/null || [[ $(ps -o stat= -p "$p" 2>/dev/null) == Z* ]]; then
      fail "daemon $p ($(cat /proc/$p/comm 2>/dev/null || echo gone)) died during the run"
    fi
  done
}
# Workers: processes a raylet of this cluster started (drivers and daemons are not).
workers_of() { local p; for p in "${raylet_pid[@]}"; do pgrep -P "$p"; done; }

# --- one run
driver=""
run_dir=""
start_workload() {  # start_workload FAULT [workload flags]
  local fault=$1
  shift
  run_dir="$work/run-$fault"
  mkdir -p "$run_dir"
  in_node 0 timeout $((seconds + 240)) "$workload" --orb-address="$address" --fault="$fault" --seconds="$seconds" \
    --run-dir="$run_dir" --started-file="$run_dir/started" "$@" >"$run_dir/out" 2>"$run_dir/err" &
  driver=$!
  local deadline=$((SECONDS + 90))
  while [[ ! -e $run_dir/started ]] && ((SECONDS < deadline)) && kill -0 "$driver" 2>/dev/null; do sleep 0.2; done
  [[ -e $run_dir/started ]] || { fail "$fault: the workload never started"; tail -5 "$run_dir/err"; return 1; }
}
finish_workload() {  # finish_workload FAULT [expect-errors]
  local fault=$1 expect_errors=${2:-}
  wait "$driver"
  local rc=$?
  local row
  row=$(grep '^{' "$run_dir/out" | tail -1)
  if [[ -z $row ]]; then
    row="{\"fault\":\"$fault\",\"error\":\"no report (exit $rc)\"}"
    [[ -n $expect_errors ]] || { fail "$fault: the workload gave no report (exit $rc)"; tail -20 "$run_dir/err" >&2; }
  elif [[ -z $expect_errors ]] && { [[ $rc != 0 ]] || ! grep -q '"lost":0,' <<<"$row" || ! grep -q '"wrong":0,' <<<"$row"; }; then
    fail "$fault: results lost or wrong: $row"
  fi
  echo "$row"
  table+=("$row")
}
end_of_run_checks() {  # the cluster is whole again: three live nodes
  if ! wait_alive 3 30; then fail "the cluster did not recover its three nodes"; fi
}

# --- faults
run_worker_kill() {
  start_workload worker_kill || return
  local kills=0
  while kill -0 "$driver" 2>/dev/null; do
    local victims
    victims=($(workers_of))
    ((${#victims[@]})) && kill -9 "${victims[RANDOM % ${#victims[@]}]}" 2>/dev/null && kills=$((kills + 1))
    sleep 2
  done
  echo "    killed $kills workers"
  finish_workload worker_kill
  daemons_alive "$gcs_pid" "${raylet_pid[@]}"
}
run_poison() {
  start_workload poison --poison || return
  finish_workload poison
  daemons_alive "$gcs_pid" "${raylet_pid[@]}"
}
run_actor_kill() {
  start_workload actor_kill || return
  local kills=0
  while kill -0 "$driver" 2>/dev/null; do
    sleep 3
    [[ -s $run_dir/actor.pid ]] && kill -9 "$(cat "$run_dir/actor.pid")" 2>/dev/null && kills=$((kills + 1))
  done
  echo "    killed the actor $kills times"
  finish_workload actor_kill
  daemons_alive "$gcs_pid" "${raylet_pid[@]}"
}
run_raylet_kill() {
  start_workload raylet_kill || return
  sleep 3
  kill -9 "${raylet_pid[2]}"
  finish_workload raylet_kill
  daemons_alive "$gcs_pid" "${raylet_pid[0]}" "${raylet_pid[1]}"
  start_node 2 || fail "cannot replace the killed node"
  end_of_run_checks
}
run_raylet_freeze() {
  start_workload raylet_freeze || return
  sleep 2
  local frozen=(${raylet_pid[2]} $(pgrep -P "${raylet_pid[2]}"))
  kill -STOP "${frozen[@]}"
  sleep 8  # past probe interval + suspicion timeout
  kill -CONT "${frozen[@]}" 2>/dev/null
  # Fenced: declared dead, the raylet hears so and leaves, its workers with it.
  local deadline=$((SECONDS + 20))
  while kill -0 "${raylet_pid[2]}" 2>/dev/null && [[ $(ps -o stat= -p "${raylet_pid[2]}") != Z* ]] &&
    ((SECONDS < deadline)); do sleep 0.5; done
  if kill -0 "${raylet_pid[2]}" 2>/dev/null && [[ $(ps -o stat= -p "${raylet_pid[2]}") != Z* ]]; then
    fail "raylet_freeze: the raylet declared dead kept running after it woke"
  fi
  finish_workload raylet_freeze
  daemons_alive "$gcs_pid" "${raylet_pid[0]}" "${raylet_pid[1]}"
  start_node 2 || fail "cannot replace the frozen node"
  end_of_run_checks
}
restart_gcs() {  # restart_gcs STORAGE_DIR: kill -9, then the same command line (same port)
  local storage=$1 port=${address##*:}
  local argv
  mapfile -d '' argv <"/proc/$gcs_pid/cmdline"
  kill -9 "$gcs_pid"
  sleep 2
  local args=() i
  for ((i = 0; i < ${#argv[@]}; i++)); do
    case ${argv[i]} in
      --port) args+=(--port "$port"); i=$((i + 1)) ;;
      --storage-dir) args+=(--storage-dir "$storage"); i=$((i + 1)) ;;
      *) args+=("${argv[i]}") ;;
    esac
  done
  if $netns; then
    ip netns exec "${tag}a" "${args[@]}" >>"$session/logs/gcs_server.out" 2>&1 &
  else
    "${args[@]}" >>"$session/logs/gcs_server.out" 2>&1 &
  fi
  gcs_pid=$!
  echo "$gcs_pid" >"$session/gcs.pid"
}
run_gcs_restart() {
  start_workload gcs_restart || return
  sleep 3
  restart_gcs "$session/storage"
  finish_workload gcs_restart
  daemons_alive "$gcs_pid" "${raylet_pid[@]}"
  end_of_run_checks
}
run_gcs_empty() {
  start_workload gcs_empty || return
  sleep 3
  restart_gcs "$work/empty-storage"
  # Every raylet meets a GCS of another cluster: each must leave, saying why.
  local deadline=$((SECONDS + 30)) p left
  while ((SECONDS < deadline)); do
    left=0
    for p in "${raylet_pid[@]}"; do kill -0 "$p" 2>/dev/null && [[ $(ps -o stat= -p "$p") != Z* ]] && left=$((left + 1)); done
    ((left == 0)) && break
    sleep 0.5
  done
  ((left == 0)) || fail "gcs_empty: $left raylet(s) joined a GCS that serves another cluster"
  grep -qs "serves another cluster" "$session"/logs/raylet*.log "$work"/root*/session_*/logs/raylet*.log ||
    fail "gcs_empty: the raylets did not say why they left"
  finish_workload gcs_empty expect-errors
  daemons_alive "$gcs_pid"
  # A new cluster for the runs after this one.
  stop_cluster
  start_cluster || fail "cannot start a fresh cluster"
}
run_partition() {
  if ! $netns; then echo "SKIP partition: needs network namespaces (root)"; table+=('{"fault":"partition","skipped":"no network namespaces"}'); return; fi
  start_workload partition || return
  sleep 2
  ip -n "${tag}c" link set "${tag}c" down
  sleep 8
  ip -n "${tag}c" link set "${tag}c" up
  finish_workload partition
  daemons_alive "$gcs_pid" "${raylet_pid[0]}" "${raylet_pid[1]}"
  # The cut-off raylet was declared dead; back on the network it hears so and leaves.
  local deadline=$((SECONDS + 20))
  while kill -0 "${raylet_pid[2]}" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
  kill -0 "${raylet_pid[2]}" 2>/dev/null && fail "partition: the node declared dead kept running when reconnected"
  start_node 2 || fail "cannot replace the partitioned node"
  end_of_run_checks
}
run_netem() {
  # netem where the kernel has it; else a token bucket (tbf): a slow link whose queue
  # delays packets and drops those that would wait longer than its latency.
  local shaping=""
  if $netns && ip netns exec "${tag}c" tc qdisc add dev "${tag}c" root netem delay 20ms 10ms loss 2% duplicate 2% 2>/dev/null; then
    shaping="netem: delay 20 ms +- 10 ms, 2% loss, 2% duplicates"
  elif $netns && ip netns exec "${tag}c" tc qdisc add dev "${tag}c" root tbf rate 20mbit burst 32kb latency 30ms 2>/dev/null; then
    shaping="tbf (no netem in this kernel): 20 Mbit/s, packets queued past 30 ms dropped"
  else
    echo "SKIP netem: needs network namespaces and the netem or tbf qdisc"
    table+=('{"fault":"netem","skipped":"no netem"}')
    return
  fi
  echo "    node c's link: $shaping"
  start_workload netem || return
  finish_workload netem
  ip netns exec "${tag}c" tc qdisc del dev "${tag}c" root
  daemons_alive "$gcs_pid" "${raylet_pid[@]}"
  end_of_run_checks
}
mount_small_disk() {  # mount_small_disk DIR SIZE FAULT: a tmpfs for the run, or a skipped row
  mkdir -p "$1"
  if [[ $(id -u) != 0 ]] || ! mount -t tmpfs -o size="$2" tmpfs "$1" 2>/dev/null; then
    echo "SKIP $3: mounting a tmpfs needs root"
    table+=("{\"fault\":\"$3\",\"skipped\":\"no tmpfs\"}")
    return 1
  fi
}
run_tiny_disk() {
  local disk="$work/tinydisk"
  mount_small_disk "$disk" 8m tiny_disk || return
  stop_cluster
  start_cluster --storage-dir "$disk/storage" --min-free-disk-bytes 2097152 || { fail "tiny_disk: cannot start on the small disk"; umount "$disk"; return; }
  start_workload tiny_disk || { umount "$disk"; return; }
  # The disk fills up: the GCS refuses writes (with errors), and must not crash.
  sleep 2
  head -c 7000000 /dev/zero >"$disk/filler" 2>/dev/null
  finish_workload tiny_disk
  daemons_alive "$gcs_pid" "${raylet_pid[@]}"
  # Writes were refused while the disk was full (a named actor needs one), and work
  # with the GCS goes on once there is room again.
  in_node 0 "$build_dir/tests/chaos_workload" --orb-address="$address" --probe-named-actor >"$work/full.out" 2>&1
  grep -q "no space" "$work/full.out" || fail "tiny_disk: a write on a full disk did not fail naming the cause: $(tail -2 "$work/full.out")"
  # A GCS started on the full disk says why and exits (it used to abort inside RocksDB).
  local out rc
  out=$(timeout 30 "$build_dir/bin/gcs_server" --port 0 --storage-dir "$disk/other" --min-free-disk-bytes 2097152 2>&1)
  rc=$?
  [[ $rc != 0 && $out == *"no space left on $disk/other"* ]] ||
    fail "tiny_disk: a GCS started on the full disk did not refuse naming the cause (exit $rc): $out"
  rm -f "$disk/filler"
  in_node 0 "$build_dir/tests/chaos_workload" --orb-address="$address" --probe-named-actor >"$work/room.out" 2>&1 ||
    fail "tiny_disk: the GCS did not take writes again once there was room: $(tail -2 "$work/room.out")"
  stop_cluster
  umount "$disk"
  start_cluster || fail "cannot start a fresh cluster"
}

run_full_spill_disk() {
  local disk="$work/spilldisk"
  mount_small_disk "$disk" 48m full_spill_disk || return
  stop_cluster
  start_cluster --object-spilling-directory "$disk" || { fail "full_spill_disk: cannot start"; umount "$disk"; return; }
  start_workload full_spill_disk --hold-puts || { umount "$disk"; return; }
  finish_workload full_spill_disk
  daemons_alive "$gcs_pid" "${raylet_pid[@]}"
  # The disk did fill: some Puts were refused.
  grep -q '"put_refused":[1-9]' <<<"${table[-1]}" || fail "full_spill_disk: the store and its disk never filled: ${table[-1]}"
  stop_cluster
  umount "$disk"
  start_cluster || fail "cannot start a fresh cluster"
}

# --- the suite
shm_before=$(ls /dev/shm 2>/dev/null | grep '^orb-' | sort)
cleanup() {
  stop_cluster
  pkill -9 -f "$work/" 2>/dev/null
  teardown_network
  mountpoint -q "$work/tinydisk" 2>/dev/null && umount "$work/tinydisk"
  mountpoint -q "$work/spilldisk" 2>/dev/null && umount "$work/spilldisk"
  [[ -n ${ORB_CHAOS_KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
setup_network
echo "chaos: 3 nodes on $($netns && echo "network namespaces" || echo loopback), $seconds s of work per run"
start_cluster || { echo "cannot start the cluster"; exit 1; }
for fault in "${faults[@]}"; do
  echo "--- $fault"
  started=$SECONDS
  "run_$fault"
  echo "    ($((SECONDS - started)) s)"
done
stop_cluster

# Nothing left behind: no orb process of this suite, no shared-memory file.
sleep 1
leftover=$(pgrep -af "$build_dir/(bin|tests)/" | grep -v "chaos_test.sh" || true)
[[ -z $leftover ]] || fail "processes left after the cluster stopped: $leftover"
shm_after=$(ls /dev/shm 2>/dev/null | grep '^orb-' | sort)
new_shm=$(comm -13 <(echo "$shm_before") <(echo "$shm_after") | grep . || true)
[[ -z $new_shm ]] || fail "/dev/shm files left after the cluster stopped: $new_shm"

echo
printf '%-14s %9s %9s %6s %10s %6s %11s\n' fault submitted completed lost duplicated wrong resubmitted
for row in "${table[@]}"; do
  field() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" <<<"$row"; }
  name=$(sed -n 's/.*"fault":"\([^"]*\)".*/\1/p' <<<"$row")
  if grep -q skipped <<<"$row"; then printf '%-14s %s\n' "$name" "skipped"; continue; fi
  printf '%-14s %9s %9s %6s %10s %6s %11s\n' "$name" "$(field submitted)" "$(field completed)" "$(field lost)" \
    "$(field duplicated)" "$(field wrong)" "$(field resubmitted)"
done
if ((failures > 0)); then
  echo "chaos: $failures failure(s)"
  exit 1
fi
echo "chaos: passed"
