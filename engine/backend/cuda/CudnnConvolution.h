#pragma once
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/Backend.h"
#include "backend/cuda/CudnnConvolver.h"
#include "backend/cuda/CudnnWorkspace.h"

namespace strata::cuda {

// Float convolutions through cuDNN's legacy API (cudnnConvolutionForward...)
// for one GPU's stream, every tensor in one layout (NHWC: images (n, h, w,
// c), kernels (filters, kh, kw, channels); NCHW: images (n, c, h, w),
// kernels (filters, channels, kh, kw)): per window
// shape a plan (descriptors and the algorithm of each direction, chosen once:
// the fastest cuDNN measures on this GPU, or its heuristics' first with
// STRATA_CUDNN_AUTOTUNE=0), a workspace kept between calls. CudaBackend
// transposes the layers' NHWC images and (kh * kw * channels, filters)
// kernel matrices to and from the layout.
//
// Float32 arithmetic (CUDNN_FMA_MATH) unless STRATA_TF32=1, as the matrix
// products, and no FFT or Winograd algorithm for the kernel gradient (their
// transforms lose several times a float32 sum's precision over a sum of the
// whole batch; see inexact() in the .cpp). Deterministic algorithms only
// (unless STRATA_DETERMINISTIC=0: convolution_deterministic()), so a
// replayed step and a resumed run compute the same bits; a direction
// with none takes the other convolution ways (CudaBackend::ways_for) while
// the shape's other directions keep theirs.
class CudnnConvolution final : public CudnnConvolver {
public:
  CudnnConvolution(DeviceMemory& memory, std::string device_name, cudaStream_t stream, bool tf32, cudnnTensorFormat_t layout);
  ~CudnnConvolution() override;
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;

  // Takes windows whose symmetric padding gives exactly the window (TF's
  // "same" with an odd pixel after, e.g. stride 2 on an even size, does not).
  bool takes(const Window2D& w, int64_t filters, Direction d) override;
  // The algorithm was chosen blind to the pointers (the _v7 heuristics see
  // none): a replica's slice of a batch may start less aligned than it
  // wants, which refuses that call, not the shape.
  bool forward(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) override;
  bool backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) override;
  bool backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) override;

private:
  // An algorithm and the arithmetic it was offered with: since cuDNN 7.4 the
  // heuristics rank (algorithm, math type) pairs, and the convolution
  // descriptor must carry the pair's math type when the algorithm runs.
  template <typename Algo>
  struct Choice {
    Algo algo{};
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  };
  struct Plan {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t kernel = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    // Empty: no algorithm qualified for the direction, or cuDNN refused it
    // at run time; that direction takes the other ways.
    std::optional<Choice<cudnnConvolutionFwdAlgo_t>> forward;
    std::optional<Choice<cudnnConvolutionBwdDataAlgo_t>> backward_data;
    std::optional<Choice<cudnnConvolutionBwdFilterAlgo_t>> backward_filter;
    size_t workspace = 0;  // the largest of the algorithms' needs
  };
  using Key = CudnnKey;
  static bool fits(const Window2D& w, int64_t filters);
  static void destroy(Plan& p);
  // The shape's plan with the workspace it needs (reserved).
  Plan& plan(const Window2D& w, int64_t filters);
  // The shape's descriptors and algorithms, made the first time; throws
  // when cuDNN cannot plan the shape in any direction.
  Plan& planned(const Window2D& w, int64_t filters);
  void make_plan(Plan& p, const Window2D& w, int64_t filters);
  // The call's status: true on success; false (and that direction of the
  // shape refused: `choice` emptied) when cuDNN will not run it; throws
  // otherwise.
  template <typename Chosen>
  bool ran(cudnnStatus_t status, Plan& p, std::optional<Chosen>& choice, const Window2D& w, int64_t filters,
           const char* call);
  const char* layout_name() const { return layout_ == CUDNN_TENSOR_NCHW ? "NCHW" : "NHWC"; }

  std::string device_;
  cudaStream_t stream_;
  bool tf32_;
  cudnnTensorFormat_t layout_;
  cudnnHandle_t handle_ = nullptr;
  std::mutex mutex_;  // the handle, the plans and the workspace: replicas sharing the GPU call from their threads
  std::map<Key, Plan> plans_;
  std::set<Key> refused_;  // shapes no direction of which cuDNN plans or runs: the other ways for them
  CudnnWorkspace workspace_;
};

}  // namespace strata::cuda
