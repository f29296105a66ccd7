#include "backend/cuda/ConvolutionWays.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/CudaCheck.h"
#include "backend/cuda/CudaKernels.h"
#include "backend/cuda/TimingEvents.h"
#include "core/Error.h"

namespace strata::cuda {

namespace {
bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

}  // namespace

const char* ConvolutionWays::direction_name(Direction d) {
  switch (d) {
    case Direction::Forward: return "forward";
    case Direction::BackwardData: return "gradient of the input";
    case Direction::BackwardFilter: return "gradient of the kernel";
  }
  return "?";
}

bool convolution_autotune() {
  static const bool on = !env_is("STRATA_CUDNN_AUTOTUNE", "0");
  return on;
}

bool convolution_log() {
  static const bool on = env_is("STRATA_CUDNN_LOG", "1");
  return on;
}

bool convolution_deterministic() {
  static const bool on = !env_is("STRATA_DETERMINISTIC", "0");
  return on;
}

ConvolutionWays::ConvolutionWays() {
  if (const char* v = std::getenv("STRATA_CONV_WAY")) forced_ = v;
}

void ConvolutionWays::keep_in_file(const std::string& gpu_model, bool tf32) {
  const char* v = std::getenv("STRATA_CONV_WAYS_FILE");
  if (!v) return;
  // "NVIDIA_H200:fp32": one field, whatever spaces the model's name has;
  // ":nondet" where non-deterministic algorithms compete (their times would
  // mislead a deterministic run).
  std::string profile = gpu_model + (tf32 ? ":tf32" : ":fp32") + (convolution_deterministic() ? "" : ":nondet");
  for (char& c : profile)
    if (std::isspace(static_cast<unsigned char>(c))) c = '_';
  // Lines of the profile, the fourteen key numbers and a way's name, as save()
  // writes them; a line that is not (torn by a crash), or of another GPU
  // model or arithmetic, is passed over, and a name a shape no longer
  // offers is timed again (run()).
  std::lock_guard lock(mutex_);
  file_ = v;
  profile_ = std::move(profile);
  std::ifstream in(file_);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    Key key{};
    std::string profile_field, name, extra;
    bool whole = fields >> profile_field && profile_field == profile_;
    for (int64_t& k : key) whole = whole && static_cast<bool>(fields >> k);
    if (whole && fields >> name && !(fields >> extra)) kept_[key] = name;
  }
}

void ConvolutionWays::save(const Key& key, const std::string& name) {
  if (file_.empty()) return;
  static std::mutex appending;  // every GPU's ways append to the one file
  std::lock_guard lock(appending);
  std::ostringstream line;
  line << profile_ << ' ';
  for (int64_t k : key) line << k << ' ';
  line << name << '\n';
  std::ofstream(file_, std::ios::app) << line.str();  // one write: whole lines
}

void ConvolutionWays::force(std::string name) {
  std::lock_guard lock(mutex_);
  forced_ = std::move(name);
}

namespace {
// The way named `name` in `ways`, or null.
const ConvolutionWays::Way* named(std::span<const ConvolutionWays::Way> ways, const std::string& name) {
  for (const auto& way : ways)
    if (name == way.name) return &way;
  return nullptr;
}
}  // namespace

void ConvolutionWays::run(const Window2D& w, int64_t filters, Direction d, bool side, cudaStream_t stream,
                          const Device& device, std::span<const Way> ways) {
  const Key key{w.batch,    w.height,   w.width,   w.channels, w.kernel_h, w.kernel_w,
                w.stride_h, w.stride_w, w.pad_top, w.pad_left, filters,    static_cast<int64_t>(d) + (side ? 3 : 0),
                w.out_h,    w.out_w};
  std::string forced;
  const Way* kept = nullptr;
  bool chosen = false;  // a way is kept for the shape, offered now or not
  {
    std::lock_guard lock(mutex_);
    forced = forced_;
    if (auto it = kept_.find(key); forced.empty() && it != kept_.end()) {
      chosen = true;
      kept = named(ways, it->second);
    }
  }
  if (!forced.empty()) {
    // A way the shape does not offer, or that refuses: the last runs, and
    // the checks and profiles that force ways are told, once.
    const Way* way = named(ways, forced);
    if (!way || !way->run()) {
      ++forced_refusals_;
      static std::once_flag told;
      std::call_once(told, [&] {
        std::fprintf(stderr, "%s: convolution way %s (STRATA_CONV_WAY or forced) %s a shape; %s ran instead\n",
                     device.str().c_str(), forced.c_str(), way ? "refused" : "is not offered for", ways.back().name);
      });
      ways.back().run();
    }
    return;
  }
  if (!kept && chosen) {
    // The kept way is not offered inside a capture (its workspace cannot
    // grow in one): the first offered way is captured, untimed, and the
    // timed choice stays for the calls that offer it (until 2026-12-08 the
    // untimed one replaced it for good). Outside a capture a kept way not
    // offered (a way file's name this shape no longer offers) is raced
    // again, below.
    if (capturing(stream)) {
      if (!ways.front().run()) ways.back().run();
      return;
    }
  }
  if (!kept) {
    // One race at a time: replicas sharing the GPU meet a new shape together
    // in their first step; whoever comes second finds the choice made. (Their
    // other work queued meanwhile on the GPU can still fall inside a race's
    // marks: the choice is then made on noisier times.)
    std::lock_guard racing(race_mutex_);
    {
      std::lock_guard lock(mutex_);
      if (auto it = kept_.find(key); it != kept_.end()) kept = named(ways, it->second);
    }
    if (!kept) {
      // Inside a capture nothing can be timed: the first way (cuDNN where
      // it takes the shape), kept, as the graph will replay it; with
      // autotuning off cuDNN's heuristics rule.
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      STRATA_CUDA(cudaStreamIsCapturing(stream, &capture));
      const bool timed = capture == cudaStreamCaptureStatusNone && convolution_autotune() && ways.size() > 1;
      // The race ends with the fastest way's output.
      std::vector<std::pair<std::string, double>> timed_ms;
      const std::string choice = timed ? race(w, filters, d, stream, device, ways, timed_ms) : ways.front().name;
      {
        std::lock_guard lock(mutex_);
        kept_[key] = choice;
        choices_.push_back(ConvolutionChoice{w, filters, std::string(direction_name(d)) + (side ? " (side stream)" : ""),
                                             choice, std::move(timed_ms)});
        if (timed) save(key, choice);  // a timed choice only
      }
      if (timed) return;
      kept = &ways.front();
    }
  }
  try {
    if (kept->run()) return;
  } catch (const std::exception& e) {
    // Memory there when the shape was raced may be gone (an evaluation or a
    // partial batch beside the step's buffers): outside a capture the last
    // way runs this call, as the race passes over a way that does not fit.
    // Inside one the failure is the capture's (its memory is the graph's).
    if (!is_device_memory_exhausted(e) || kept == &ways.back() || capturing(stream)) throw;
    if (convolution_log())
      std::fprintf(stderr, "%s: convolution way %s not taken this call: %s\n", device.str().c_str(), kept->name, e.what());
  }
  ways.back().run();
}

