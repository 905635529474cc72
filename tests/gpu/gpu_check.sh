#!/usr/bin/env bash
# The GPU checks, for a machine with an NVIDIA GPU: builds orb with CUDA and NCCL, then
# runs tests/gpu/nccl_check (a one-rank NCCL allreduce on device memory, and
# CUDA_VISIBLE_DEVICES set for a task that asks for GPU: 1). Not part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi -L
make build
build/tests/gpu/nccl_check
