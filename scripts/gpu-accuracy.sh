#!/usr/bin/env bash
# The Fashion-MNIST examples trained in full on one GPU (the projects'
# epochs, batch and optimizer; nothing shortened), each final test accuracy
# against its goal: MLP >= 0.88, TF-tutorial CNN >= 0.916, CNN with batch
# normalisation >= 0.93.
#
#   scripts/gpu-accuracy.sh [EXAMPLE...]   (default: all three; after
#                       scripts/gpu-check.sh in the same call: it uses build-gpu/)
#
# DEVICES (default gpu:0) places the replicas, e.g. DEVICES=gpu:0,gpu:1.
# Writes $OUT (default gpu-check-out/) accuracy.md and each run's log.
# Exit status: 0 when every example reached its goal, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
export STRATA_FASHION_MNIST_DIR="${STRATA_FASHION_MNIST_DIR:-$PWD/gpu-carry/fashion-mnist}"
runner="${STRATA_RUN:-build-gpu/app/strata-run}"
devices="${DEVICES:-gpu:0}"
declare -A goal=([fashion-mlp]=0.88 [fashion-cnn]=0.916 [fashion-cnn-bn]=0.93)
examples=("$@")
[ ${#examples[@]} -eq 0 ] && examples=(fashion-mlp fashion-cnn fashion-cnn-bn)
status=0
# Into the file first (a pipe to tee would run the loop in a subshell and lose $status).
{
  echo "| example | devices | last epoch (val_accuracy: the 10,000 test images) | goal | result | seconds |"
  echo "|---|---|---|---:|---|---:|"
  for name in "${examples[@]}"; do
    want="${goal[$name]:-}"
    if [ -z "$want" ]; then
      echo "gpu-accuracy: no goal for example '$name' (known: ${!goal[*]})" >&2
      status=1
      continue
    fi
    t0=$(date +%s)
    timeout -k 5 180 "$runner" "resources/examples/$name.strata" --devices "$devices" --no-run-dir \
      > "$out/accuracy-$name.log" 2>&1
    rc=$?
    last=$(grep "^Epoch" "$out/accuracy-$name.log" | tail -1)
    got=$(sed -n 's/.*val_accuracy \([0-9.]*\).*/\1/p' <<< "$last")
    if [ $rc -ne 0 ]; then
      result="FAIL (exit $rc$([ $rc -eq 124 ] && echo ': over 180 s'))"
    elif [ -z "$got" ]; then
      result="FAIL (no accuracy printed)"
    elif python3 -c "import sys; sys.exit(0 if $got >= $want else 1)"; then
      result=pass
    else
      result="FAIL (below the goal)"
    fi
    [ "$result" = pass ] || status=1
    echo "| $name | $devices | ${last:-no epoch finished; see accuracy-$name.log} | $want | $result | $(($(date +%s) - t0)) |"
  done
} > "$out/accuracy.md"
cat "$out/accuracy.md"
exit $status