std::vector<ConvolutionChoice> ConvolutionWays::choices() const {
  std::lock_guard lock(mutex_);
  return choices_;
}

std::string ConvolutionWays::race(const Window2D& w, int64_t filters, Direction d, cudaStream_t stream, const Device& device,
                                  std::span<const Way> ways, std::vector<std::pair<std::string, double>>& timed_ms) {
  // Two marks around each way.
  const TimingEvents marks(2 * ways.size());
  std::vector<float> ms(ways.size(), std::numeric_limits<float>::infinity());
  std::vector<bool> out(ways.size(), false);
  std::exception_ptr failure;
  size_t last_run = ways.size();
  // Three rounds: the first pays for first uses (cuBLASLt's heuristics,
  // cuDNN's lazily loaded kernels, the pool's growth); the best of the other
  // two counts. Before each way the GPU is kept busy for a while, so that
  // the host has queued all of the way's launches by the time the GPU
  // reaches them: the marks then time the GPU's work, not the host's
  // queueing (a way of many small launches would otherwise pay for it,
  // which a replayed step graph never does).
  constexpr int kRounds = 3;
  constexpr int64_t kLeadMicroseconds = 500;
  for (int round = 0; round < kRounds; ++round) {
    last_run = ways.size();
    for (size_t i = 0; i < ways.size(); ++i) {
      if (out[i]) continue;
      spin(stream, kLeadMicroseconds);
      STRATA_CUDA(cudaEventRecord(marks[2 * i], stream));
      try {
        out[i] = !ways[i].run();
      } catch (const std::exception& e) {
        // A patch matrix may not fit (it holds kh * kw copies of the input)
        // where cuDNN needs little: the others run. Any other failure is the
        // step's.
        if (!is_device_memory_exhausted(e)) throw;
        if (convolution_log())
          std::fprintf(stderr, "%s: convolution way %s not taken: %s\n", device.str().c_str(), ways[i].name, e.what());
        failure = std::current_exception();
        out[i] = true;
      }
      STRATA_CUDA(cudaEventRecord(marks[2 * i + 1], stream));
      if (!out[i]) last_run = i;
    }
    if (last_run == ways.size()) {
      // None ran: out of memory for every way (the error says how much), or
      // refused by all, which the last way's contract rules out.
      if (failure) std::rethrow_exception(failure);
      throw runtime_error(device.str() + ": no way of computing this convolution ran");
    }
    STRATA_CUDA(cudaEventSynchronize(marks[2 * last_run + 1]));
    if (round == 0) continue;
    for (size_t i = 0; i < ways.size(); ++i) {
      if (out[i]) continue;
      float t = 0;
      STRATA_CUDA(cudaEventElapsedTime(&t, marks[2 * i], marks[2 * i + 1]));
      ms[i] = std::min(ms[i], t);
    }
  }
  size_t best = last_run;  // ties go to the earlier way
  for (size_t i = 0; i < ways.size(); ++i)
    if (!out[i] && (ms[i] < ms[best] || (ms[i] == ms[best] && i < best))) best = i;
  // The output must be the kept way's, so that a run's first step computes
  // what its later steps would.
  if (best != last_run && !ways[best].run()) ways.back().run();
  for (size_t i = 0; i < ways.size(); ++i)
    timed_ms.emplace_back(ways[i].name, out[i] ? std::numeric_limits<double>::infinity() : static_cast<double>(ms[i]));
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
