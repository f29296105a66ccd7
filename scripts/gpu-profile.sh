#!/usr/bin/env bash
# Where a training step's GPU time goes, Strata beside PyTorch: Nsight
# Compute (ncu, hardware clocks left alone) times every kernel of a few
# TF-tutorial CNN steps of each, and a table per side sums the kernels by
# name. Also prints which cuDNN algorithms Strata chose for each convolution
# and what they measured (STRATA_CUDNN_LOG=1).
#
#   scripts/gpu-profile.sh [BATCH] [STEPS]   (defaults 64 and 40; after
#                       scripts/gpu-check.sh in the same call: it uses build-gpu/)
#
# Writes $OUT (default gpu-check-out/) profile-strata-BATCH.csv,
# profile-torch-BATCH.csv, profile-BATCH.md, conv-ways-BATCH.txt and the
# unprofiled run's log conv-ways-BATCH.log. ncu
# replays nothing here (one metric, one pass) but serialises the kernels, so
# the times are each kernel's own, not the step's; it costs about 12 ms a
# kernel, so a large batch (more kernels per step) wants fewer steps.
set -uo pipefail
cd "$(dirname "$0")/.."
batch="${1:-64}"
steps="${2:-40}"
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
ncu_bin="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)"
if [ -z "$ncu_bin" ] || [ ! -x build-gpu/app/strata-run ]; then
  echo "gpu-profile: needs ncu and build-gpu/app/strata-run (run scripts/gpu-check.sh first)" >&2
  exit 3
fi
export STRATA_FASHION_MNIST_DIR="${STRATA_FASHION_MNIST_DIR:-$PWD/gpu-carry/fashion-mnist}"
ncu_args=(--clock-control none --metrics gpu__time_duration.sum --csv --print-units base --kernel-name-base demangled)

# The first run times the convolution ways and writes its choices to a file
# the profiled run reads: under ncu every kernel is slowed and serialised,
# which would distort that timing (a one-kernel way would win every race).
# cuDNN's own choice of algorithm within a way (cudnnFind) is still made
# under ncu, and the profiled run's first steps (cudnnFind's trials, the
# evaluation) are left out of the per-step table only when STEPS is large
# enough to tell them apart.
ways_file="$out/conv-ways-$batch.txt"
rm -f "$ways_file"
echo "== convolution ways and cuDNN algorithms Strata chose (batch $batch)"
STRATA_CONV_WAYS_FILE="$ways_file" STRATA_CUDNN_LOG=1 timeout -k 5 60 build-gpu/app/strata-run resources/examples/fashion-cnn.strata \
  --devices gpu:0 --batch-size "$batch" --epochs 1 --max-steps 30 --no-run-dir > "$out/conv-ways-$batch.log" 2>&1
first=$?
grep -E "convolution|error" "$out/conv-ways-$batch.log" | sort -u
if [ "$first" -ne 0 ] || [ ! -s "$ways_file" ]; then
  echo "gpu-profile: the unprofiled run ended with exit $first and chose no ways ($out/conv-ways-$batch.log): the profiled run would time them under ncu" >&2
  exit 1
fi

echo "== ncu: Strata, $steps steps of batch $batch"
STRATA_CONV_WAYS_FILE="$ways_file" timeout -k 5 150 "$ncu_bin" "${ncu_args[@]}" --launch-count 8000 \
  build-gpu/app/strata-run resources/examples/fashion-cnn.strata \
  --devices gpu:0 --batch-size "$batch" --epochs 1 --max-steps "$steps" --no-run-dir > "$out/profile-strata-$batch.csv" 2>/dev/null
echo "ncu exit $?"
echo "== ncu: PyTorch, 10 + $steps eager steps, then 5 warm-up + $steps graph-replayed steps of batch $batch"
timeout -k 5 150 "$ncu_bin" "${ncu_args[@]}" python3 bench/pytorch_gpu_peer.py --model cnn --batches "$batch" \
  --steps "$steps" > "$out/profile-torch-$batch.csv" 2>/dev/null
echo "ncu exit $?"

# Kernels launched at least once per step (90% of the steps) make the step;
# the rest ran in the first steps only (cuDNN's measurements, the ways' race,
# PyTorch's autotuning) and are summed apart.
python3 - "$out" "$batch" "$steps" <<'EOF' | tee "$out/profile-$batch.md"
import csv, collections, io, sys
out, batch, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for side, steps in (("strata", n), ("torch", 2 * n + 15)):
    rows = collections.defaultdict(lambda: [0, 0.0])
    text = open(f"{out}/profile-{side}-{batch}.csv", errors="replace").read()
    start = text.find('"ID"')
    if start < 0:
        print(f"## {side}: no kernel rows (ncu could not profile)\n")
        continue
    for r in csv.DictReader(io.StringIO(text[start:])):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = r["Kernel Name"][:110]
        rows[name][0] += 1
        rows[name][1] += float(r["Metric Value"].replace(",", "")) / 1000.0  # ns -> us
    step = {k: v for k, v in rows.items() if v[0] >= 0.9 * steps}
    first = {k: v for k, v in rows.items() if k not in step}
    per_step = sum(v[1] for v in step.values()) / steps
    print(f"## {side}, batch {batch}: {per_step:.0f} us of kernel time per step over {steps} steps "
          f"(kernels of the first steps only: {len(first)} kinds, {sum(v[1] for v in first.values()):.0f} us, left out)\n")
    print("| kernel | launches per step | us per step | us per launch |\n|---|---:|---:|---:|")
    for name, (n, us) in sorted(step.items(), key=lambda kv: -kv[1][1])[:40]:
        print(f"| `{name}` | {n / steps:.1f} | {us / steps:.1f} | {us / n:.1f} |")
    print()
EOF
