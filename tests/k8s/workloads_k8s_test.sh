#!/usr/bin/env bash
# The two workloads on an autoscaled cluster of pods (examples/on_fake_k8s.sh: the fake
# API server, `orb up`): the RL job's placement groups bring up CPU and GPU worker pods,
# it loses a rollout worker and a learner, and then the learners' whole pod, and still
# ends with the policy of an undisturbed run on the embedded default (after the pod, the
# autoscaler brings up another), and the pods are given back; the inference pool's growth
# brings up a CPU worker pod, which goes again once the pool shrinks.
#   workloads_k8s_test.sh BUILD_DIR
set -euo pipefail
trap 'echo "workloads_k8s_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
on_k8s=$HERE/../../examples/on_fake_k8s.sh

echo "--- reinforcement learning: undisturbed on the embedded default, then on pods with two actors killed"
ORB_TEMP_DIR=$work/embedded ORB_BIN_DIR=$BUILD/bin "$BUILD/examples/rl_training" --iterations=30 2>/dev/null >"$work/embedded.out"
"$on_k8s" "$BUILD" "$BUILD/examples/rl_training" --iterations=30 --kill-at-iteration=10 2>"$work/rl.err" | tee "$work/rl.out"
grep -Eq '^pods: head=1 cpu_worker=[1-9] gpu_worker=1$' "$work/rl.out"  # the groups brought pods up
grep -q '"stage": "rebuild", "iteration": 10' "$work/rl.out"
grep -q '"stage": "released", "rebuilds": 1' "$work/rl.out"
[[ $(grep '^policy:' "$work/rl.out") == $(grep '^policy:' "$work/embedded.out") ]]
[[ $(tail -1 "$work/rl.out") == "pods: head=1 cpu_worker=0 gpu_worker=0" ]]  # and given back

echo "--- reinforcement learning: the learners' GPU pod deleted under the job; a new one comes, training resumes"
ORB_TEMP_DIR=$work/embedded ORB_BIN_DIR=$BUILD/bin "$BUILD/examples/rl_training" --iterations=40 2>/dev/null >"$work/embedded40.out"
DELETE_POD_TYPE=gpu_worker DELETE_POD_AFTER_S=4 "$on_k8s" "$BUILD" "$BUILD/examples/rl_training" --iterations=40 \
  --iteration-pause-ms=200 2>"$work/node.err" | tee "$work/node.out"
grep -q '^deleted pod/' "$work/node.out"
grep -q '"stage": "rebuild"' "$work/node.out"
# After the deletion the autoscaler brought a GPU pod up again.
sed -n '/^deleted pod/,$p' "$work/node.out" | grep -Eq '^pods: head=1 cpu_worker=[1-9] gpu_worker=1$'
[[ $(grep '^policy:' "$work/node.out") == $(grep '^policy:' "$work/embedded40.out") ]]
[[ $(tail -1 "$work/node.out") == "pods: head=1 cpu_worker=0 gpu_worker=0" ]]

echo "--- inference: the pool grows onto a new pod, then shrinks and the pod goes"
"$on_k8s" "$BUILD" "$BUILD/examples/inference_demo" --loads=120 --duration-s=6 --servers=1 --max-servers=2 \
  --scale-pool --scale-up-queue=4 --idle-tail-s=4 --schedulers=continuous 2>"$work/inference.err" |
  tee "$work/inference.out"
grep -q '"event": "pool_grew", "servers": 2' "$work/inference.out"
grep -Eq '^pods: head=1 cpu_worker=1 gpu_worker=0$' "$work/inference.out"
grep -q '"servers": 2, "servers_end": 1}' "$work/inference.out"
[[ $(tail -1 "$work/inference.out") == "pods: head=1 cpu_worker=0 gpu_worker=0" ]]
echo "workloads_k8s_test: PASS"
