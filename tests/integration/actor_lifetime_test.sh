#!/usr/bin/env bash
# Actor lifetimes across jobs on an `orb start` cluster: a detached actor outlives the
# driver that made it; an owned one dies with its driver, whether the driver shuts down
# or dies; `orb list actors` shows both; the GCS killed and restarted loses no actor.
set -euo pipefail
trap 'echo "actor_lifetime_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build_dir=$1
orb="$build_dir/bin/orb"
driver="$build_dir/tests/actor_driver"
export ORB_TEMP_DIR=$(mktemp -d)
trap '"$orb" stop --force >/dev/null 2>&1 || true; rm -rf "$ORB_TEMP_DIR"' EXIT

start=$("$orb" start --head --port 0 --num-cpus 2)
address=$(sed -n 's/^  GCS address: *//p' <<<"$start")
session=$(sed -n 's/^  session: *//p' <<<"$start")
# One namespace for every run: by default each job has its own, as in Ray.
run() { "$driver" --orb-address="$address" --orb-namespace=lifetime "$@" 2>&1; }
wait_for() {  # wait_for <expected output> <driver args...>
  local want=$1; shift
  for _ in $(seq 1 100); do
    out=$(run "$@")
    [[ $out == *"$want"* ]] && return 0
    sleep 0.2
  done
  echo "expected '$want' from '$*', got: $out"; return 1
}

[[ $(run create-detached keeper) == *"value 6"* ]]
[[ $(run create-owned owned) == *"value 6"* ]]
[[ $(run create-owned-and-die orphan) == *"value 6"* ]]

echo "--- the detached actor outlives its driver; the owned ones died with theirs"
[[ $(run call keeper) == *"value 7"* ]]
wait_for "not found" call owned
wait_for "not found" call orphan
actors=$("$orb" list actors)
echo "$actors"
grep -q "keeper .*ALIVE" <<<"$actors" || grep -q "ALIVE *keeper" <<<"$actors"
[[ $(grep -c "DEAD" <<<"$actors") -ge 2 ]]
grep -q "owner" <<<"$actors"
# The dead actors' processes are gone; the detached actor's remains.
for _ in $(seq 1 50); do
  [[ $(pgrep -c -f -- "$driver --orb-worker-mode" || true) == 1 ]] && break
  sleep 0.2
done
[[ $(pgrep -c -f -- "$driver --orb-worker-mode" || true) == 1 ]] || { pgrep -a -f -- "$driver"; exit 1; }

echo "--- a placement group ends with its job, a detached one stays; each holds both CPUs"
[[ $(run create-group job-group) == *"group CREATED"* ]]
[[ $(run create-group job-group-again) == *"group CREATED"* ]]  # the first one's CPUs came back
[[ $(run create-detached-group kept-group) == *"group CREATED"* ]]
[[ $(run group-state kept-group) == *"group CREATED"* ]]
[[ $(run group-state job-group) == *"not found"* ]]
groups=$("$orb" list placement-groups)
echo "$groups"
[[ $(grep -c "REMOVED" <<<"$groups") -ge 2 ]]

echo "--- a driver killed while another node runs its task: that node reclaims the lease"
"$orb" start --address "$address" --num-cpus 1 --resources '{"far": 1}' >/dev/null
"$driver" --orb-address="$address" hold-far "$ORB_TEMP_DIR/holding" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 1 100); do [[ -e "$ORB_TEMP_DIR/holding" ]] && break; sleep 0.1; done
[[ -e "$ORB_TEMP_DIR/holding" ]]
grep -q "1.0/1.0 far" <<<"$("$orb" status)"
kill -9 "$holder"
wait "$holder" 2>/dev/null || true
for _ in $(seq 1 100); do
  grep -q "0.0/1.0 far" <<<"$("$orb" status)" && break
  sleep 0.2
done
"$orb" status | grep far
grep -q "0.0/1.0 far" <<<"$("$orb" status)"

