#include "backend/cuda/ConvolutionWays.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

ConvolutionWays::ConvolutionWays() {
  if (const char* v = std::getenv("STRATA_CONV_WAY")) forced_ = v;
  if (const char* v = std::getenv("STRATA_CONV_WAYS_FILE")) {
    file_ = v;
    // Lines of the twelve key numbers and a way's name, as save() writes them.
    std::ifstream in(file_);
    Key key{};
    std::string name;
    while (in) {
      for (int64_t& k : key) in >> k;
      if (in >> name) kept_[key] = name;
    }
  }
}

void ConvolutionWays::save(const Key& key, const std::string& name) {
  if (file_.empty()) return;
  static std::mutex appending;  // every GPU's ways append to the one file
  std::lock_guard lock(appending);
  std::ofstream out(file_, std::ios::app);
  for (int64_t k : key) out << k << ' ';
  out << name << '\n';
}

void ConvolutionWays::force(std::string name) {
  std::lock_guard lock(mutex_);
  forced_ = std::move(name);
}

namespace {
// The way named `name` in `ways`, or the last (which never refuses).
const ConvolutionWays::Way& named(std::span<const ConvolutionWays::Way> ways, const std::string& name) {
  for (const auto& way : ways)
    if (name == way.name) return way;
  return ways.back();
}
}  // namespace

void ConvolutionWays::run(const Window2D& w, int64_t filters, Direction d, cudaStream_t stream, const Device& device,
                          std::span<const Way> ways) {
  const Key key{w.batch,    w.height,   w.width,   w.channels, w.kernel_h, w.kernel_w,
                w.stride_h, w.stride_w, w.pad_top, w.pad_left, filters,    static_cast<int64_t>(d)};
  std::optional<std::string> kept;
  {
    std::lock_guard lock(mutex_);
    if (!forced_.empty()) kept = forced_;
    else if (auto it = kept_.find(key); it != kept_.end()) kept = it->second;
  }
  if (!kept) {
    // One race at a time: replicas sharing the GPU meet a new shape together
    // in their first step, and timings of interleaved kernels would mean
    // nothing. Whoever comes second finds the choice made.
    std::lock_guard racing(race_mutex_);
    {
      std::lock_guard lock(mutex_);
      if (auto it = kept_.find(key); it != kept_.end()) kept = it->second;
    }
    if (!kept) {
      // Inside a capture nothing can be timed: the first way (cuDNN where
      // it takes the shape), kept, as the graph will replay it; with
      // autotuning off cuDNN's heuristics rule.
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      STRATA_CUDA(cudaStreamIsCapturing(stream, &capture));
      if (capture != cudaStreamCaptureStatusNone || !convolution_autotune() || ways.size() == 1) {
        kept = ways.front().name;
      } else {
        const std::string fastest = race(w, filters, d, stream, device, ways);
        std::lock_guard lock(mutex_);
        kept_.emplace(key, fastest);
        save(key, fastest);
        return;  // the race ended with the fastest way's output
      }
      std::lock_guard lock(mutex_);
      kept_.emplace(key, *kept);
    }
  }
  const Way& way = named(ways, *kept);
  if (!way.run()) ways.back().run();
}

std::string ConvolutionWays::race(const Window2D& w, int64_t filters, Direction d, cudaStream_t stream, const Device& device,
                                  std::span<const Way> ways) {
  // Two marks around each way.
  struct Marks {
    std::vector<cudaEvent_t> e;
    explicit Marks(size_t n) : e(n) {
      for (cudaEvent_t& m : e) STRATA_CUDA(cudaEventCreate(&m));
    }
    ~Marks() {
      for (cudaEvent_t m : e)
        if (m) cudaEventDestroy(m);
    }
  } marks(2 * ways.size());
  std::vector<float> ms(ways.size(), 0.0f);
  std::vector<bool> out(ways.size(), false);
  std::exception_ptr failure;
  size_t last_run = ways.size();
  // Twice: the first round pays for first uses (cuBLASLt's heuristics,
  // cuDNN's lazily loaded kernels, the pool's growth); the second is timed.
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < ways.size(); ++i) {
      if (out[i]) continue;
      STRATA_CUDA(cudaEventRecord(marks.e[2 * i], stream));
      try {
        out[i] = !ways[i].run();
      } catch (const std::exception& e) {
        // A patch matrix may not fit (it holds kh * kw copies of the input)
        // where cuDNN needs little: the others run.
        if (convolution_log())
          std::fprintf(stderr, "%s: convolution way %s not taken: %s\n", device.str().c_str(), ways[i].name, e.what());
        failure = std::current_exception();
        out[i] = true;
      }
      STRATA_CUDA(cudaEventRecord(marks.e[2 * i + 1], stream));
      if (!out[i]) last_run = i;
    }
    if (last_run == ways.size()) std::rethrow_exception(failure);  // every way failed; the last one's error
    STRATA_CUDA(cudaEventSynchronize(marks.e[2 * last_run + 1]));
  }
  for (size_t i = 0; i < ways.size(); ++i)
    if (!out[i]) STRATA_CUDA(cudaEventElapsedTime(&ms[i], marks.e[2 * i], marks.e[2 * i + 1]));
  size_t best = last_run;  // ties go to the earlier way
  for (size_t i = 0; i < ways.size(); ++i)
    if (!out[i] && (ms[i] < ms[best] || (ms[i] == ms[best] && i < best))) best = i;
  // The output must be the kept way's, so that a run's first step computes
  // what its later steps would.
  if (best != last_run && !ways[best].run()) ways.back().run();
  if (convolution_log()) {
    std::string times;
    for (size_t i = 0; i < ways.size(); ++i) {
      char one[96];
      if (out[i]) std::snprintf(one, sizeof one, "%s%s refused", times.empty() ? "" : ", ", ways[i].name);
      else
        std::snprintf(one, sizeof one, "%s%s %.3f ms", times.empty() ? "" : ", ", ways[i].name, static_cast<double>(ms[i]));
      times += one;
    }
    std::fprintf(stderr, "%s: convolution %lldx%lld over %lldx%lldx%lldx%lld to %lld filters (%s): %s (%s)\n",
                 device.str().c_str(), static_cast<long long>(w.kernel_h), static_cast<long long>(w.kernel_w),
                 static_cast<long long>(w.batch), static_cast<long long>(w.height), static_cast<long long>(w.width),
                 static_cast<long long>(w.channels), static_cast<long long>(filters), direction_name(d), ways[best].name,
                 times.c_str());
  }
  return ways[best].name;
}

}  // namespace strata::cuda
