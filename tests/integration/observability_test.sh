#!/usr/bin/env bash
# Observability as an operator and a developer see it, on a 2-node `orb start` cluster
# after a workload (observability_driver): a real Prometheus scrapes every daemon's
# /metrics (found by `orb metrics targets`) and its HTTP API answers what the workload
# did; `orb list` shows and filters every kind; `orb summary`, `orb get`; the C++
# orb::state; `orb timeline` writes a Chrome trace with one event per task run; `orb
# logs` finds an actor's log; the dashboard, loaded page by page in headless Chromium,
# shows the cluster (DOM checked, screenshots in build/test-output/observability/).
set -euo pipefail
trap 'echo "observability_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build_dir=$1
orb="$build_dir/bin/orb"
driver="$build_dir/tests/observability_driver"
python=/usr/bin/python3
export ORB_TEMP_DIR=$(mktemp -d)
out_dir="$build_dir/test-output/observability"
rm -rf "$out_dir" && mkdir -p "$out_dir"
prom_pid=""
cleanup() {
  [[ -n $prom_pid ]] && kill "$prom_pid" 2>/dev/null || true
  "$orb" stop --force >/dev/null 2>&1 || true
  rm -rf "$ORB_TEMP_DIR"
}
trap cleanup EXIT
command -v prometheus >/dev/null && command -v promtool >/dev/null || {
  echo "prometheus and promtool are needed (make deps installs Debian's prometheus)"; exit 1; }