echo "--- a driver killed while a detached actor borrows its object: the actor's Get says"
echo "    OwnerDiedError naming the owner; the driver's objects and leases are reclaimed"
store_line() { "$orb" status | grep object_store_memory; }
cpu_line() { "$orb" status | grep ' CPU$'; }
store_before=$(store_line)
cpu_before=$(cpu_line)
workers_before=$(pgrep -c -f -- "$driver --orb-worker-mode" || true)
"$driver" --orb-address="$address" --orb-namespace=lifetime lend lender >"$ORB_TEMP_DIR/lend.out" 2>&1 &
lender=$!
for _ in $(seq 1 150); do grep -q lent "$ORB_TEMP_DIR/lend.out" && break; sleep 0.2; done
grep -q lent "$ORB_TEMP_DIR/lend.out" || { cat "$ORB_TEMP_DIR/lend.out"; exit 1; }
[[ $(run read-kept lender) == *"sum 134217728"* ]]
wait_for_status() {  # wait_for_status <function> <expected line>
  for _ in $(seq 1 100); do [[ $($1) == "$2" ]] && return 0; sleep 0.2; done
  echo "expected '$2', got '$($1)'"; return 1
}
for _ in $(seq 1 100); do  # its object and its lease show
  [[ $(store_line) != "$store_before" && $(cpu_line) != "$cpu_before" ]] && break
  sleep 0.2
done
[[ $(store_line) != "$store_before" && $(cpu_line) != "$cpu_before" ]]
kill -9 "$lender"
wait "$lender" 2>/dev/null || true
read_out=$(run read-kept lender)
echo "$read_out"
[[ $read_out == *"OwnerDiedError: "*"its owner at "*" died"* ]]
wait_for_status store_line "$store_before"
wait_for_status cpu_line "$cpu_before"
# Of its processes only the detached actor's remains (the leased worker was stopped).
worker_count() { pgrep -c -f -- "$driver --orb-worker-mode" || true; }
wait_for_status worker_count $((workers_before + 1))

echo "--- the GCS killed and restarted on its storage keeps the actor table; an actor that"
echo "    died while it was down is restarted, not left to hang its callers"
[[ $(run create-restartable phoenix) == *"value 6"* ]]
phoenix_pid=$(run pid phoenix | sed -n 's/^pid //p')
[[ -n $phoenix_pid ]]
gcs=$(cat "$session/gcs.pid")
port=${address##*:}
kill -9 "$gcs"
kill -9 "$phoenix_pid"
sleep 4  # the raylet reports the death to a GCS that is not there, longer than it once tried
"$build_dir/bin/gcs_server" --port "$port" --token-file "$session/token" --storage-dir "$session/storage" \
  >"$session/logs/gcs-restarted.out" 2>&1 &
echo $! >"$session/gcs.pid"
disown
wait_for "value 8" call keeper
wait_for "value 6" call phoenix  # restarted: its constructor ran again
actors=$("$orb" list actors)
echo "$actors"
[[ $(grep -c "DEAD" <<<"$actors") -ge 2 ]]

echo "--- a GCS restarted on empty storage is another cluster: the nodes leave it, workers and all"
gcs=$(cat "$session/gcs.pid")
kill -9 "$gcs"
"$build_dir/bin/gcs_server" --port "$port" --token-file "$session/token" --storage-dir "$session/storage-empty" \
  >"$session/logs/gcs-empty.out" 2>&1 &
echo $! >"$session/gcs.pid"
disown
for _ in $(seq 1 100); do
  pgrep -f -- "--session-dir $session" >/dev/null || break
  sleep 0.2
done
if pgrep -af -- "--session-dir $session"; then echo "a raylet stayed with the new cluster"; exit 1; fi
grep -q "serves another cluster" "$session"/logs/raylet-*.log
for _ in $(seq 1 50); do
  [[ $(pgrep -c -f -- "$driver --orb-worker-mode" || true) == 0 ]] && break
  sleep 0.2
done
if pgrep -af -- "$driver --orb-worker-mode"; then echo "workers of the old cluster leaked"; exit 1; fi
echo "actor lifetime test passed"
