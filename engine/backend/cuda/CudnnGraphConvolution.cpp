#include "backend/cuda/CudnnGraphConvolution.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "backend/cuda/ConvolutionWays.h"
#include "backend/cuda/CudaCheck.h"
#include "backend/cuda/CudaKernels.h"
#include "backend/cuda/CudnnLibrary.h"
#include "backend/cuda/TimingEvents.h"
#include "core/Error.h"

namespace strata::cuda {

namespace {
const CudnnLibrary& lib() { return CudnnLibrary::get(); }

// The tensors' ids in every graph and variant pack.
constexpr int64_t kImage = 1, kKernel = 2, kOutput = 3;
// What a plan may use beside the pool (as the legacy way's budget).
constexpr int64_t kWorkspaceBudget = int64_t{512} << 20;
// Engine configurations timed per shape and direction: the heuristics rank
// the likely ones first, and each costs a plan and three runs.
constexpr size_t kMostCandidates = 12;
// Pointers the plans may assume: the pool's blocks are aligned far more,
// a replica's slice of a batch at least to a float.
constexpr int64_t kAlignment = 16;
// The attributes cuDNN 9 deprecates in favour of device properties, which
// its earlier 9.x releases lack: CUDNN_ATTR_OPERATIONGRAPH_HANDLE and
// CUDNN_ATTR_EXECUTION_PLAN_HANDLE.
constexpr int kGraphHandle = 800, kPlanHandle = 400;

// The padding after the image that, with `pad_before`, gives `out` outputs
// (TF's "same" pads one more after than before where the window does not
// fit evenly); -1 when none does.
int64_t pad_after(int64_t size, int64_t pad_before, int64_t kernel, int64_t stride, int64_t out) {
  if (pad_before < 0 || stride <= 0 || out <= 0) return -1;
  const int64_t after = std::max<int64_t>(0, (out - 1) * stride + kernel - size - pad_before);
  const int64_t padded = size + pad_before + after;
  return padded >= kernel && (padded - kernel) / stride + 1 == out ? after : -1;
}

// A 4-d float tensor (n, c, h, w) in the layout: NHWC or NCHW strides. The
// layers' kernels travel as (filters, kh, kw, channels) or (filters,
// channels, kh, kw), cuDNN's (k, c, r, s) in the same layout.
CudnnDescriptor tensor(int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w, bool nhwc, const std::string& what) {
  CudnnDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
  const int64_t dims[4] = {n, c, h, w};
  const int64_t nhwc_strides[4] = {h * w * c, 1, w * c, c}, nchw_strides[4] = {c * h * w, h * w, w, 1};
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, nhwc ? nhwc_strides : nchw_strides);
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, kAlignment);
  t.finalized();
  return t;
}

// Whether an engine's notes allow it here (see the class comment);
// `transforms`: FFT and Winograd engines.
bool allowed(const CudnnDescriptor& engine, bool tf32, bool transforms) {
  cudnnBackendNumericalNote_t numerical[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  int64_t n_numerical = 0, n_behavior = 0;
  if (lib().cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                     CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n_numerical, numerical) != CUDNN_STATUS_SUCCESS ||
      lib().cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                     CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n_behavior, behavior) != CUDNN_STATUS_SUCCESS)
    return false;  // notes it will not tell: nothing is known of its arithmetic
  for (int64_t i = 0; i < std::min<int64_t>(n_numerical, CUDNN_NUMERICAL_NOTE_TYPE_COUNT); ++i) {
    switch (numerical[i]) {
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
        if (convolution_deterministic()) return false;
        break;
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: return false;
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
        if (!tf32) return false;
        break;
      case CUDNN_NUMERICAL_NOTE_FFT:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
        if (!transforms) return false;
        break;
      default: break;
    }
  }
  for (int64_t i = 0; i < std::min<int64_t>(n_behavior, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT); ++i)
    if (behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return false;
  return true;
}

// Whether a fault broke the device while engines were planned or timed
// (then the failure is the step's error, not the shape's refusal). Never a
// query of a capturing stream: that is illegal and invalidates the capture.
bool broken(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(stream, &capture);
  if (e == cudaSuccess && capture == cudaStreamCaptureStatusNone) e = cudaStreamQuery(stream);
  return e != cudaSuccess && e != cudaErrorNotReady;
}