# A JSON document on stdin, read by a Python expression over `d`.
jq_py() { "$python" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# Structured daemon logs (JSON lines with the IDs as fields), checked below.
export ORB_LOG_FORMAT=json
start=$("$orb" start --head --port 0 --num-cpus 2)
session=$(sed -n 's/^  session: *//p' <<<"$start")
address=$(sed -n 's/^  GCS address: *//p' <<<"$start")
"$orb" start --address "$address" --num-cpus 1 --resources '{"far": 1}' >/dev/null

echo "--- the workload, and the state API from C++"
workload=$("$driver" --orb-address="$address" 2>"$out_dir/driver.err") || { echo "$workload"; cat "$out_dir/driver.err"; exit 1; }
echo "$workload"
cat "$out_dir/driver.err"
grep -q "squares 2470" <<<"$workload"
grep -q "failed TaskError" <<<"$workload"
grep -q "far 2097152" <<<"$workload"
grep -q "keeper 5" <<<"$workload"
grep -q "state failed=1 error=.*observability boom" <<<"$workload"
grep -q "state nodes=2" <<<"$workload"
grep -q "bad filter: .*'colour'.*known: task_id" <<<"$workload"
# The workers' output on the driver's stderr, with where it came from (Ray's log_to_driver).
grep -Eq "^\(pid=[0-9]+, node=[0-9a-f]{8}\) exploding now$" "$out_dir/driver.err"
grep -Eq "^\(Keeper pid=[0-9]+, node=[0-9a-f]{8}\) keeper served 5$" "$out_dir/driver.err"
sleep 2  # the workers' last task events (sent every second)

echo "--- orb list: every kind, filtered, as table, JSON and YAML"
list() { "$orb" list "$@" --address "$address"; }
[[ $(list nodes --format json | jq_py 'len(d)') == 2 ]]
[[ $(list nodes --filter state=ALIVE --filter 'resources_total!={}' --format json | jq_py 'len(d)') == 2 ]]
[[ $(list nodes --filter state=DEAD --format json | jq_py 'len(d)') == 0 ]]
grep -q "METRICS_EXPORT_PORT" <<<"$(list nodes)"
[[ $(list jobs --filter state=FINISHED --format json | jq_py 'len(d)') == 1 ]]
grep -q "Keeper.*ALIVE.*obs-keeper" <<<"$(list actors --filter state=ALIVE)"
[[ $(list actors --filter name=obs-keeper --format json | jq_py 'd[0]["state"]') == ALIVE ]]
[[ $(list actors --filter state=DEAD --format json | jq_py 'len(d)') == 0 ]]
[[ $(list placement-groups --filter name=obs-group --format json | jq_py 'd[0]["state"]') == REMOVED ]]
workers=$(list workers --format json)
[[ $(jq_py 'len([w for w in d if w["state"] == "LEASED"]) >= 1' <<<"$workers") == True ]]
[[ $(list workers --filter state=STARTING --format json | jq_py 'len(d)') == 0 ]]
[[ $(list objects --filter state=IN_STORE --format json | jq_py 'sum(o["size_bytes"] for o in d) >= 2 << 20') == True ]]
grep -q 'state: "IN_STORE"' <<<"$(list objects --format yaml)"

tasks=$(list tasks --format json)
[[ $(jq_py 'len([t for t in d if t["name"].endswith("Square") and t["state"] == "FINISHED"])' <<<"$tasks") == 20 ]]
[[ $(list tasks --filter state=FAILED --format json | jq_py 'd[0]["error_type"]') == TASK_ERROR ]]
[[ $(list tasks --filter state=FAILED --format json | jq_py '"observability boom" in d[0]["error_message"]') == True ]]
[[ $(list tasks --filter type=ACTOR_TASK --format json | jq_py 'len(d)') == 2 ]]
[[ $(list tasks --filter state!=FINISHED --filter state!=FAILED --format json | jq_py 'len(d)') == 0 ]]
far_node=$(list nodes --format json | jq_py '[n["node_id"] for n in d if "far" in n["resources_total"]][0]')
[[ $(jq_py "[t['node_id'] for t in d if t['name'].endswith('SizeOf')][0]" <<<"$tasks") == "$far_node" ]]
[[ $(list tasks --limit 3 --format json 2>/dev/null | jq_py 'len(d)') == 3 ]]
grep -q "3 of .* shown" <<<"$(list tasks --limit 3 2>&1 >/dev/null)"
if list tasks --filter colour=red 2>"$out_dir/err"; then echo "a bad filter key must fail"; exit 1; fi
grep -q "bad filter key 'colour'" "$out_dir/err"
if list tasks --filter nonsense 2>"$out_dir/err"; then echo "a filter without = must fail"; exit 1; fi
grep -q "expected key=value" "$out_dir/err"

echo "--- orb summary, orb get"
summary=$("$orb" summary tasks --address "$address")
echo "$summary"
grep -q "Square.* 20 .*FINISHED: 20" <<<"$summary"
grep -q "Keeper.*ALIVE: 1" <<<"$("$orb" summary actors --address "$address")"
actor_id=$(list actors --filter name=obs-keeper --format json | jq_py 'd[0]["actor_id"]')
grep -q 'class_name: "Keeper"' <<<"$("$orb" get actor "$actor_id" --address "$address")"
if "$orb" get actor 00ff --address "$address" 2>/dev/null; then echo "an unknown actor must fail"; exit 1; fi

echo "--- orb timeline: a Chrome trace, one complete event per task run"
"$orb" timeline --address "$address" --output "$out_dir/trace.json"
ran=$(list tasks --format json | jq_py 'len([t for t in d if t["start_time_ms"] > 0])')
[[ $(jq_py 'len([e for e in d["traceEvents"] if e["ph"] == "X" and e["cat"].endswith("TASK")])' <"$out_dir/trace.json") == "$ran" ]]
[[ $(jq_py 'all(e["dur"] >= 0 and e["ts"] > 0 for e in d["traceEvents"] if e["ph"] == "X")' <"$out_dir/trace.json") == True ]]
[[ $(jq_py 'len([e for e in d["traceEvents"] if e.get("cat") == "transfer" and e["args"]["bytes"] >= 2 << 20])' \
  <"$out_dir/trace.json") -ge 1 ]]

echo "--- orb logs: the files, and an actor's log found by its ID"
grep -q "gcs_server.log" <<<"$("$orb" logs --address "$address")"
[[ $("$orb" logs --actor "$actor_id" --address "$address") == *"keeper served 5"* ]]
[[ $("$orb" logs --actor "$actor_id" --tail 1 --address "$address") == "keeper served 5" ]]
if "$orb" logs --actor ffff --address "$address" 2>"$out_dir/err"; then echo "an unknown actor must fail"; exit 1; fi
grep -q "no actor with ID ffff" "$out_dir/err"
if "$orb" logs ../token --address "$address" 2>"$out_dir/err"; then echo "a path must not be read"; exit 1; fi
grep -q "not a file name" "$out_dir/err"

echo "--- structured daemon logs: JSON lines, the IDs they are about as fields"
[[ $("$python" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
print(any(l.get("actor_id") == sys.argv[2] and l["component"] == "gcs_server" and "alive" in l["message"] for l in lines)
      and all({"time", "level", "pid", "message"} <= l.keys() for l in lines))' "$session/logs/gcs_server.log" "$actor_id") == True ]]
grep -q '"job_id":"00000001"' "$session"/logs/raylet-*.log

echo "--- the dashboard in headless Chromium: every page, against the live cluster"
dashboard=$(sed -n 's/^  dashboard: *//p' <<<"$start")
[[ $dashboard == http://*"/?token="* ]]
base=${dashboard%%\?*}
[[ $(curl -s -o /dev/null -w '%{http_code}' "${base}api/summary") == 401 ]]
[[ $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer wrong" "${base}api/summary") == 401 ]]
[[ $(curl -sf "${dashboard/\?token=/api/summary?token=}" | jq_py 'len([n for n in d["nodes"] if n["state"] == "ALIVE"])') == 2 ]]
browse() {  # browse <page> <what>: the page's DOM after its scripts ran, and a screenshot
  local flags=(--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars
    --user-data-dir="$ORB_TEMP_DIR/chromium" --virtual-time-budget=8000 --window-size=1280,900)
  timeout 60 chromium "${flags[@]}" --dump-dom "$dashboard#/$1" 2>/dev/null >"$out_dir/dashboard-$2.html"
  timeout 60 chromium "${flags[@]}" --screenshot="$out_dir/dashboard-$2.png" "$dashboard#/$1" >/dev/null 2>&1
  [[ -s "$out_dir/dashboard-$2.png" ]]
}
page_has() { grep -q -- "$2" "$out_dir/dashboard-$1.html" || { echo "dashboard page $1 lacks: $2"; exit 1; }; }
browse overview overview
page_has overview 'id="nodes-alive"><div class="value">2<'
page_has overview 'id="actors-alive"><div class="value">1<'
page_has overview 'id="tasks-failed"><div class="value">1<'
page_has overview '<polyline'
browse nodes nodes
[[ $(grep -o 'class="state-ALIVE">ALIVE' "$out_dir/dashboard-nodes.html" | wc -l) == 2 ]]
page_has nodes "far: 1"
browse actors actors
page_has actors 'obs-keeper'
page_has actors 'class="state-ALIVE">ALIVE'
browse "tasks?filter=state%3DFAILED" tasks-failed
page_has tasks-failed 'observability boom'
page_has tasks-failed '>1 of 1<'
browse tasks tasks
page_has tasks 'Square'
browse placement-groups placement-groups
page_has placement-groups 'obs-group'
browse jobs jobs
page_has jobs 'class="state-FINISHED">FINISHED'
browse workers workers
page_has workers 'class="state-LEASED">LEASED'
keeper_log=$("$orb" list actors --filter name=obs-keeper --format json --address "$address" | jq_py '"worker-" + d[0]["worker_id"][:12] + ".log"')
keeper_node=$("$orb" list actors --filter name=obs-keeper --format json --address "$address" | jq_py 'd[0]["node_id"]')
browse "logs?node=$keeper_node&file=$keeper_log" logs
page_has logs 'keeper served 5'
browse metrics metrics
page_has metrics '<svg'

echo "--- /metrics of every daemon, checked by Prometheus's own parser"
"$orb" metrics targets --address "$address" --output "$out_dir/targets.json"
[[ $(jq_py 'len(d)' <"$out_dir/targets.json") == 3 ]]
for target in $(jq_py '" ".join(t for g in d for t in g["targets"])' <"$out_dir/targets.json"); do
  curl -sf "http://$target/metrics" >"$out_dir/metrics-$target.txt"
  promtool check metrics <"$out_dir/metrics-$target.txt"
done

echo "--- a real Prometheus scrapes them"
prom_port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$out_dir/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: orb
    file_sd_configs:
      - files: ["$out_dir/targets.json"]
YAML
prometheus --config.file="$out_dir/prometheus.yml" --storage.tsdb.path="$ORB_TEMP_DIR/prometheus" \
  --web.listen-address="127.0.0.1:$prom_port" >"$out_dir/prometheus.log" 2>&1 &
prom_pid=$!
query() {  # query <PromQL>: the first sample's value, or "" while there is none
  curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" |
    jq_py '(d["data"]["result"][0]["value"][1] if d["data"]["result"] else "")' 2>/dev/null || true
}
for _ in $(seq 1 150); do
  [[ $(query 'count(up == 1)') == 3 ]] && break
  sleep 0.2
done
[[ $(query 'count(up == 1)') == 3 ]] || { cat "$out_dir/prometheus.log"; exit 1; }

finished=$(list tasks --filter state=FINISHED --format json | jq_py 'len(d)')
[[ $(query 'sum(orb_tasks_finished_total)') == "$finished" ]]
[[ $(query 'sum(orb_tasks_failed_total)') == 1 ]]
[[ $(query 'orb_tasks{state="FINISHED"}') == "$finished" ]]
[[ $(query 'sum(orb_cluster_nodes{state="ALIVE"})') == 2 ]]
[[ $(query 'sum(orb_actors{state="ALIVE"})') == 1 ]]
used=$("$orb" memory --format json --address "$address" | jq_py 'sum(n["used_bytes"] for n in d["nodes"])')
[[ $(query 'sum(orb_object_store_used_bytes)') == "$used" ]]
[[ $(query 'sum(orb_object_store_used_bytes) >= 2097152') != "" ]]
[[ $(query 'sum(orb_object_store_capacity_bytes) > 0') != "" ]]
[[ $(query 'sum(orb_object_transfer_received_bytes_total) >= 2097152') != "" ]]
[[ $(query 'sum(orb_object_transfer_sent_bytes_total) >= 2097152') != "" ]]
[[ $(query 'sum(orb_leases_granted_total) >= 3') != "" ]]
[[ $(query 'sum(orb_workers{state="LEASED"}) >= 1') != "" ]]
[[ $(query 'sum(orb_gossip_rounds_total) > 0') != "" ]]
[[ $(query 'sum(orb_gossip_members{state="ALIVE"}) >= 2') != "" ]]
# RPC latency by method, from the histograms: the GCS took the task events; the
# workers ran the pushed tasks (their series merged in by their raylet).
[[ $(query 'sum(orb_rpc_server_latency_seconds_count{method="AddTaskEvents"}) > 0') != "" ]]
[[ $(query 'sum(orb_rpc_server_latency_seconds_count{method="RequestWorkerLease"}) >= 3') != "" ]]
[[ $(query 'sum(orb_rpc_server_latency_seconds_count{method="PushTasks"}) >= 3') != "" ]]
# The keeper actor's user metric, through its raylet.
[[ $(query 'sum(orb_obs_requests_total{route="/serve"})') == 5 ]]

echo "--- ORB_LOG_TO_DRIVER=0: a driver without its workers' output (last: a second workload)"
quiet=$(ORB_LOG_TO_DRIVER=0 "$driver" --orb-address="$address" 2>&1) || { echo "$quiet"; exit 1; }
grep -q "keeper 5" <<<"$quiet"
if grep -q "keeper served" <<<"$quiet"; then echo "ORB_LOG_TO_DRIVER=0 still printed workers' lines"; exit 1; fi
echo "observability_test: ok"
