#include "backend/cuda/CudnnConvolution.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "backend/cuda/ConvolutionWays.h"
#include "backend/cuda/CudnnLibrary.h"
#include "core/Error.h"

namespace strata::cuda {

namespace {
const CudnnLibrary& lib() { return CudnnLibrary::get(); }

int as_int(int64_t v) { return static_cast<int>(v); }

// cuDNN's FFT and Winograd algorithms transform the images, so their error
// is several times a float32 sum's where the output is a sum over the whole
// batch: on an H200 the FFT-tiled filter gradient of the TF-tutorial CNN's
// second layer at batch 64 was 8e-4 off (relative) where the sum's own
// bound is 3e-4. The kernel gradient takes them only with TF32, whose
// products already trade that much precision for speed. The forward and
// input-gradient sums are per pixel (kh * kw * channels terms): there two
// runs on an H200 chose them (FFT tiling for the second layer at batch
// 1024) and stayed within the float32 bound of every check, and PyTorch's
// autotuned float32 convolutions take them too.
bool inexact(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool inexact(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool inexact(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// The first algorithm in cuDNN's order (`find`: measured on this GPU,
// fastest first; `rank`: the heuristics, where autotuning is off, the stream
// is being captured (timing would break the capture), the measurement fails
// or none of it qualifies) that runs, uses the allowed arithmetic (`transforms`: FFT and
// Winograd, see inexact()), fits the workspace budget
// and is deterministic: the others (backward-filter algorithms 0 and 3,
// backward-data 0) add with atomics, so a replayed step or a resumed run
// would drift from its first bits (allowed with STRATA_DETERMINISTIC=0, see
// convolution_deterministic()). Both orders are asked under float32
// arithmetic without TF32 (CUDNN_FMA_MATH), so they hold FMA algorithms;
// CUDNN_DEFAULT_MATH lets cuDNN use TF32 tensor cores on Ampere and later.
// Where none qualifies the caller refuses the shape, which then takes
// im2col and cuBLASLt, deterministic too. The workspace is asked of cuDNN
// for exactly that algorithm, descriptor and math type (the order's figure
// is an estimate), and an algorithm it will not size is passed over, as
// PyTorch passes over one that fails. Returns the algorithm and its math
// type, and raises `workspace` to the largest need.
template <typename Perf, int kCount, typename Rank, typename Find, typename WorkspaceOf>
auto choose(Rank rank, Find find, WorkspaceOf workspace_of, bool tf32, bool transforms, bool measure,
            cudnnConvolutionDescriptor_t conv, const std::string& what, size_t& workspace) {
  constexpr size_t kBudget = size_t{512} << 20;
  lib().check(lib().cudnnSetConvolutionMathType(conv, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH), what);
  // Room for every (algorithm, math type) pair either order may list.
  Perf perf[2 * kCount];
  int count = 0;
  bool measured = measure && find(2 * kCount, &count, perf) == CUDNN_STATUS_SUCCESS;
  // A failed measurement (cuDNN allocates its own buffers for it, beside
  // the pool) must not be reported by the next kernel launch's check.
  if (measure && !measured) cudaGetLastError();
  for (int pass = 0; pass < 2; ++pass, measured = false) {
    if (!measured) {
      lib().check(lib().cudnnSetConvolutionMathType(conv, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH), what);
      lib().check(rank(2 * kCount, &count, perf), what);
    }
    for (int i = 0; i < count; ++i) {
      const Perf& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || (convolution_deterministic() && p.determinism != CUDNN_DETERMINISTIC)) continue;
      if (!transforms && inexact(p.algo)) continue;
      if (!tf32 && (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) continue;
      // A measured time is of the math type listed: without TF32 only FMA
      // times rank what will run (a default-math time may be TF32's).
      if (!tf32 && measured && p.mathType != CUDNN_FMA_MATH) continue;
      const cudnnMathType_t math = tf32 ? p.mathType : CUDNN_FMA_MATH;
      size_t bytes = 0;
      if (lib().cudnnSetConvolutionMathType(conv, math) != CUDNN_STATUS_SUCCESS ||
          workspace_of(p.algo, &bytes) != CUDNN_STATUS_SUCCESS)
        continue;
      bytes = std::max(bytes, p.memory);
      if (bytes > kBudget) continue;
      workspace = std::max(workspace, bytes);
      if (convolution_log()) {
        // Whether it sums with atomics: what STRATA_DETERMINISTIC=0's table asks.
        const char* kind = p.determinism == CUDNN_DETERMINISTIC ? "" : " (non-deterministic)";
        if (measured)
          std::fprintf(stderr, "%s: algorithm %d%s, %.3f ms measured (fastest of any kind: %.3f ms)\n", what.c_str(),
                       static_cast<int>(p.algo), kind, static_cast<double>(p.time), static_cast<double>(perf[0].time));
        else std::fprintf(stderr, "%s: algorithm %d%s (heuristics)\n", what.c_str(), static_cast<int>(p.algo), kind);
      }
      return std::make_pair(p.algo, math);
    }
    if (!measured) break;  // the heuristics' list was the last chance
    // Nothing measured qualified (e.g. every candidate's buffers failed to
    // allocate beside the pool): the heuristics' list next.
  }
  throw runtime_error(what + ": cuDNN offers no " + (convolution_deterministic() ? "deterministic " : "") +
                      "float32 algorithm within a " + std::to_string(kBudget >> 20) + " MiB workspace for this convolution");
}
}  // namespace

CudnnConvolution::CudnnConvolution(DeviceMemory& memory, std::string device_name, cudaStream_t stream, bool tf32,
                                   cudnnTensorFormat_t layout)
    : device_(std::move(device_name)), stream_(stream), tf32_(tf32), layout_(layout), workspace_(memory, device_, stream) {
  lib().check(lib().cudnnCreate(&handle_), device_ + ": cudnnCreate");
  lib().check(lib().cudnnSetStream(handle_, stream), device_ + ": cudnnSetStream");
}

CudnnConvolution::~CudnnConvolution() {
  for (auto& [key, p] : plans_) destroy(p);
  if (handle_) lib().cudnnDestroy(handle_);
}

void CudnnConvolution::destroy(Plan& p) {
  if (p.x) lib().cudnnDestroyTensorDescriptor(p.x);
  if (p.y) lib().cudnnDestroyTensorDescriptor(p.y);
  if (p.kernel) lib().cudnnDestroyFilterDescriptor(p.kernel);
  if (p.conv) lib().cudnnDestroyConvolutionDescriptor(p.conv);
}

bool CudnnConvolution::takes(const Window2D& w, int64_t filters, Direction d) {
  if (!fits(w, filters)) return false;
  const Key key = cudnn_key(w, filters);
  std::lock_guard lock(mutex_);
  if (refused_.contains(key)) return false;
  Plan* p = nullptr;
  try {
    p = &planned(w, filters);
  } catch (const std::exception& e) {
    refused_.insert(key);
    std::fprintf(stderr, "%s; this shape takes the other ways (%s cuDNN does not)\n", e.what(), layout_name());
    return false;
  }
  const bool chosen = d == Direction::Forward        ? p->forward.has_value()
                      : d == Direction::BackwardData ? p->backward_data.has_value()
                                                     : p->backward_filter.has_value();
  // Not a refusal: no memory for the workspace now (a later call may fit),
  // or a shape first seen while a step is captured (the caller's error).
  return chosen && workspace_.try_reserve(p->workspace);
}

bool CudnnConvolution::fits(const Window2D& w, int64_t filters) {
  auto out = [](int64_t size, int64_t pad, int64_t kernel, int64_t stride) {
    return (size + 2 * pad - kernel) / stride + 1;
  };
  // An empty batch (a replica without examples in a short last batch) stays
  // on the im2col path, which writes zeros; cuDNN promises nothing for n = 0.
  // cuDNN's descriptors take int: larger tensors take that path too.
  const int64_t limit = std::numeric_limits<int32_t>::max();
  if (w.batch <= 0 || w.out_h <= 0 || w.out_w <= 0 || w.batch * w.height * w.width * w.channels >= limit ||
      w.batch * w.out_h * w.out_w * filters >= limit)
    return false;
  // A padded image smaller than the window would pass the output-size test
  // through truncating division alone (-1 / 2 == 0).
  if (w.height + 2 * w.pad_top < w.kernel_h || w.width + 2 * w.pad_left < w.kernel_w) return false;
  return w.pad_top >= 0 && w.pad_left >= 0 && out(w.height, w.pad_top, w.kernel_h, w.stride_h) == w.out_h &&
         out(w.width, w.pad_left, w.kernel_w, w.stride_w) == w.out_w;
}

CudnnConvolution::Plan& CudnnConvolution::plan(const Window2D& w, int64_t filters) {
  Plan& p = planned(w, filters);
  workspace_.reserve(p.workspace);
  return p;
}

CudnnConvolution::Plan& CudnnConvolution::planned(const Window2D& w, int64_t filters) {
  const Key key = cudnn_key(w, filters);
  auto [it, fresh] = plans_.try_emplace(key);
  if (fresh) {
    try {
      make_plan(it->second, w, filters);
    } catch (...) {
      destroy(it->second);
      plans_.erase(it);
      throw;
    }
  }
  return it->second;
}

void CudnnConvolution::make_plan(Plan& p, const Window2D& w, int64_t filters) {
  const auto& api = lib();
  const std::string what = describe_cudnn_convolution(device_, w, layout_name());
  api.check(api.cudnnCreateTensorDescriptor(&p.x), what);
  api.check(api.cudnnCreateTensorDescriptor(&p.y), what);
  api.check(api.cudnnCreateFilterDescriptor(&p.kernel), what);
  api.check(api.cudnnCreateConvolutionDescriptor(&p.conv), what);
  api.check(api.cudnnSetTensor4dDescriptor(p.x, layout_, CUDNN_DATA_FLOAT, as_int(w.batch), as_int(w.channels),
                                           as_int(w.height), as_int(w.width)),
            what + " (input)");
  api.check(api.cudnnSetTensor4dDescriptor(p.y, layout_, CUDNN_DATA_FLOAT, as_int(w.batch), as_int(filters), as_int(w.out_h),
                                           as_int(w.out_w)),
            what + " (output)");
  api.check(api.cudnnSetFilter4dDescriptor(p.kernel, CUDNN_DATA_FLOAT, layout_, as_int(filters), as_int(w.channels),
                                           as_int(w.kernel_h), as_int(w.kernel_w)),
            what + " (kernel)");
  api.check(api.cudnnSetConvolution2dDescriptor(p.conv, as_int(w.pad_top), as_int(w.pad_left), as_int(w.stride_h),
                                                as_int(w.stride_w), 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            what);
  int n = 0, c = 0, h = 0, wd = 0;
  api.check(api.cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.kernel, &n, &c, &h, &wd), what);
  if (h != w.out_h || wd != w.out_w || c != filters)
    throw runtime_error(what + ": cuDNN gives a " + std::to_string(h) + "x" + std::to_string(wd) + " output, the layer " +
                        std::to_string(w.out_h) + "x" + std::to_string(w.out_w));

  // Timing needs the GPU to itself for a moment and memory cuDNN allocates:
  // never inside a capture (a new shape there fails at reserve() anyway).
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  const bool measure = convolution_autotune() && cudaStreamIsCapturing(stream_, &capture) == cudaSuccess &&
                       capture == cudaStreamCaptureStatusNone;
  size_t need = 0;
  // A direction for which nothing qualifies (a float32 kernel gradient
  // without FFT and Winograd, say) takes the other ways while the shape's
  // other directions keep theirs, as in CudnnGraphConvolution. None
  // planned: the shape is refused (takes()).
  std::exception_ptr unplanned;  // the first direction's failure
  std::string failures;
  const auto each = [&](auto& choice, auto&& chosen) {
    try {
      const auto [algo, math] = chosen();
      choice = {algo, math};
    } catch (const std::exception& e) {
      if (!unplanned) unplanned = std::current_exception();
      failures += std::string(failures.empty() ? "" : "\n") + e.what();
    }
  };
  each(p.forward, [&] {
    return choose<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
        [&](int wanted, int* got, cudnnConvolutionFwdAlgoPerf_t* perf) {
          return api.cudnnGetConvolutionForwardAlgorithm_v7(handle_, p.x, p.kernel, p.conv, p.y, wanted, got, perf);
        },
        [&](int wanted, int* got, cudnnConvolutionFwdAlgoPerf_t* perf) {
          return api.cudnnFindConvolutionForwardAlgorithm(handle_, p.x, p.kernel, p.conv, p.y, wanted, got, perf);
        },
        [&](cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
          return api.cudnnGetConvolutionForwardWorkspaceSize(handle_, p.x, p.kernel, p.conv, p.y, a, bytes);
        },
        tf32_, true, measure, p.conv, what + " (forward)", need);
  });
  each(p.backward_data, [&] {
    return choose<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
        [&](int wanted, int* got, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
          return api.cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, p.kernel, p.y, p.conv, p.x, wanted, got, perf);
        },
        [&](int wanted, int* got, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
          return api.cudnnFindConvolutionBackwardDataAlgorithm(handle_, p.kernel, p.y, p.conv, p.x, wanted, got, perf);
        },
        [&](cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
          return api.cudnnGetConvolutionBackwardDataWorkspaceSize(handle_, p.kernel, p.y, p.conv, p.x, a, bytes);
        },
        tf32_, true, measure, p.conv, what + " (gradient of the input)", need);
  });
  each(p.backward_filter, [&] {
    return choose<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
        [&](int wanted, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
          return api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle_, p.x, p.y, p.conv, p.kernel, wanted, got, perf);
        },
        [&](int wanted, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
          return api.cudnnFindConvolutionBackwardFilterAlgorithm(handle_, p.x, p.y, p.conv, p.kernel, wanted, got, perf);
        },
        [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* bytes) {
          return api.cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, p.x, p.y, p.conv, p.kernel, a, bytes);
        },
        tf32_, tf32_, measure, p.conv, what + " (gradient of the kernel)", need);
  });
  if (!p.forward && !p.backward_data && !p.backward_filter) std::rethrow_exception(unplanned);
  if (unplanned)
    std::fprintf(stderr, "%s; that direction takes the other ways (%s cuDNN does not)\n", failures.c_str(), layout_name());
  // One workspace for every plan, as large as the largest needs: sized on
  // the first (eager) step of each shape (plan()), never while a step is captured.
  p.workspace = need;
}