int64_t engine_index(const CudnnDescriptor& engine) {
  int64_t index = -1, n = 0;
  lib().cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index);
  return index;
}
}  // namespace

CudnnGraphConvolution::CudnnGraphConvolution(DeviceMemory& memory, std::string device_name, cudaStream_t stream, bool tf32,
                                             cudnnTensorFormat_t layout)
    : memory_(memory),
      device_(std::move(device_name)),
      stream_(stream),
      tf32_(tf32),
      nhwc_(layout == CUDNN_TENSOR_NHWC),
      workspace_(memory, device_, stream) {
  lib().check(lib().cudnnCreate(&handle_), device_ + ": cudnnCreate");
  if (const cudnnStatus_t st = lib().cudnnSetStream(handle_, stream); st != CUDNN_STATUS_SUCCESS) {
    // No destructor runs for a constructor that throws: the handle goes here.
    lib().cudnnDestroy(std::exchange(handle_, nullptr));
    lib().check(st, device_ + ": cudnnSetStream");
  }
}

CudnnGraphConvolution::~CudnnGraphConvolution() {
  plans_.clear();  // the plans before the handle they were made with
  if (handle_) lib().cudnnDestroy(handle_);
}

bool CudnnGraphConvolution::takes(const Window2D& w, int64_t filters, Direction d) {
  // An empty batch (a replica without examples in a short last batch) stays
  // on the im2col path, which writes zeros.
  if (w.batch <= 0 || filters <= 0 || pad_after(w.height, w.pad_top, w.kernel_h, w.stride_h, w.out_h) < 0 ||
      pad_after(w.width, w.pad_left, w.kernel_w, w.stride_w, w.out_w) < 0)
    return false;
  const CudnnKey key = cudnn_key(w, filters);
  std::lock_guard lock(mutex_);
  if (refused_.contains(key)) return false;
  Plans* p = nullptr;
  try {
    p = &planned(w, filters);
  } catch (const std::exception& e) {
    if (broken(stream_)) throw;
    refused_.insert(key);
    std::fprintf(stderr, "%s; this shape takes the other ways (%s cuDNN graph does not)\n", e.what(), layout_name());
    return false;
  }
  // Not a refusal: no memory for the workspace now (a later call may fit),
  // or a shape first seen while a step is captured (the caller's error).
  return p->plan[static_cast<size_t>(d)].has_value() && workspace_.try_reserve(p->workspace);
}

CudnnGraphConvolution::Plans& CudnnGraphConvolution::planned(const Window2D& w, int64_t filters) {
  auto [it, fresh] = plans_.try_emplace(cudnn_key(w, filters));
  if (fresh) {
    try {
      make_plans(it->second, w, filters);
    } catch (...) {
      plans_.erase(it);
      throw;
    }
  }
  return it->second;
}

