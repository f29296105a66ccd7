#pragma once
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
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

// For each convolution shape and direction, which of two deterministic ways
// runs it: cuDNN's best deterministic algorithm, or the patch matrix and a
// cuBLASLt product (im2col). Neither wins everywhere: on an H200 cuDNN's
// deterministic filter gradients of the TF-tutorial CNN took 0.36 ms at
// batch 64 where its non-deterministic ones (atomics, which PyTorch uses)
// took 0.07-0.11 ms, and a product over the patches is deterministic and
// about as fast. The first call of a shape outside a stream capture runs
// both ways twice, timed by events on `stream`, and keeps the faster; later
// calls run the kept one. The first call's output, too, is the kept way's.
class ConvolutionWays {
public:
  enum class Direction : uint8_t { Forward, BackwardData, BackwardFilter };

  // Runs this shape's direction: `cudnn` (which returns false when cuDNN
  // refuses the call, then `gemm` runs) or `gemm`.
  void run(const Window2D& w, int64_t filters, Direction d, cudaStream_t stream, const Device& device,
           const std::function<bool()>& cudnn, const std::function<void()>& gemm);

private:
  enum class Way : uint8_t { Cudnn, Gemm };
  using Key = std::array<int64_t, 12>;
  // Runs both ways twice (gemm last, so the output is gemm's) and answers the faster.
  Way race(const Window2D& w, int64_t filters, Direction d, cudaStream_t stream, const Device& device,
           const std::function<bool()>& cudnn, const std::function<void()>& gemm);

  std::mutex mutex_;       // the map: replicas sharing the GPU call from their threads
  std::mutex race_mutex_;  // held around a new shape's race, never inside mutex_
  std::map<Key, Way> ways_;
};

}  // namespace strata::cuda
