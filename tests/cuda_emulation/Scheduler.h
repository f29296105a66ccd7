#pragma once
// Runs a CUDA grid on the calling thread: blocks one after another, and a
// block's threads as fibers (entered through ucontext, then switched by the
// compiler's setjmp/longjmp builtins, or by swapcontext under ASan; see
// Scheduler.cpp) that switch only at their barriers (__syncthreads, the two
// halves of a warp shuffle). One OS thread keeps the emulation deterministic
// and cheap (a barrier is a few context switches, not a wake-up of 256 OS
// threads), and lets `__shared__` be a function-local `static`: only one
// block is ever live.
//
// What real hardware would hang on or leave undefined is reported as a
// violation instead (take_violations): a thread that exits while the others
// wait at __syncthreads, a shuffle with exited lanes, lanes of one warp
// split between a shuffle and __syncthreads.
#include <vector_types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

// The built-in variables the kernels read: set for the running fiber before
// it resumes (all fibers share the one OS thread).
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

namespace emu {

// Runs body as every thread of every block; false (nothing run) for a
// configuration the CUDA runtime refuses, as cudaErrorInvalidConfiguration.
bool run_grid(dim3 grid, dim3 block, size_t dynamic_shared, const std::function<void()>& body);

// The running thread's index in its block (x fastest) and the block's size.
int linear_thread();
int block_threads();

// __syncthreads().
void sync_block();

// The value `bits` of the lane `lane ^ lane_mask` of the caller's warp, as
// __shfl_xor_sync with the full mask.
uint64_t exchange_xor(uint64_t bits, int lane_mask);

// A misuse the kernels must not make (recorded, the launch goes on).
void report(const std::string& what);
// The violations recorded since the last call, each kind once with its count.
std::vector<std::string> take_violations();

// Launches so far (a test checks a launcher really launched).
int64_t launches();

}  // namespace emu