void CudnnGraphConvolution::make_plans(Plans& p, const Window2D& w, int64_t filters) {
  const std::string what = describe_cudnn_convolution(device_, w, layout_name()) + " (cuDNN graph)";
  p.parts.push_back(tensor(kImage, w.batch, w.channels, w.height, w.width, nhwc_, what + " (input)"));
  p.parts.push_back(tensor(kKernel, filters, w.channels, w.kernel_h, w.kernel_w, nhwc_, what + " (kernel)"));
  p.parts.push_back(tensor(kOutput, w.batch, filters, w.out_h, w.out_w, nhwc_, what + " (output)"));
  const CudnnDescriptor &x = p.parts[0], &k = p.parts[1], &y = p.parts[2];

  CudnnDescriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, what);
  const int64_t dims = 2, dilations[2] = {1, 1}, strides[2] = {w.stride_h, w.stride_w}, before[2] = {w.pad_top, w.pad_left},
                after[2] = {pad_after(w.height, w.pad_top, w.kernel_h, w.stride_h, w.out_h),
                            pad_after(w.width, w.pad_left, w.kernel_w, w.stride_w, w.out_w)};
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, dims);
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations);
  conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
  conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, before);
  conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, after);
  conv.finalized();

  // One operation per direction, named by its own attributes: the forward
  // reads X and W into Y; the input gradient reads DY and W into DX; the
  // kernel gradient reads X and DY into DW.
  struct Op {
    cudnnBackendDescriptorType_t type;
    int first, second, out, conv, alpha, beta;
    const CudnnDescriptor *a, *b, *c;
  };
  const Op ops[3] = {
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, &x, &k, &y},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, &y, &k, &x},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, &x, &y, &k},
  };
  p.parts.push_back(std::move(conv));
  const CudnnDescriptor& convolution = p.parts.back();
  const float one = 1.0f, zero = 0.0f;
  std::exception_ptr unplanned;  // the first direction's failure
  std::string failures;
  for (int d = 0; d < 3; ++d) {
    const Op& o = ops[d];
    const std::string named = what + " (" + ConvolutionWays::direction_name(static_cast<Direction>(d)) + ")";
    // A direction cuDNN will not describe, or no engine qualifies for (a
    // float32 kernel gradient without FFT and Winograd, say), takes the
    // other ways; the shape's others keep theirs. None planned: the shape
    // is refused.
    try {
      CudnnDescriptor op(o.type, named);
      op.set(o.first, *o.a);
      op.set(o.second, *o.b);
      op.set(o.out, *o.c);
      op.set(o.conv, convolution);
      op.set(o.alpha, CUDNN_TYPE_FLOAT, 1, &one);
      op.set(o.beta, CUDNN_TYPE_FLOAT, 1, &zero);
      op.finalized();
      CudnnDescriptor plan = choose(p, op, w, filters, tf32_ || static_cast<Direction>(d) != Direction::BackwardFilter,
                                    named);
      p.parts.push_back(std::move(op));  // kept as long as the plan made from it
      p.plan[d].emplace(std::move(plan));
    } catch (const std::exception& e) {
      if (broken(stream_)) throw;
      if (!unplanned) unplanned = std::current_exception();
      failures += std::string(failures.empty() ? "" : "\n") + e.what();
    }
  }
  if (!p.plan[0] && !p.plan[1] && !p.plan[2]) std::rethrow_exception(unplanned);
  if (unplanned)
    std::fprintf(stderr, "%s; that direction takes the other ways (%s cuDNN graph does not)\n", failures.c_str(),
                 layout_name());
}

