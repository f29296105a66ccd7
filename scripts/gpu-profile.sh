#!/usr/bin/env bash
# Where a training step's GPU time goes, Strata beside PyTorch: Nsight
# Compute (ncu, hardware clocks left alone) times every kernel of a few
# TF-tutorial CNN steps of each, and a table per side sums the kernels by
# name. Also prints which cuDNN algorithms Strata chose for each convolution
# and what they measured (STRATA_CUDNN_LOG=1).
#
#   scripts/gpu-profile.sh [BATCH]     (default 64; after scripts/gpu-check.sh
#                                       in the same call: it uses build-gpu/)
#
# Writes $OUT (default gpu-check-out/) profile-strata.csv, profile-torch.csv
# and profile.md. ncu replays nothing here (one metric, one pass) but
# serialises the kernels, so the times are each kernel's own, not the step's.
set -uo pipefail
cd "$(dirname "$0")/.."
batch="${1:-64}"
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
ncu_bin="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)"
if [ -z "$ncu_bin" ] || [ ! -x build-gpu/app/strata-run ]; then
  echo "gpu-profile: needs ncu and build-gpu/app/strata-run (run scripts/gpu-check.sh first)" >&2
  exit 3
fi
export STRATA_FASHION_MNIST_DIR="${STRATA_FASHION_MNIST_DIR:-$PWD/gpu-carry/fashion-mnist}"
ncu_args=(--clock-control none --metrics gpu__time_duration.sum --csv --print-units base --kernel-name-base demangled)

echo "== cuDNN algorithms Strata chose (batch $batch)"
STRATA_CUDNN_LOG=1 timeout -k 5 60 build-gpu/app/strata-run resources/examples/fashion-cnn.strata --devices gpu:0 \
  --batch-size "$batch" --epochs 1 --max-steps 30 --no-run-dir 2>&1 | grep -E "convolution|error" | sort -u

echo "== ncu: Strata, 40 steps of batch $batch"
timeout -k 5 120 "$ncu_bin" "${ncu_args[@]}" --launch-count 2500 build-gpu/app/strata-run resources/examples/fashion-cnn.strata \
  --devices gpu:0 --batch-size "$batch" --epochs 1 --max-steps 40 --no-run-dir > "$out/profile-strata.csv" 2>/dev/null
echo "ncu exit $?"
echo "== ncu: PyTorch, 10 eager + 5 warm-up + 40 graph steps of batch $batch"
timeout -k 5 120 "$ncu_bin" "${ncu_args[@]}" python3 bench/pytorch_gpu_peer.py --model cnn --batches "$batch" \
  --steps 40 > "$out/profile-torch.csv" 2>/dev/null
echo "ncu exit $?"

python3 - "$out" <<'EOF' | tee "$out/profile.md"
import csv, collections, io, sys
out = sys.argv[1]
for side in ("strata", "torch"):
    rows = collections.defaultdict(lambda: [0, 0.0])
    text = open(f"{out}/profile-{side}.csv", errors="replace").read()
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
    total = sum(v[1] for v in rows.values())
    print(f"## {side}: {sum(v[0] for v in rows.values())} kernels, {total:.0f} us of kernel time\n")
    print("| kernel | launches | total us | us per launch |\n|---|---:|---:|---:|")
    for name, (n, us) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:40]:
        print(f"| `{name}` | {n} | {us:.0f} | {us / n:.1f} |")
    print()
EOF
