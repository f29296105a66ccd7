#!/usr/bin/env bash
# The GPU check: one call on a GPU machine builds the Qt-free targets with
# CMake + ninja and runs strata-gpu-check on gpu:0, in this order: every CUDA
# operation against the CPU backend; the error messages (a GPU the machine
# lacks, device memory exhausted); a full training step and 50 SGD steps
# against the CPU, graph replay against op by op, mirrored x2 on one GPU and
# four replicas through NCCL against one_device; across GPUs where there are
# two or more (mirrored, mixed placement, synchronised batch norm, NCCL bus
# bandwidth); the Fashion-MNIST MLP and CNN; then the benchmark tables beside
# PyTorch (bench/pytorch_gpu_peer.py: the MLP and the CNN) when the machine
# has it. Then the differential suite against PyTorch with the engine on
# gpu:0, and last, each in a process of its own, the CNN's throughput with
# TF32 (STRATA_TF32=1) and with non-deterministic convolutions
# (STRATA_DETERMINISTIC=0) beside PyTorch's (appended to the report).
#
#   scripts/gpu-check.sh [DEPS_DIR]
#
# DEPS_DIR (default gpu-carry/, made by scripts/gpu-carry.sh) holds the
# header-only dependencies and the Fashion-MNIST files. Results go to $OUT
# (default gpu-check-out/): gpu-report.md (commit it as docs/gpu-report.md),
# gpu-check.log (everything printed), pytorch_gpu_peer.jsonl.
# Exit status: 0 when every check passed, 1 when one failed, 2 when nothing
# was checked (gpu:0 cannot be opened: no GPU or no driver, named in the
# log), 3 when the build failed or the carried folder is missing.
#
# GPU_CHECK_BUDGET (seconds, default 340) is the whole run's time: the
# differential suite gets what is left of it. Under 6 minutes, build
# included, so that on a GPU machine lent for 15 minutes (its start
# counted) a fix and a second run still fit; a session that wants one
# longer run instead can give up to 560 (the machine's 10-minute limit for
# one command, less its start and the copies).
#
# GPU_CHECK_PEER_FILE (a pytorch_gpu_peer.jsonl an earlier run wrote) gives
# the benchmark tables PyTorch's figures without measuring them again, for a
# second run on a lease too short for both.
#
# GPU_CHECK_SECTIONS (default: everything) narrows a second run to what the
# first one left failing or unfinished: a comma-separated list of
# strata-gpu-check's sections (--list-sections), plus `vs-torch` for the
# differential suite, `bench-tf32` for the TF32 table and `bench-nondet` for
# the table with non-deterministic convolutions; e.g.
# GPU_CHECK_SECTIONS=training,bench GPU_CHECK_BUDGET=200.
set -uo pipefail
# A relative GPU_CHECK_PEER_FILE names a file from where the script was started.
peer_file="${GPU_CHECK_PEER_FILE:-}"
[ -n "$peer_file" ] && [ "${peer_file#/}" = "$peer_file" ] && peer_file="$PWD/$peer_file"
cd "$(dirname "$0")/.."
budget="${GPU_CHECK_BUDGET:-340}"
wanted="${GPU_CHECK_SECTIONS:-}"
# Whether part $1 runs: all of them unless GPU_CHECK_SECTIONS names some.
runs() { [ -z "$wanted" ] || [[ ",$wanted," == *",$1,"* ]]; }
# The strata-gpu-check sections named (vs-torch, bench-tf32 and bench-nondet
# are this script's: the last two run in processes of their own).
check_sections=$(echo "$wanted" | tr ',' '\n' | grep -v -x -e vs-torch -e bench-tf32 -e bench-nondet | paste -sd, -)
t0=$(date +%s)
left() { echo $((budget - ($(date +%s) - t0))); }
if [ ! -d "${1:-gpu-carry}/fashion-mnist" ]; then
  echo "gpu-check: ${1:-gpu-carry}/fashion-mnist not found: run scripts/gpu-carry.sh first (and carry its folder)" >&2
  exit 3
fi
deps="$(cd "${1:-gpu-carry}" && pwd)"
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
exec > >(tee "$out/gpu-check.log") 2>&1
tee_pid=$!
holder=
finish() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null
  echo "gpu-check: exit $1 after $(( $(date +%s) - t0 )) s in all"
  # The log's last lines: tee must have written them before the script ends.
  exec >&- 2>&-
  wait "$tee_pid" 2>/dev/null
  exit "$1"
}

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi: not found"
nvcc --version | tail -1
cmake --version | head -1