CudnnDescriptor CudnnGraphConvolution::choose(Plans& p, const CudnnDescriptor& op, const Window2D& w, int64_t filters,
                                              bool transforms, const std::string& what) {
  const auto& api = lib();
  // An error already pending on this thread is some earlier call's, left
  // for its check to report; only what planning leaves is cleared below.
  const bool clean = cudaPeekAtLastError() == cudaSuccess;
  CudnnDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what);
  cudnnBackendDescriptor_t op_raw = op.get();
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op_raw);
  graph.set(kGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle_);
  graph.finalized();

  // Every allowed configuration the heuristics list, instant mode's first,
  // made into plans (a configuration cuDNN will not finalize for this shape
  // is passed over).
  struct Candidate {
    CudnnDescriptor plan;
    int64_t workspace;
    int64_t engine;
    size_t config;  // in `configs`
  };
  // The configurations before the plans made from them, so they outlive
  // the plans on the way out too.
  std::vector<CudnnDescriptor> configs;
  std::vector<Candidate> candidates;
  // Why the listed configurations were passed over: the message when none
  // qualifies, and STRATA_CUDNN_LOG's line.
  int listed = 0, disallowed = 0, unfinalized = 0, oversized = 0;
  // Engines made candidates or passed over for their notes (an engine's
  // notes are its own, whatever the configuration), which fallback mode's
  // list repeats; one whose configuration did not finalize or fit is tried
  // again in another.
  std::set<int64_t> seen;
  std::string passed_over;
  std::string heuristics_failed;  // a mode that listed nothing, with cuDNN's status: the message when none qualifies
  auto pass_over = [&](int& count, int64_t engine, const std::string& why) {
    ++count;
    if (convolution_log()) passed_over += "\n  engine " + std::to_string(engine) + ": " + why;
  };
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_INSTANT, CUDNN_HEUR_MODE_FALLBACK}) {
    if (candidates.size() >= kMostCandidates) break;
    const char* mode_name = mode == CUDNN_HEUR_MODE_INSTANT ? "instant" : "fallback";
    auto failed = [&](const std::string& why) { heuristics_failed += std::string("; ") + mode_name + " heuristics: " + why; };
    CudnnDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (const cudnnStatus_t st = heuristics.finalize(); st != CUDNN_STATUS_SUCCESS) {
      failed(std::string("not finalized, ") + api.cudnnGetErrorString(st));
      continue;
    }
    int64_t count = 0;
    if (const cudnnStatus_t st = api.cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
        st != CUDNN_STATUS_SUCCESS || count <= 0) {
      failed(st != CUDNN_STATUS_SUCCESS ? std::string("results not given, ") + api.cudnnGetErrorString(st)
                                        : std::string("no configuration listed"));
      continue;
    }
    const size_t first = configs.size();
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, what);
      raw.push_back(configs.back().get());
    }
    int64_t got = 0;
    if (const cudnnStatus_t st = api.cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                              CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data());
        st != CUDNN_STATUS_SUCCESS) {
      failed(std::string("results not given, ") + api.cudnnGetErrorString(st));
      continue;
    }
    for (size_t i = first; i < first + static_cast<size_t>(std::min(got, count)); ++i) {
      if (candidates.size() >= kMostCandidates) break;
      CudnnDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, what);
      cudnnBackendDescriptor_t engine_raw = engine.get();
      int64_t n = 0;
      if (api.cudnnBackendGetAttribute(configs[i].get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                       &engine_raw) != CUDNN_STATUS_SUCCESS)
        continue;
      // Fallback mode repeats engines instant mode listed: each would be
      // planned and timed again, and count toward kMostCandidates.
      const int64_t index = engine_index(engine);
      if (index >= 0 && seen.contains(index)) continue;
      ++listed;
      if (!allowed(engine, tf32_, transforms)) {
        seen.insert(index);
        pass_over(disallowed, index, "its numerical or behaviour notes");
        continue;
      }
      CudnnDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, what);
      plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[i]);
      plan.set(kPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle_);
      if (const cudnnStatus_t st = plan.finalize(); st != CUDNN_STATUS_SUCCESS) {
        pass_over(unfinalized, index, std::string("plan not finalized, ") + api.cudnnGetErrorString(st));
        continue;
      }
      int64_t bytes = 0;
      if (const cudnnStatus_t st = api.cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                                CUDNN_TYPE_INT64, 1, &n, &bytes);
          st != CUDNN_STATUS_SUCCESS) {
        pass_over(unfinalized, index, std::string("workspace size not given, ") + api.cudnnGetErrorString(st));
        continue;
      }
      if (bytes < 0 || bytes > kWorkspaceBudget) {
        pass_over(oversized, index, "workspace " + std::to_string(bytes >> 20) + " MiB");
        continue;
      }
      seen.insert(index);
      candidates.push_back(Candidate{std::move(plan), bytes, index, i});
    }
  }
  // A failed query must not be reported by the next kernel launch's check.
  if (clean) cudaGetLastError();
  if (convolution_log() && !passed_over.empty())
    std::fprintf(stderr, "%s: passed over%s\n", what.c_str(), passed_over.c_str());
  if (candidates.empty())
    throw runtime_error(what + ": cuDNN's heuristics offer no " + (convolution_deterministic() ? "deterministic " : "") +
                        "float32 engine within a " + std::to_string(kWorkspaceBudget >> 20) +
                        " MiB workspace for this convolution (" + std::to_string(listed) +
                        " listed: " + std::to_string(disallowed) + " passed over for their numerical or behaviour notes, " +
                        std::to_string(unfinalized) + " whose plan cuDNN did not finalize or size, " +
                        std::to_string(oversized) + " over the workspace" + heuristics_failed +
                        "; STRATA_CUDNN_LOG=1 names them)");

  // Timed on this GPU unless autotuning is off or the stream is being
  // captured (timing would break the capture): each candidate once to warm
  // up, then the best of two runs, on scratch tensors of the shape. One that
  // fails to run is passed over.
  size_t best = 0;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  const bool measure = convolution_autotune() && candidates.size() > 1 &&
                       cudaStreamIsCapturing(stream_, &capture) == cudaSuccess && capture == cudaStreamCaptureStatusNone;
  std::vector<float> ms(candidates.size(), std::numeric_limits<float>::infinity());
  if (measure) {
    const size_t x_bytes = sizeof(float) * static_cast<size_t>(w.batch * w.height * w.width * w.channels),
                 k_bytes = sizeof(float) * static_cast<size_t>(filters * w.kernel_h * w.kernel_w * w.channels),
                 y_bytes = sizeof(float) * static_cast<size_t>(w.batch * w.out_h * w.out_w * filters);
    // Device memory for the timing only, given back after it (a candidate's
    // large workspace is not kept unless it is chosen).
    struct Scratch {
      DeviceMemory& memory;
      size_t bytes;
      void* p;
      Scratch(DeviceMemory& m, size_t b, cudaStream_t s) : memory(m), bytes(std::max<size_t>(b, 4)), p(m.allocate(bytes)) {
        try {
          STRATA_CUDA(cudaMemsetAsync(p, 0, bytes, s));
        } catch (...) {
          memory.deallocate(p, bytes);  // no destructor for a constructor that throws
          throw;
        }
      }
      ~Scratch() { memory.deallocate(p, bytes); }
      Scratch(const Scratch&) = delete;
      Scratch& operator=(const Scratch&) = delete;
    };
    // No memory for them beside the pool: the heuristics' order decides, as
    // for a shape first met inside a capture (not a refusal of the shape).
    std::optional<Scratch> x, k, y;
    try {
      x.emplace(memory_, x_bytes, stream_);
      k.emplace(memory_, k_bytes, stream_);
      y.emplace(memory_, y_bytes, stream_);
    } catch (const Error&) {
      x.reset(), k.reset(), y.reset();
    }
    const TimingEvents marks(2);
    size_t unfit = candidates.size();  // the first one without memory for its workspace
    for (size_t i = 0; y && i < candidates.size(); ++i) {
      std::optional<Scratch> workspace;
      try {
        workspace.emplace(memory_, static_cast<size_t>(candidates[i].workspace), stream_);
      } catch (const Error&) {
        unfit = std::min(unfit, i);
        continue;  // no memory for this one's workspace beside the pool's: the others are timed
      }
      if (const cudnnStatus_t st = execute(candidates[i].plan, x->p, k->p, y->p, workspace->p); st != CUDNN_STATUS_SUCCESS) {
        if (clean) cudaGetLastError();  // or the next launch's check reports cuDNN's failure as its own
        // cuDNN found no device memory of its own inside the call: like a
        // workspace without room, not a candidate that does not run.
        if (st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) unfit = std::min(unfit, i);
        continue;
      }
      for (int round = 0; round < 2; ++round) {
        // The GPU kept busy meanwhile, so the marks time its work, not the host's queueing.
        spin(stream_, 200);
        STRATA_CUDA(cudaEventRecord(marks[0], stream_));
        const cudnnStatus_t ran = execute(candidates[i].plan, x->p, k->p, y->p, workspace->p);
        STRATA_CUDA(cudaEventRecord(marks[1], stream_));
        if (ran != CUDNN_STATUS_SUCCESS) {
          if (clean) cudaGetLastError();
          if (ran == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) unfit = std::min(unfit, i);
          ms[i] = std::numeric_limits<float>::infinity();
          break;
        }
        STRATA_CUDA(cudaEventSynchronize(marks[1]));
        float t = 0;
        STRATA_CUDA(cudaEventElapsedTime(&t, marks[0], marks[1]));
        ms[i] = std::min(ms[i], t);
      }
      if (ms[i] < ms[best]) best = i;
    }
    STRATA_CUDA(cudaStreamSynchronize(stream_));
    if (clean) cudaGetLastError();
    // None ran for want of memory beside the pool: the heuristics' order
    // decides among those, as without timing (not a refusal of the shape).
    if (y && !std::isfinite(ms[best])) {
      if (unfit == candidates.size())
        throw runtime_error(what + ": none of the " + std::to_string(candidates.size()) +
                            " cuDNN engine configurations offered for this convolution ran");
      best = unfit;
    }
  }
  if (convolution_log()) {
    std::string times;
    for (size_t i = 0; i < candidates.size(); ++i) {
      char one[64];
      std::snprintf(one, sizeof one, "%sengine %lld %.3f ms", i ? ", " : "", static_cast<long long>(candidates[i].engine),
                    static_cast<double>(ms[i]));
      times += one;
    }
    std::fprintf(stderr, "%s: engine %lld (%s)\n", what.c_str(), static_cast<long long>(candidates[best].engine),
                 measure ? times.c_str() : "heuristics");
  }
  p.workspace = std::max(p.workspace, static_cast<size_t>(candidates[best].workspace));
  // What the plan was made from stays with it.
  p.parts.push_back(std::move(graph));
  p.parts.push_back(std::move(configs[candidates[best].config]));
  return std::move(candidates[best].plan);
}

