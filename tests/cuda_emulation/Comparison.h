#pragma once
// What the emulation tests share: seeded inputs (a fixed seed, so a run is
// reproducible; STRATA_TEST_SEED picks another), the GPU check's error
// measure and tolerances (tools/gpu_check/Tolerances.h, so both judge a
// kernel alike), and the checks every launch ends with.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "Scheduler.h"
#include "gpu_check/Tolerances.h"

namespace emutest {

using strata::gpu_check::tolerance::kElementwise;
using strata::gpu_check::tolerance::kExact;
using strata::gpu_check::tolerance::summed;

// The stream every launch is given (the emulation runs each launch at once).
inline constexpr cudaStream_t kStream = nullptr;

inline std::mt19937_64& rng() {
  static std::mt19937_64 gen([] {
    const char* env = std::getenv("STRATA_TEST_SEED");
    return env && *env ? std::strtoull(env, nullptr, 10) : 20261206ull;
  }());
  return gen;
}

inline std::vector<float> uniform(int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng());
  return v;
}

inline int64_t below(int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng()); }

// Class labels (or row numbers) in [0, classes).
inline std::vector<int32_t> labels_in(int64_t n, int64_t classes) {
  std::vector<int32_t> l(static_cast<size_t>(n));
  for (auto& v : l) v = static_cast<int32_t>(below(classes));
  return l;
}

// Values from {0, 1, 2, 3}: rows with ties for the argmax (the first wins).
inline std::vector<float> quantized(int64_t n) {
  auto v = uniform(n, 0.0f, 4.0f);
  for (auto& x : v) x = std::floor(x);
  return v;
}

inline std::string shape(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// Outputs start as NaN on both sides: an element a kernel fails to write
// stays NaN and fails the comparison.
inline std::vector<float> poisoned(int64_t n) {
  return std::vector<float>(static_cast<size_t>(n), std::numeric_limits<float>::quiet_NaN());
}

// "" when max |got - want| / max(1, |want|) <= tol (the GPU check's measure,
// ResultComparison.h; NaN only against NaN), else the first offender.
template <typename A, typename B>
std::string close(const A& got, const B& want, double tol, const std::string& what) {
  if (got.size() != want.size()) return what + ": size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    const bool same_nan = std::isnan(g) && std::isnan(w);
    if (!same_nan && !(std::fabs(g - w) / std::max(1.0, std::fabs(w)) <= tol)) {
      std::ostringstream s;
      s.precision(9);
      s << what << ": element " << i << " is " << g << " on the emulated GPU, " << w << " on the CPU (error "
        << std::fabs(g - w) / std::max(1.0, std::fabs(w)) << ", tolerance " << tol << ")";
      return s.str();
    }
  }
  return {};
}

// Element-wise equality of a predicate of both sides (relu masks).
template <typename A, typename B, typename P>
std::string same_mask(const A& got, const B& want, P pred, const std::string& what) {
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    if (pred(got[i]) != pred(want[i])) {
      std::ostringstream s;
      s.precision(9);
      s << what << ": mask differs at element " << i << " (emulated GPU " << got[i] << ", CPU " << want[i] << ")";
      return s.str();
    }
  return {};
}

// Every violation of CUDA's rules the scheduler saw, joined ("" if none).
inline std::string violations() {
  std::string all;
  for (const auto& v : emu::take_violations()) all += (all.empty() ? "" : "; ") + v;
  return all;
}

}  // namespace emutest

// Fails with the message unless it is empty; `what` names the case. A
// broken rule of CUDA since the last check fails first: it is the likelier
// cause of a wrong value.
#define EMU_EXPECT(expr, what)                                          \
  do {                                                                  \
    std::string emu_msg_ = emutest::violations();                       \
    if (emu_msg_.empty()) emu_msg_ = (expr);                            \
    if (!emu_msg_.empty()) {                                            \
      const std::string emu_all_ = std::string(what) + ": " + emu_msg_; \
      QFAIL(emu_all_.c_str());                                          \
    }                                                                   \
  } while (0)

// After each case: no rule of CUDA broken on the way.
#define EMU_EXPECT_CLEAN(what) EMU_EXPECT(std::string(), what)
