#pragma once
// What a CUDA kernel file needs beyond C++ to compile with the host
// compiler: the execution-space keywords, the built-in variables, the
// intrinsics the backend's kernels call, and the launch that
// rewrite_kernels.py puts where `kernel<<<grid, block, shared, stream>>>(...)`
// was. rewrite_kernels.py includes this first in every rewritten file.
//
// Fidelity: float operations are IEEE single precision as on the GPU (the
// kernel files are compiled with -ffp-contract=off, so only the explicit
// __fmaf_rn fuse; nvcc also fuses other a * b + c, a last-place difference
// the comparison's tolerances allow). Denormals are not flushed (the GPU
// build's --ftz=true): the test data has none.
#include <cuda_runtime_api.h>
#include <vector_functions.h>
#include <vector_types.h>

#include <math.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "EmuRuntime.h"
#include "Scheduler.h"

// ---- execution spaces and memory spaces -------------------------------------------
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// One block runs at a time (Scheduler.h), so a function-local static is
// its shared memory: one copy, seen by every thread of the block.
#define __shared__ static

// ---- synchronisation ------------------------------------------------------------------
// The empty asm keeps the compiler from carrying shared values in registers
// across the barrier (other fibers write them while this one waits).
inline void __syncthreads() {
  asm volatile("" ::: "memory");
  emu::sync_block();
  asm volatile("" ::: "memory");
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// Fibers switch only at barriers, so a read-modify-write is atomic as it stands.
template <typename T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
template <typename T>
T __ldcg(const T* p) {
  return *p;
}

template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable_v<T>);
  if (mask != 0xffffffffu || width != 32) emu::report("__shfl_xor_sync with a partial mask or width (not emulated)");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  bits = emu::exchange_xor(bits, lane_mask);
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// ---- correctly rounded arithmetic ------------------------------------------------------
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }  // one rounding, as the GPU's FFMA
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }

// CUDA's integer min and max, which device code calls unqualified.
template <typename T>
T min(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
T max(T a, T b) {
  return a < b ? b : a;
}

// libcu++'s functor (CUB's reductions take it).
namespace cuda {
template <typename T = void>
struct minimum {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return b < a ? b : a;
  }
};
}  // namespace cuda

namespace emu {

// The %globaltimer register (spin_kernel), in nanoseconds.
inline uint64_t globaltimer() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// `call` is the kernel as a generic lambda (rewrite_kernels.py), so a
// template kernel deduces its arguments as in a CUDA launch. The arguments
// are converted once, as the runtime copies them at the launch; every
// thread then calls the kernel with those values.
template <typename Call, typename... A>
void launch(dim3 grid, dim3 block, size_t shared, cudaStream_t, Call call, A&&... args) {
  std::tuple<std::decay_t<A>...> params(std::forward<A>(args)...);
  if (!run_grid(grid, block, shared, [&] { std::apply(call, params); })) set_last_error(cudaErrorInvalidConfiguration);
}

}  // namespace emu

// ---- the runtime calls, to their emulations (EmuRuntime.h) ------------------------------
#define cudaGetLastError ::emu::cudaGetLastError
#define cudaPeekAtLastError ::emu::cudaPeekAtLastError
#define cudaGetDevice ::emu::cudaGetDevice
#define cudaGetErrorString ::emu::cudaGetErrorString
#define cudaGetErrorName ::emu::cudaGetErrorName
#define cudaMemcpyAsync ::emu::cudaMemcpyAsync
#define cudaMemsetAsync ::emu::cudaMemsetAsync
#define cudaFuncGetAttributes ::emu::cudaFuncGetAttributes