template <typename Chosen>
bool CudnnConvolution::ran(cudnnStatus_t status, Plan& p, std::optional<Chosen>& choice, const Window2D& w, int64_t filters,
                           const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return true;
  if (!CudnnLibrary::refusal(status)) lib().check(status, device_ + ": " + call, device_);
  // The algorithm was chosen blind to the pointers (the _v7 heuristics see
  // none): a replica's slice of a batch may start less aligned than the
  // engine wants. That refuses this call, not the shape.
  if (status == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER) return false;
  // This direction takes the other ways from here on; the shape's others
  // keep their algorithms.
  choice.reset();
  if (!p.forward && !p.backward_data && !p.backward_filter) refused_.insert(cudnn_key(w, filters));
  std::fprintf(stderr, "%s: %s: %s; this direction of the shape takes the other ways from here on (%s cuDNN does not)\n",
               device_.c_str(), call, lib().cudnnGetErrorString(status), layout_name());
  return false;
}

bool CudnnConvolution::forward(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  std::lock_guard lock(mutex_);
  Plan& p = plan(w, filters);
  if (!p.forward) return false;  // no algorithm qualified for this direction (make_plan)
  const float one = 1.0f, zero = 0.0f;
  lib().check(lib().cudnnSetConvolutionMathType(p.conv, p.forward->math), device_ + ": cudnnSetConvolutionMathType");
  return ran(lib().cudnnConvolutionForward(handle_, &one, p.x, x, p.kernel, kernel, p.conv, p.forward->algo, workspace_.get(),
                                           workspace_.bytes(), &zero, p.y, y),
             p, p.forward, w, filters, "cudnnConvolutionForward");
}

