#!/usr/bin/env bash
# Memory errors in the CUDA kernels that a comparison against the CPU can
# miss (a read past a buffer that happens to hold the right values, a write
# into a neighbour's memory): NVIDIA's compute-sanitizer runs
# strata-gpu-check's ops section (every CUDA operation against the CPU, each
# convolution way forced in turn) on gpu:0.
#
#   scripts/gpu-sanitize.sh [TOOL] [SECTIONS]   (defaults memcheck and ops;
#                       after scripts/gpu-check.sh in the same call: it uses build-gpu/)
#
# TOOL: memcheck (out-of-bounds and misaligned accesses, failed API calls),
# racecheck (shared-memory hazards), initcheck (reads of memory never
# written) or synccheck (barriers in divergent code). Library kernels
# (cuBLASLt, cuDNN) run under it too. Writes $OUT (default gpu-check-out/)
# sanitize-TOOL.log. GPU_SANITIZE_TIMEOUT (seconds, default 240): the
# sanitizer slows every kernel many times over.
# Exit status: 0 when the sanitizer reported no error, 1 when it reported
# some (the first are printed), 3 when the sanitizer or the build is
# missing, 4 when it ran out of time (the log holds what it found so far).
set -uo pipefail
cd "$(dirname "$0")/.."
tool="${1:-memcheck}"
sections="${2:-ops}"
out="${OUT:-gpu-check-out}"
limit="${GPU_SANITIZE_TIMEOUT:-240}"
mkdir -p "$out"
sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)"
if [ -z "$sanitizer" ] || [ ! -x build-gpu/tools/gpu_check/strata-gpu-check ]; then
  echo "gpu-sanitize: needs compute-sanitizer and build-gpu/tools/gpu_check/strata-gpu-check (run scripts/gpu-check.sh first)" >&2
  exit 3
fi
export STRATA_FASHION_MNIST_DIR="${STRATA_FASHION_MNIST_DIR:-$PWD/gpu-carry/fashion-mnist}"
log="$out/sanitize-$tool.log"
echo "== compute-sanitizer --tool $tool: strata-gpu-check --sections $sections on gpu:0 (at most $limit s)"
t0=$(date +%s)
# --error-exitcode: its own status for what it found, apart from the check's 1.
timeout -k 10 "$limit" "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 50 \
  build-gpu/tools/gpu_check/strata-gpu-check --device gpu:0 --sections "$sections" > "$log" 2>&1
status=$?
echo "ran $(( $(date +%s) - t0 )) s, exit $status; the check's own summary:"
grep -E '^ *[0-9]+ of [0-9]+ passed|^All [0-9]+ checks|^FAIL' "$log" | head -20
grep -E 'ERROR SUMMARY|Hazard|RACECHECK SUMMARY' "$log" | tail -3
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "gpu-sanitize: out of time after $limit s ($log holds what it found so far)"
  exit 4
fi
if [ "$status" -eq 99 ]; then
  echo "== the first errors"
  grep -E -A6 '^========= (Invalid|Program hit|Error|Race|Uninitialized|Barrier|Misaligned)' "$log" | head -60
  exit 1
fi
exit 0
