#!/usr/bin/env bash
# The GPU checks, for a machine with an NVIDIA GPU: builds orb with CUDA and NCCL, then
# runs tests/gpu/nccl_check (a one-rank NCCL allreduce on device memory, and
# CUDA_VISIBLE_DEVICES set for a task that asks for GPU: 1), then reads the GPU metrics
# (NVML) from a raylet's /metrics, and, where MPS is installed, runs two half-GPU tasks
# under an MPS control daemon with their shares. Not part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi -L
make build
build/tests/gpu/nccl_check

# GPU metrics through NVML: a raylet's /metrics has utilisation and memory per GPU.
export ORB_TEMP_DIR=$(mktemp -d)
trap 'build/bin/orb stop --force >/dev/null 2>&1 || true; rm -rf "$ORB_TEMP_DIR"' EXIT
address=$(build/bin/orb start --head --port 0 | sed -n 's/^  GCS address: *//p')
target=$(build/bin/orb metrics targets --address "$address" |
  /usr/bin/python3 -c 'import json,sys; print([t for g in json.load(sys.stdin) if g["labels"]["orb_component"] == "raylet" for t in g["targets"]][0])')
metrics=$(curl -sf "http://$target/metrics")
grep -E '^orb_gpu_memory_total_bytes\{gpu="0"' <<<"$metrics"
grep -E '^orb_gpu_utilization_ratio\{gpu="0"' <<<"$metrics"
echo "gpu_check: NVML metrics ok"

# MPS: a control daemon of our own, then two half-GPU tasks that each get a 50% share.
if command -v nvidia-cuda-mps-control >/dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=$ORB_TEMP_DIR/mps-pipe CUDA_MPS_LOG_DIRECTORY=$ORB_TEMP_DIR/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d
  trap 'echo quit | nvidia-cuda-mps-control || true; build/bin/orb stop --force >/dev/null 2>&1 || true; rm -rf "$ORB_TEMP_DIR"' EXIT
  build/bin/orb stop --force >/dev/null 2>&1 || true
  build/tests/gpu/nccl_check --mps
else
  echo "gpu_check: no nvidia-cuda-mps-control here: MPS check skipped"
fi