bool CudnnConvolution::backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) {
  std::lock_guard lock(mutex_);
  Plan& p = plan(w, filters);
  if (!p.backward_data) return false;
  const float one = 1.0f, zero = 0.0f;
  lib().check(lib().cudnnSetConvolutionMathType(p.conv, p.backward_data->math), device_ + ": cudnnSetConvolutionMathType");
  return ran(lib().cudnnConvolutionBackwardData(handle_, &one, p.kernel, kernel, p.y, dy, p.conv, p.backward_data->algo,
                                                workspace_.get(), workspace_.bytes(), &zero, p.x, dx),
             p, p.backward_data, w, filters, "cudnnConvolutionBackwardData");
}

bool CudnnConvolution::backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) {
  std::lock_guard lock(mutex_);
  Plan& p = plan(w, filters);
  if (!p.backward_filter) return false;
  const float one = 1.0f, zero = 0.0f;
  lib().check(lib().cudnnSetConvolutionMathType(p.conv, p.backward_filter->math), device_ + ": cudnnSetConvolutionMathType");
  return ran(lib().cudnnConvolutionBackwardFilter(handle_, &one, p.x, x, p.y, dy, p.conv, p.backward_filter->algo,
                                                  workspace_.get(), workspace_.bytes(), &zero, p.kernel, dkernel),
             p, p.backward_filter, w, filters, "cudnnConvolutionBackwardFilter");
}

}  // namespace strata::cuda
