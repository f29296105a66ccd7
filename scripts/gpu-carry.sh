#!/usr/bin/env bash
# Prepares the folder the GPU check takes to a GPU server that has CMake,
# nvcc and the CUDA libraries but neither the header-only libraries nor the
# data: Eigen, nlohmann/json and zlib headers, and the Fashion-MNIST files.
#   scripts/gpu-carry.sh [DIR]    (default gpu-carry/, about 40 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-gpu-carry}"
data="${STRATA_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
rm -rf "$dir"
mkdir -p "$dir/eigen3" "$dir/zlib" "$dir/fashion-mnist"
cp -r /usr/include/eigen3/Eigen "$dir/eigen3/"
cp -r /usr/include/nlohmann "$dir/"
cp /usr/include/zlib.h /usr/include/zconf.h "$dir/zlib/"
cp "$data"/*-ubyte.gz "$dir/fashion-mnist/"
du -sh "$dir"
