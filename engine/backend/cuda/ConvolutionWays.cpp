#include "backend/cuda/ConvolutionWays.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "backend/cuda/CudaCheck.h"

namespace strata::cuda {

namespace {
bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

const char* direction_name(ConvolutionWays::Direction d) {
  switch (d) {
    case ConvolutionWays::Direction::Forward: return "forward";
    case ConvolutionWays::Direction::BackwardData: return "gradient of the input";
    case ConvolutionWays::Direction::BackwardFilter: return "gradient of the kernel";
  }
  return "?";
}
}  // namespace

bool convolution_autotune() {
  static const bool on = !env_is("STRATA_CUDNN_AUTOTUNE", "0");
  return on;
}

bool convolution_log() {
  static const bool on = env_is("STRATA_CUDNN_LOG", "1");
  return on;
}

void ConvolutionWays::run(const Window2D& w, int64_t filters, Direction d, cudaStream_t stream, const Device& device,
                          const std::function<bool()>& cudnn, const std::function<void()>& gemm) {
  const Key key{w.batch,    w.height,   w.width,   w.channels, w.kernel_h, w.kernel_w,
                w.stride_h, w.stride_w, w.pad_top, w.pad_left, filters,    static_cast<int64_t>(d)};
  std::optional<Way> kept;
  {
    std::lock_guard lock(mutex_);
    if (auto it = ways_.find(key); it != ways_.end()) kept = it->second;
  }
  if (!kept) {
    // One race at a time: replicas sharing the GPU meet a new shape together
    // in their first step, and timings of interleaved kernels would mean
    // nothing. Whoever comes second finds the choice made.
    std::lock_guard racing(race_mutex_);
    {
      std::lock_guard lock(mutex_);
      if (auto it = ways_.find(key); it != ways_.end()) kept = it->second;
    }
    if (!kept) {
      // Inside a capture nothing can be timed: cuDNN, kept, as the graph
      // will replay it; with autotuning off cuDNN's heuristics rule.
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      STRATA_CUDA(cudaStreamIsCapturing(stream, &capture));
      const bool timed = capture == cudaStreamCaptureStatusNone && convolution_autotune();
      kept = timed ? race(w, filters, d, stream, device, cudnn, gemm) : Way::Cudnn;
      {
        std::lock_guard lock(mutex_);
        ways_.emplace(key, *kept);
      }
      // The race ended with gemm's output: it stands when gemm won; cuDNN's
      // is written again below, so that every call's result comes from the
      // way kept (a run's first step computes what its later steps would).
      if (timed && *kept == Way::Gemm) return;
    }
  }
  if (*kept == Way::Cudnn && cudnn()) return;
  gemm();
}

ConvolutionWays::Way ConvolutionWays::race(const Window2D& w, int64_t filters, Direction d, cudaStream_t stream,
                                           const Device& device, const std::function<bool()>& cudnn,
                                           const std::function<void()>& gemm) {
  struct Marks {
    cudaEvent_t e[3] = {};
    Marks() {
      for (cudaEvent_t& m : e) STRATA_CUDA(cudaEventCreate(&m));
    }
    ~Marks() {
      for (cudaEvent_t m : e)
        if (m) cudaEventDestroy(m);
    }
  } marks;
  float cudnn_ms = 0, gemm_ms = 0;
  bool cudnn_ran = true;
  // Twice: the first round pays for first uses (cuBLASLt's heuristics,
  // cuDNN's lazily loaded kernels, the pool's growth); the second is timed.
  for (int round = 0; round < 2 && cudnn_ran; ++round) {
    STRATA_CUDA(cudaEventRecord(marks.e[0], stream));
    cudnn_ran = cudnn();
    STRATA_CUDA(cudaEventRecord(marks.e[1], stream));
    try {
      gemm();
    } catch (const std::exception& e) {
      // The patch matrix may not fit (it holds kh * kw copies of the
      // input) where cuDNN needs little: then cuDNN it is.
      if (!cudnn_ran) throw;
      if (convolution_log()) std::fprintf(stderr, "%s: im2col way not taken: %s\n", device.str().c_str(), e.what());
      return Way::Cudnn;
    }
    STRATA_CUDA(cudaEventRecord(marks.e[2], stream));
    STRATA_CUDA(cudaEventSynchronize(marks.e[2]));
    STRATA_CUDA(cudaEventElapsedTime(&cudnn_ms, marks.e[0], marks.e[1]));
    STRATA_CUDA(cudaEventElapsedTime(&gemm_ms, marks.e[1], marks.e[2]));
  }
  const Way way = cudnn_ran && cudnn_ms <= gemm_ms ? Way::Cudnn : Way::Gemm;
  if (convolution_log())
    std::fprintf(stderr,
                 "%s: convolution %lldx%lld over %lldx%lldx%lldx%lld to %lld filters (%s): %s (cuDNN %.3f ms, "
                 "im2col and cuBLASLt %.3f ms)\n",
                 device.str().c_str(), static_cast<long long>(w.kernel_h), static_cast<long long>(w.kernel_w),
                 static_cast<long long>(w.batch), static_cast<long long>(w.height), static_cast<long long>(w.width),
                 static_cast<long long>(w.channels), static_cast<long long>(filters), direction_name(d),
                 !cudnn_ran          ? "im2col and cuBLASLt (cuDNN refused)"
                 : way == Way::Cudnn ? "cuDNN"
                                     : "im2col and cuBLASLt",
                 static_cast<double>(cudnn_ms), static_cast<double>(gemm_ms));
  return way;
}

}  // namespace strata::cuda
