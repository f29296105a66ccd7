#pragma once
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>

#include "backend/Backend.h"

namespace strata::cuda {

// Whether convolution algorithms are chosen by timing them on the GPU (on
// unless STRATA_CUDNN_AUTOTUNE=0) and whether the choices are printed to
// stderr (STRATA_CUDNN_LOG=1). A timed choice can differ between processes,
// and so can a result's last bits; STRATA_CUDNN_AUTOTUNE=0 keeps every run
// on the same, heuristic, choices.
bool convolution_autotune();
bool convolution_log();
// Whether convolutions keep to deterministic algorithms (on unless
// STRATA_DETERMINISTIC=0; read once per process, as STRATA_TF32 is). Off,
// cuDNN's algorithms that sum with atomics compete too, as in PyTorch by
// default (torch.backends.cudnn.deterministic False): cudnnFind on an H200
// timed the TF-tutorial CNN's kernel gradients 1.1 to 5.3 times faster that
// way (at batch 64: 0.07-0.11 ms against 0.36 ms). The price: a replayed step and a
// resumed run no longer reproduce the first one's bits (mirrored replicas
// still hold the same weights: each sums its own gradient, and the
// all-reduce hands every one the same sum).
bool convolution_deterministic();

// For each convolution shape and direction, which of several deterministic
// ways (see convolution_deterministic()) runs it: cuDNN's best deterministic
// algorithm in the NHWC layout the layers use, the same in NCHW (its float32
// implicit-GEMM kernels are NCHW's; the tensors are transposed to and from
// it), the patch matrix and
// a cuBLASLt product over slices of the batch small enough to stay in L2,
// or over the whole batch. None wins everywhere: on an H200 cuDNN's
// deterministic NHWC filter gradients of the TF-tutorial CNN took 0.36 ms at
// batch 64 where its non-deterministic ones (atomics, which PyTorch uses)
// took 0.07-0.11 ms, and a product over the patches took 0.07 ms. The first
// call of a shape outside a stream capture runs every way twice, timed by
// events on `stream`, and keeps the fastest; later calls run the kept one.
// The first call's output, too, is the kept way's.
//
// STRATA_CONV_WAYS_FILE=<path> keeps the choices in a file: read at start
// (a shape found there is not timed again), each new one appended; so a run
// under a profiler, which slows every kernel and would distort the timing,
// runs what an earlier run chose. Each line names the GPU model and the
// arithmetic (float32 or TF32, and whether non-deterministic algorithms
// competed) it was timed with, and only lines of this GPU's model and
// arithmetic are read: one file serves every kind of run.
//
// STRATA_CONV_WAY=<name> (or force()) runs one way for every shape instead
// (for profiling and for checking each way); a way a shape does not offer,
// or that refuses a call, gives the last way (im2col over the whole batch).
class ConvolutionWays {
public:
  using Direction = Backend::ConvolutionDirection;
  // "forward", "gradient of the input", "gradient of the kernel".
  static const char* direction_name(Direction d);
  // One way: its name and the call, which returns false when its library
  // refuses this call (then the last way runs, which must never refuse).
  struct Way {
    const char* name;
    std::function<bool()> run;
  };

  ConvolutionWays();
  // Reads the choices STRATA_CONV_WAYS_FILE kept for `gpu_model`
  // (cudaDeviceProp::name) with `tf32` arithmetic, and keeps new ones there.
  void keep_in_file(const std::string& gpu_model, bool tf32);
  // Runs this shape's direction the way kept for it.
  // `side`: on the side stream (a weight gradient beside the input
  // gradient), which offers fewer ways (no cuDNN): its own choice, so a
  // choice made on the main stream is neither lost nor raced over again.
  void run(const Window2D& w, int64_t filters, Direction d, bool side, cudaStream_t stream, const Device& device,
           std::span<const Way> ways);
  // The way every shape runs from now on; "" chooses by timing again.
  void force(std::string name);
  // Calls whose forced way the shape did not offer or that refused them.
  int64_t forced_refusals() const { return forced_refusals_.load(); }
  // Every choice made in this process (not those read from the file), in order.
  std::vector<ConvolutionChoice> choices() const;

private:
  using Key = std::array<int64_t, 14>;
  // Runs every way three times and answers the fastest's name, each way's
  // best time in `timed_ms`; the output is the fastest's (it runs once more
  // unless it ran last).
  std::string race(const Window2D& w, int64_t filters, Direction d, cudaStream_t stream, const Device& device,
                   std::span<const Way> ways, std::vector<std::pair<std::string, double>>& timed_ms);

  mutable std::mutex mutex_;  // the map, the choices and the forced way: replicas sharing the GPU call from their threads
  std::mutex race_mutex_;     // held around a new shape's race, never inside mutex_
  std::map<Key, std::string> kept_;
  std::vector<ConvolutionChoice> choices_;
  std::string forced_;
  std::atomic<int64_t> forced_refusals_{0};
  std::string file_;                                   // STRATA_CONV_WAYS_FILE
  std::string profile_;                                // its lines' first field here: model and arithmetic
  void save(const Key& key, const std::string& name);  // under mutex_
};

}  // namespace strata::cuda
