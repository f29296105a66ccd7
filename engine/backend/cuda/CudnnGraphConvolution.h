#pragma once
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/Backend.h"
#include "backend/cuda/ConvolutionWays.h"
#include "backend/cuda/CudnnConvolver.h"
#include "backend/cuda/CudnnDescriptor.h"
#include "backend/cuda/CudnnWorkspace.h"

namespace strata::cuda {

// Float convolutions through cuDNN's backend (graph) API, the way PyTorch
// calls cuDNN: per shape and direction a one-operation graph, the engine
// configurations cuDNN's heuristics list for it (instant and fallback
// modes), each timed on this GPU and the fastest kept as an execution plan.
// The engines reached this way include implicit-GEMM kernels the legacy
// algorithms (CudnnConvolution) do not run: on an H200 PyTorch's float32
// forward convolution of the TF-tutorial CNN's second layer at batch 1024
// took 0.54 ms where the legacy deterministic algorithm took 0.83 ms.
//
// The same numerical rules as the legacy way, read from each engine's
// numerical notes: deterministic engines only (unless STRATA_DETERMINISTIC=0,
// convolution_deterministic()); without STRATA_TF32=1 no
// tensor-core (TF32) engine and no FFT or Winograd transform for the kernel
// gradient; never inputs
// converted down or reduced precision sums. Engines that compile kernels at
// run time are passed over (seconds per shape, and NVRTC may be missing).
// Images and kernels are described with strides in the layout given (NHWC
// or NCHW); asymmetric padding (TF's "same" with stride 2 on an even size)
// is expressed as such.
class CudnnGraphConvolution final : public CudnnConvolver {
public:
  CudnnGraphConvolution(DeviceMemory& memory, std::string device_name, cudaStream_t stream, bool tf32,
                        cudnnTensorFormat_t layout);
  ~CudnnGraphConvolution() override;
  CudnnGraphConvolution(const CudnnGraphConvolution&) = delete;
  CudnnGraphConvolution& operator=(const CudnnGraphConvolution&) = delete;

  bool takes(const Window2D& w, int64_t filters, Direction d) override;
  // A call whose pointers are less aligned than the plans were made for (a
  // replica's slice of a batch) is refused, not the shape.
  bool forward(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) override;
  bool backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) override;
  bool backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) override;

private:
  // A shape's three plans and every descriptor they were made from (kept
  // alive with them; a deque, so that adding one keeps the others in place
  // for the descriptors that name them).
  struct Plans {
    std::deque<CudnnDescriptor> parts;
    // None for a direction no engine qualifies for, or whose plan cuDNN
    // refused at run time: that direction takes the other ways.
    std::array<std::optional<CudnnDescriptor>, 3> plan;
    size_t workspace = 0;  // the largest of the three plans' needs
  };
  // The shape's plans, made the first time (throws when cuDNN can plan no
  // direction); the caller reserves their workspace.
  Plans& planned(const Window2D& w, int64_t filters);
  void make_plans(Plans& p, const Window2D& w, int64_t filters);
  // The fastest allowed engine configuration's plan for `op` (heuristics'
  // first without timing); throws when none qualifies.
  // `transforms`: FFT and Winograd engines allowed.
  CudnnDescriptor choose(Plans& p, const CudnnDescriptor& op, const Window2D& w, int64_t filters, bool transforms,
                         const std::string& what);
  // Runs the shape's plan for `d` on (image, kernel, output) pointers in the
  // X/W/Y sense of the forward convolution.
  bool run(const Window2D& w, int64_t filters, Direction d, const void* x, const void* kernel, const void* y,
           const char* call);
  // cudnnBackendExecute with a variant pack of the three pointers and the workspace.
  cudnnStatus_t execute(const CudnnDescriptor& plan, const void* x, const void* kernel, const void* y, void* workspace);
  const char* layout_name() const { return nhwc_ ? "NHWC" : "NCHW"; }

  DeviceMemory& memory_;
  std::string device_;
  cudaStream_t stream_;
  bool tf32_;
  bool nhwc_;
  cudnnHandle_t handle_ = nullptr;
  std::mutex mutex_;  // the handle, the plans and the workspace: replicas sharing the GPU call from their threads
  std::map<CudnnKey, Plans> plans_;
  std::set<CudnnKey> refused_;  // shapes no direction of which cuDNN plans or runs
  CudnnWorkspace workspace_;
};

}  // namespace strata::cuda