# NCCL and cuDNN: the toolkit's when it has them, else PyTorch's wheels
# (headers at configure time, libraries at run time).
# `nvidia` is a namespace package: its wheels may sit in several site folders.
nvidia_dirs="$(python3 -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null || true)"
lib_roots=()
for lib in nccl cudnn; do
  while IFS= read -r dir; do
    if [ -n "$dir" ] && [ -d "$dir/$lib/include" ]; then
      lib_roots+=("-D${lib^^}_ROOT=$dir/$lib")
      export LD_LIBRARY_PATH="$dir/$lib/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      break
    fi
  done <<< "$nvidia_dirs"
done
# Their versions, for reading the figures later: the wheels' names carry them
# (nvidia_cudnn_cu13-9.x.y.dist-info), cheaper than importing PyTorch.
while IFS= read -r dir; do
  [ -n "$dir" ] && ls -d "$dir"/../nvidia_cudnn*.dist-info "$dir"/../nvidia_nccl*.dist-info 2>/dev/null | xargs -r -n1 basename
done <<< "$nvidia_dirs"

echo "== build"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_WITH_UI=OFF -DSTRATA_BUILD_TESTS=OFF \
  -DSTRATA_WITH_MPI=OFF -DSTRATA_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DSTRATA_DEPS_DIR="$deps" \
  "${lib_roots[@]}" || finish 3
ninja -C build-gpu strata-gpu-check strata-run strata-probe || finish 3
echo "build: $(( $(date +%s) - t0 )) s"

export STRATA_FASHION_MNIST_DIR="$deps/fashion-mnist"
peer_args=()
echo "== peer"
if [ -n "$peer_file" ] && ! cp "$peer_file" "$out/pytorch_gpu_peer.jsonl"; then
  echo "GPU_CHECK_PEER_FILE=$GPU_CHECK_PEER_FILE cannot be read: PyTorch's figures are measured instead"
  peer_file=
fi
if [ -n "$peer_file" ]; then
  # A rerun on a short lease: PyTorch's figures as an earlier run on this kind
  # of GPU measured them, not measured again.
  echo "PyTorch's figures from $GPU_CHECK_PEER_FILE (not measured in this run)"
  peer_args=(--peer "$out/pytorch_gpu_peer.jsonl")
elif ! runs bench && ! runs bench-tf32 && ! runs bench-nondet; then
  echo "no benchmark asked for (GPU_CHECK_SECTIONS=$wanted): PyTorch's figures were not measured"
elif python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  # Bounded: a peer that hangs (a capture, the driver coming up) must not take the run.
  { timeout -k 5 150 python3 bench/pytorch_gpu_peer.py --model mlp --batches 128,1024,8192
    timeout -k 5 90 python3 bench/pytorch_gpu_peer.py --model cnn --batches 64,256,1024 --tf32; } |
    tee "$out/pytorch_gpu_peer.jsonl"
  peer_args=(--peer "$out/pytorch_gpu_peer.jsonl")
else
  echo "no PyTorch with CUDA here: the benchmark table has no peer column"
fi

echo "== checks"
# One process keeps a CUDA context open until the end, so the many short
# processes that follow (the differential suite starts one per case) do not
# each pay for bringing the GPU up when the driver is not kept loaded.
python3 -c 'import time, torch; torch.zeros(1, device="cuda"); time.sleep(3600)' >/dev/null 2>&1 &
holder=$!
timeout -k 5 60 build-gpu/app/strata-run --list-devices
# A hang (a collective that never completes) must not take the whole run:
# the report is rewritten after each section, so what finished is kept.
check_limit=$(( $(left) - 90 ))
[ "$check_limit" -gt 420 ] && check_limit=420
[ "$check_limit" -lt 60 ] && check_limit=60
section_args=()
[ -n "$check_sections" ] && section_args=(--sections "$check_sections")
# Only the suite or the second-process tables asked for: gpu:0 is still opened (the
# errors section, seconds), so a GPU that cannot be is named first.
[ -n "$wanted" ] && [ -z "$check_sections" ] && section_args=(--sections errors)
# The main check runs with the backend's defaults whatever the caller
# exported: its bit-equality checks need deterministic float32 arithmetic.
env -u STRATA_TF32 -u STRATA_DETERMINISTIC \
  timeout -k 10 "$check_limit" build-gpu/tools/gpu_check/strata-gpu-check --device gpu:0 --report "$out/gpu-report.md" \
  "${section_args[@]}" "${peer_args[@]}"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "strata-gpu-check did not finish within ${check_limit} s: stopped (the report names the sections that never ran)"
  rc=1