cudnnStatus_t CudnnGraphConvolution::execute(const CudnnDescriptor& plan, const void* x, const void* kernel, const void* y,
                                             void* workspace) {
  void* pointers[3] = {const_cast<void*>(x), const_cast<void*>(kernel), const_cast<void*>(y)};
  const int64_t ids[3] = {kImage, kKernel, kOutput};
  CudnnDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, device_ + ": cuDNN variant pack");
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids);
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalized();
  return lib().cudnnBackendExecute(handle_, plan.get(), pack.get());
}

bool CudnnGraphConvolution::run(const Window2D& w, int64_t filters, Direction d, const void* x, const void* kernel,
                                const void* y, const char* call) {
  for (const void* ptr : {x, kernel, y})
    if (reinterpret_cast<uintptr_t>(ptr) % kAlignment != 0) return false;
  std::lock_guard lock(mutex_);
  if (refused_.contains(cudnn_key(w, filters))) return false;
  Plans& p = planned(w, filters);
  auto& plan = p.plan[static_cast<size_t>(d)];
  if (!plan) return false;  // no engine qualified for this direction (make_plans), or it was refused
  workspace_.reserve(p.workspace);
  // An error already pending is an earlier call's, left for its check.
  const bool clean = cudaPeekAtLastError() == cudaSuccess;
  const cudnnStatus_t status = execute(*plan, x, kernel, y, workspace_.get());
  if (status == CUDNN_STATUS_SUCCESS) return true;
  if (clean) cudaGetLastError();  // or the next launch's check reports cuDNN's failure as its own
  // A plan cuDNN made and finalized for this shape refuses only when it
  // does not support a call (or its pointers' alignment); any other bad
  // parameter is a mistake in the descriptors made here, which a silent
  // fallback to the other ways would hide from the GPU check.
  if (CUDNN_STATUS_CATEGORY(static_cast<int>(status)) != CUDNN_STATUS_NOT_SUPPORTED &&
      status != CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    lib().check(status, device_ + ": " + call + " (cuDNN's graph API; STRATA_CUDNN_GRAPH=0 leaves it out)", device_);
  if (status == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER) return false;  // this call's pointers, not the shape
  // This direction takes the other ways from here on; the shape's others
  // keep their plans. Its own stays alive with the descriptors (a graph
  // captured before may have run it).
  p.parts.push_back(std::move(*plan));
  plan.reset();
  if (!p.plan[0] && !p.plan[1] && !p.plan[2]) refused_.insert(cudnn_key(w, filters));
  std::fprintf(stderr,
               "%s: %s: %s; this direction of the shape takes the other ways from here on (%s cuDNN graph does not)\n",
               device_.c_str(), call, lib().cudnnGetErrorString(status), layout_name());
  return false;
}

bool CudnnGraphConvolution::forward(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  return run(w, filters, Direction::Forward, x, kernel, y, "cudnnBackendExecute (forward)");
}

bool CudnnGraphConvolution::backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel,
                                          float* dx) {
  return run(w, filters, Direction::BackwardData, dx, kernel, dy, "cudnnBackendExecute (gradient of the input)");
}

bool CudnnGraphConvolution::backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy,
                                            float* dkernel) {
  return run(w, filters, Direction::BackwardFilter, x, dkernel, dy, "cudnnBackendExecute (gradient of the kernel)");
}

}  // namespace strata::cuda
