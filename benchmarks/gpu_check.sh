#!/usr/bin/env bash
# The GPU checks behind BENCHMARKS.md's CUDA section, in one pass, on a CUDA machine.
#
#   bash benchmarks/gpu_check.sh OUT_DIR [SECONDS]
#
# Runs, each under its own time limit, within SECONDS in all (default 500):
#   1. the CUDA tests (the ones that skip on a CPU-only machine), then
#   2. benchmarks/cuda_syncs.py (host-device syncs per iteration, by kind of iteration),
#   3. benchmarks/runner_overhead.py --device cuda, MLP and ResNet-18-shaped workloads,
#   4. benchmarks/layer_profiler_coverage.py --device cuda,
#   5. the whole test suite, in the time that is left.
# Writes OUT_DIR/tests_cuda.log, OUT_DIR/bench.log and OUT_DIR/tests_all.log. Uses `python3`
# (or $PYTHON) with hookline taken from ./src; Ignite, MMEngine and Lightning rows appear where
# those packages are installed.
set -u
out=${1:?usage: gpu_check.sh OUT_DIR [SECONDS]}
budget=${2:-500}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" KERAS_BACKEND=torch PYTHONUNBUFFERED=1
bench="$out/bench.log"
SECONDS=0

# step LOG LIMIT CMD...: runs CMD with LIMIT seconds at most, appending its output to LOG
step() {
  local log=$1 limit=$2
  shift 2
  echo "== $(date +%T) [${SECONDS}s] $*" | tee -a "$log"
  timeout -k 5 "$limit" "$@" >>"$log" 2>&1
  echo "== exit $? after ${SECONDS}s" | tee -a "$log"
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  "$py" -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda)'
  nproc; } >>"$bench" 2>&1

step "$out/tests_cuda.log" 110 "$py" -m pytest -q -n 4 -rs -p no:cacheprovider \
  tests/engine/test_amp_cuda.py tests/inspect/test_profiler_cuda.py tests/hooks/test_host_syncs.py \
  tests/hooks/test_memory.py tests/hooks/test_invalid_loss.py tests/hooks/test_profiler.py \
  tests/hooks/test_optimizer.py tests/engine/test_fast_batches.py tests/engine/test_rng.py \
  tests/engine/test_environment.py \
  "tests/engine/test_distributed.py::test_torchrun_with_one_process_trains_checkpoints_and_resumes"
step "$bench" 60 "$py" benchmarks/cuda_syncs.py
contenders=(plain plain-prebatched hookline hookline-fast-data hookline-lean ignite mmengine lightning)
step "$bench" 110 "$py" benchmarks/runner_overhead.py --device cuda --repeat 3 --only "${contenders[@]}"
step "$bench" 110 "$py" benchmarks/runner_overhead.py --device cuda --workload resnet18 --repeat 2 \
  --only "${contenders[@]}"
step "$bench" 40 "$py" benchmarks/layer_profiler_coverage.py --device cuda
left=$((budget - SECONDS - 10))
if [ "$left" -gt 30 ]; then
  step "$out/tests_all.log" "$left" "$py" -m pytest -q -n 14 -p no:cacheprovider --timeout=120
else
  echo "no time left for the whole suite (${SECONDS}s of ${budget}s used)" | tee -a "$bench"
fi
