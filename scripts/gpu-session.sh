#!/usr/bin/env bash
# A lent GPU's first call in one command, within one call's limit: the GPU
# check (scripts/gpu-check.sh: build, every check, the benchmark beside
# PyTorch measured in the same run), then compute-sanitizer's memcheck over
# the operations (scripts/gpu-sanitize.sh), then the two CNN examples trained
# in full (scripts/gpu-accuracy.sh), each given what is left of the budget.
# A second call, after a fix, narrows the check with GPU_CHECK_SECTIONS.
#
#   scripts/gpu-session.sh [DEPS_DIR]   (default gpu-carry/, from scripts/gpu-carry.sh)
#
# GPU_SESSION_BUDGET (seconds, default 540): the whole call; the check gets
# GPU_CHECK_BUDGET (default 330) of it, the sanitizer at most 150 s of what
# is left, and the examples the rest (they need about 40 s on an H200).
# GPU_CHECK_SECTIONS defaults to ops,errors,training,bench,failures,bench-nondet
# here: errors and failures take seconds when they pass (failures at most
# 45 s a run, and it runs last), and parts of what they check have not run on a
# GPU (the typed out-of-device-memory error; a replica failing beside
# captured collectives); bench-nondet (the CNN with cuDNN's non-deterministic
# convolutions, as PyTorch runs them) in what is left of the check's budget;
# mnist is left to the examples trained in full, multi needs two GPUs, and
# the differential suite and the TF32 table to a second call.
# Results in $OUT (default gpu-check-out/): gpu-report.md, gpu-check.log,
# sanitize-memcheck.log, accuracy.md, session.md (what ran, each exit
# status) and rest.tgz (every other file: the device tool brings back a few
# files only).
# Exit status: the check's when it failed or found no GPU (then nothing else
# runs: 2 is "no GPU"); else 1 when the sanitizer or an example failed, 0
# when all passed.
set -uo pipefail
cd "$(dirname "$0")/.."
deps="${1:-gpu-carry}"
out="${OUT:-gpu-check-out}"
export OUT="$out"
budget="${GPU_SESSION_BUDGET:-540}"
t0=$(date +%s)
left() { echo $((budget - ($(date +%s) - t0))); }
mkdir -p "$out"
summary="$out/session.md"
echo "# GPU session, $(date -u '+%Y-%m-%d %H:%M UTC'), tree $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" > "$summary"
note() { echo "$1" | tee -a "$summary"; }

# Everything but the files read first goes into one archive.
pack() {
  (cd "$out" && files=$(ls | grep -v -x -e gpu-report.md -e gpu-check.log -e session.md -e accuracy.md \
    -e sanitize-memcheck.log -e rest.tgz) &&
    [ -n "$files" ] && tar czf rest.tgz --remove-files $files)
}

GPU_CHECK_SECTIONS="${GPU_CHECK_SECTIONS:-ops,errors,training,bench,failures,bench-nondet}" GPU_CHECK_BUDGET="${GPU_CHECK_BUDGET:-330}" \
  scripts/gpu-check.sh "$deps"
check=$?
note "- scripts/gpu-check.sh: exit $check after $(( $(date +%s) - t0 )) s"
if [ "$check" -ne 0 ] && [ "$check" -ne 1 ]; then
  note "- stopped: the check did not run (2: no GPU or no driver, 3: the build or the carried folder)"
  pack
  exit "$check"
fi

status=0
sanitize_time=$(( $(left) - 60 ))
[ "$sanitize_time" -gt 150 ] && sanitize_time=150
if [ "$sanitize_time" -ge 60 ]; then
  GPU_SANITIZE_TIMEOUT="$sanitize_time" scripts/gpu-sanitize.sh memcheck ops
  sanitize=$?
  note "- scripts/gpu-sanitize.sh memcheck ops (at most $sanitize_time s): exit $sanitize (4: out of time)"
  [ "$sanitize" -eq 1 ] && status=1
else
  note "- scripts/gpu-sanitize.sh: not run ($(left) s left)"
fi

if [ "$(left)" -ge 40 ]; then
  timeout -k 5 "$(left)" scripts/gpu-accuracy.sh fashion-cnn fashion-cnn-bn
  accuracy=$?
  note "- scripts/gpu-accuracy.sh fashion-cnn fashion-cnn-bn: exit $accuracy (124: out of time)"
  [ "$accuracy" -ne 0 ] && status=1
else
  note "- scripts/gpu-accuracy.sh: not run ($(left) s left)"
fi

[ "$check" -ne 0 ] && status=$check
note "- session: exit $status after $(( $(date +%s) - t0 )) s"
pack
exit "$status"
