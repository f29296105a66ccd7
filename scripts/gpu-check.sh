#!/usr/bin/env bash
# The GPU check: one call on a GPU machine builds the Qt-free targets with
# CMake + ninja and runs strata-gpu-check on gpu:0, in this order: every CUDA
# operation against the CPU backend, a full training step and 50 SGD steps
# against the CPU, mirrored x2 on one GPU against one_device, four replicas
# on the GPU through NCCL against one_device and the device-memory reduce, the
# Fashion-MNIST MLP for 5 epochs, then the benchmark table beside PyTorch
# (bench/pytorch_gpu_peer.py: the MLP and the CNN) when the machine has it.
#
#   scripts/gpu-check.sh [DEPS_DIR]
#
# DEPS_DIR (default gpu-carry/, made by scripts/gpu-carry.sh) holds the
# header-only dependencies and the Fashion-MNIST files. Results go to $OUT
# (default gpu-check-out/): gpu-report.md (commit it as docs/gpu-report.md),
# gpu-check.log (everything printed), pytorch_gpu_peer.jsonl.
# Exit status: 0 when every check passed, 1 when one failed, 2 when nothing
# was checked (gpu:0 cannot be opened: no GPU or no driver, named in the
# log), 3 when the build failed.
set -uo pipefail
cd "$(dirname "$0")/.."
deps="$(cd "${1:-gpu-carry}" && pwd)"
out="${OUT:-gpu-check-out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
exec > >(tee "$out/gpu-check.log") 2>&1
t0=$(date +%s)

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi: not found"
nvcc --version | tail -1
cmake --version | head -1

# NCCL and cuDNN: the toolkit's when it has them, else PyTorch's wheels
# (headers at configure time, libraries at run time).
nvidia_site="$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null || true)"
lib_roots=()
for lib in nccl cudnn; do
  if [ -n "$nvidia_site" ] && [ -d "$nvidia_site/$lib/include" ]; then
    lib_roots+=("-D${lib^^}_ROOT=$nvidia_site/$lib")
    export LD_LIBRARY_PATH="$nvidia_site/$lib/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
done

echo "== build"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_WITH_UI=OFF -DSTRATA_BUILD_TESTS=OFF \
  -DSTRATA_WITH_MPI=OFF -DSTRATA_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DSTRATA_DEPS_DIR="$deps" \
  "${lib_roots[@]}" || exit 3
ninja -C build-gpu strata-gpu-check strata-run strata-probe || exit 3
echo "build: $(( $(date +%s) - t0 )) s"

export STRATA_FASHION_MNIST_DIR="$deps/fashion-mnist"
peer_args=()
echo "== peer"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  { python3 bench/pytorch_gpu_peer.py --model mlp --batches 128,1024,8192
    python3 bench/pytorch_gpu_peer.py --model cnn --batches 64,256,1024 --tf32; } | tee "$out/pytorch_gpu_peer.jsonl"
  peer_args=(--peer "$out/pytorch_gpu_peer.jsonl")
else
  echo "no PyTorch with CUDA here: the benchmark table has no peer column"
fi

echo "== checks"
build-gpu/app/strata-run --list-devices
build-gpu/tools/gpu_check/strata-gpu-check --device gpu:0 --report "$out/gpu-report.md" "${peer_args[@]}"
rc=$?
# The differential suite against PyTorch (float64, on the CPU) with the
# engine on gpu:0: every layer, loss and optimizer within 1e-5 away from
# kinks, the example models' trajectories within PyTorch float32's own drift
# (docs/differential-testing.md).
echo "== against PyTorch"
if python3 -c 'import torch' 2>/dev/null; then
  timeout 300 python3 tests/torch/test_vs_torch.py build-gpu/tools/torch_probe/strata-probe --device gpu:0 \
    --fashion-mnist "$deps/fashion-mnist" | tee "$out/vs-torch-gpu.txt"
  torch_rc=${PIPESTATUS[0]}
  [ "$torch_rc" -ne 0 ] && [ "$rc" -eq 0 ] && rc=$torch_rc
else
  echo "no PyTorch here: the differential suite did not run"
fi
echo "gpu-check: exit $rc after $(( $(date +%s) - t0 )) s in all"
exit $rc