elif [ "$rc" -gt 3 ]; then
  # Killed by a signal (139: a segmentation fault; 134: an abort), perhaps at
  # exit after the last check: a failure, with the report as far as it got.
  echo "strata-gpu-check ended with exit $rc (a crash); the report holds the sections it finished"
  rc=1
fi
# The differential suite against PyTorch (float64, on the CPU) with the
# engine on gpu:0: every layer, loss and optimizer within 1e-5 away from
# kinks, the example models' trajectories within PyTorch float32's own drift
# (docs/differential-testing.md).
echo "== against PyTorch"
# gpu:0 could not be opened (the log says why): nothing on it can be compared.
[ "$rc" -eq 2 ] && finish 2
# The second-process tables come after the suite and keep a minute each
# (none without a PyTorch peer: they are not measured then).
suite_limit=$(( $(left) - 10 ))
if [ ${#peer_args[@]} -gt 0 ]; then
  runs bench-tf32 && suite_limit=$(( suite_limit - 60 ))
  runs bench-nondet && suite_limit=$(( suite_limit - 60 ))
fi
if ! runs vs-torch; then
  echo "the differential suite was not asked for (GPU_CHECK_SECTIONS=$wanted)"
elif ! python3 -c 'import torch' 2>/dev/null; then
  echo "no PyTorch here: the differential suite did not run"
elif [ "$suite_limit" -lt 60 ]; then
  echo "the differential suite did not run: ${suite_limit} s of the ${budget} s budget left"
else
  # Each case is printed as it finishes, so a suite stopped by its limit keeps what it did.
  env -u STRATA_TF32 -u STRATA_DETERMINISTIC \
    timeout -k 5 "$suite_limit" python3 tests/torch/test_vs_torch.py build-gpu/tools/torch_probe/strata-probe \
    --device gpu:0 --fashion-mnist "$deps/fashion-mnist" | tee "$out/vs-torch-gpu.txt"
  torch_rc=${PIPESTATUS[0]}
  case "$torch_rc" in
    0) ;;
    124|137) echo "the differential suite was stopped after ${suite_limit} s (the cases above it finished)" ;;
    77) echo "the differential suite skipped itself (see above)" ;;
    *) echo "the differential suite failed (exit $torch_rc)"; [ "$rc" -eq 0 ] && rc=1 ;;
  esac
fi

# The second-process tables: the backend chooses its arithmetic and its
# convolution algorithms once per process, from the environment, so each
# runs in a process of its own, its report appended to the first.
# variant SECTION SETTING WHAT RESERVE: RESERVE seconds are left for what
# follows (the next table's minute). Each process has its own setting and
# not the other's; STRATA_CUDNN_LOG=1 puts its convolution choices in the log
# (each cuDNN algorithm that won, and whether it is non-deterministic).
variant() {
  local section=$1 setting=$2 what=$3 limit=$(( $(left) - 5 - $4 ))
  echo "== $section"
  if ! runs "$section"; then
    echo "the $what was not asked for (GPU_CHECK_SECTIONS=$wanted)"
  elif [ ${#peer_args[@]} -eq 0 ]; then
    echo "no PyTorch peer: the $what was not measured"
  elif [ "$limit" -lt 40 ]; then
    echo "the $what was not measured: ${limit} s of the ${budget} s budget left"
  else
    env -u STRATA_TF32 -u STRATA_DETERMINISTIC "$setting" STRATA_CUDNN_LOG=1 timeout -k 5 "$limit" build-gpu/tools/gpu_check/strata-gpu-check --device gpu:0 \
      --sections "$section" --report "$out/gpu-report-$section.md" "${peer_args[@]}"
    local variant_rc=$?
    if [ -f "$out/gpu-report-$section.md" ]; then
      { printf '\n---\n\n'; cat "$out/gpu-report-$section.md"; } >> "$out/gpu-report.md"
    fi
    if [ "$variant_rc" -ne 0 ]; then
      echo "the ${section} run (the $what) ended with exit $variant_rc"
      [ "$rc" -eq 0 ] && rc=1
    fi
  fi
}
variant bench-tf32 STRATA_TF32=1 "TF32 table" "$(runs bench-nondet && echo 60 || echo 0)"
variant bench-nondet STRATA_DETERMINISTIC=0 "table with non-deterministic convolutions" 0
finish $rc
