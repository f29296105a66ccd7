// Small kernels written here against the emulation, each with a known
// answer: if the emulation got barriers, shared memory, shuffles or CUB's
// reduction wrong, the kernel tests could pass or fail for its reasons
// rather than the kernels'.
#include "TestEmulator.h"

#include <QtTest/QtTest>

#include <cub/block/block_reduce.cuh>

#include <string>
#include <vector>

#include "EmuCuda.h"

namespace {

// Each thread writes its index; after the barrier it reads its mirror's.
__global__ void mirror_kernel(int* out) {
  __shared__ int values[256];
  const int t = static_cast<int>(threadIdx.x);
  values[t] = t + static_cast<int>(blockIdx.x) * 1000;
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = values[255 - t];
}

__global__ void warp_sum_kernel(const float* x, float* out) {
  float v = x[threadIdx.x];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  out[threadIdx.x] = v;
}

__global__ void block_sum_kernel(const int* x, long long* out) {
  using Reduce = cub::BlockReduce<long long, 128>;
  __shared__ Reduce::TempStorage temp;
  const long long s = Reduce(temp).Sum(x[threadIdx.x]);
  if (threadIdx.x == 0) out[0] = s;
}

// The grid-stride guard before a barrier that CUDA forbids.
__global__ void early_exit_kernel(int n, int* out) {
  if (static_cast<int>(threadIdx.x) >= n) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "; ";
  return s;
}

}  // namespace

void TestEmulator::shared_memory_and_barriers() {
  std::vector<int> out(3 * 256, -1);
  emu::launch(
      dim3(3), dim3(256), 0, nullptr, [](int* o) { mirror_kernel(o); }, out.data());
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 256; ++t) QCOMPARE(out[static_cast<size_t>(b * 256 + t)], 255 - t + b * 1000);
  QCOMPARE(joined(emu::take_violations()), std::string());
}

void TestEmulator::warp_shuffles() {
  std::vector<float> x(64), out(64, -1.0f);
  for (int i = 0; i < 64; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i);
  emu::launch(
      dim3(1), dim3(64), 0, nullptr, [](const float* a, float* o) { warp_sum_kernel(a, o); }, x.data(), out.data());
  // Every lane holds its warp's sum: 0 + ... + 31, and 32 + ... + 63.
  for (int i = 0; i < 64; ++i) QCOMPARE(out[static_cast<size_t>(i)], i < 32 ? 496.0f : 1520.0f);
  QCOMPARE(joined(emu::take_violations()), std::string());
}

void TestEmulator::block_reduce() {
  std::vector<int> x(128);
  for (int i = 0; i < 128; ++i) x[static_cast<size_t>(i)] = i * i;
  std::vector<long long> out{-1};
  emu::launch(
      dim3(1), dim3(128), 0, nullptr, [](const int* a, long long* o) { block_sum_kernel(a, o); }, x.data(), out.data());
  QCOMPARE(out[0], 127LL * 128 * 255 / 6);
  QCOMPARE(joined(emu::take_violations()), std::string());
}

void TestEmulator::exit_before_barrier_is_reported() {
  std::vector<int> out(64, 0);
  emu::launch(
      dim3(1), dim3(64), 0, nullptr, [](int n, int* o) { early_exit_kernel(n, o); }, 40, out.data());
  QVERIFY(joined(emu::take_violations()).find("__syncthreads reached by some threads") != std::string::npos);
}

void TestEmulator::bad_configuration_is_a_launch_error() {
  std::vector<int> out(256, 0);
  emu::launch(
      dim3(0), dim3(256), 0, nullptr, [](int* o) { mirror_kernel(o); }, out.data());
  QCOMPARE(cudaGetLastError(), cudaErrorInvalidConfiguration);
  QCOMPARE(cudaGetLastError(), cudaSuccess);  // read once, then cleared
  emu::launch(
      dim3(1), dim3(2048), 0, nullptr, [](int* o) { mirror_kernel(o); }, out.data());
  QCOMPARE(cudaGetLastError(), cudaErrorInvalidConfiguration);
}
