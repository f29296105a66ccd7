#pragma once
// Small helpers shared by the engine tests: seeded random inputs (fresh per
// run, reproducible with STRATA_TEST_SEED) and element-wise comparisons that
// name the first offending index.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/Error.h"

namespace testutil {

// One seed per test process: fresh random inputs on each run, printed so a
// failure can be replayed with STRATA_TEST_SEED=<seed>.
inline uint64_t process_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("STRATA_TEST_SEED"); env && *env) return static_cast<uint64_t>(std::strtoull(env, nullptr, 10));
    return static_cast<uint64_t>((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}());
  }();
  return seed;
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 gen(process_seed());
  return gen;
}

inline std::vector<float> random_vector(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng());
  return v;
}

inline std::vector<float> nan_vector(size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

// "" when |got - want| <= atol + rtol * |want| everywhere, else a description
// of the first mismatch.
template <typename A, typename B>
std::string compare(const A& got, const B& want, double atol, double rtol, const std::string& what = {}) {
  if (got.size() != want.size())
    return what + ": size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      std::ostringstream s;
      s.precision(9);
      s << what << ": element " << i << " is " << g << ", expected " << w << " (atol " << atol << ", rtol " << rtol << ")";
      return s.str();
    }
  }
  return {};
}

// Bit-for-bit equality, NaN included.
template <typename A, typename B>
std::string identical(const A& got, const B& want, const std::string& what = {}) {
  if (got.size() != want.size()) return what + ": size differs";
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(got[i])) != 0) {
      std::ostringstream s;
      s.precision(9);
      s << what << ": element " << i << " is " << got[i] << ", expected bit-identical " << want[i];
      return s.str();
    }
  return {};
}

// An IDX file's bytes (big-endian dimensions after the magic number, then
// the data): images of unsigned bytes by default; `type` and `magic0` make
// damaged or other-typed ones.
inline std::vector<uint8_t> idx_bytes(std::vector<uint32_t> dims, const std::vector<uint8_t>& data, uint8_t type = 0x08,
                                      uint8_t magic0 = 0) {
  std::vector<uint8_t> b{magic0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<uint8_t>(d >> shift));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace testutil

// Fails with the comparison's message unless it is empty.
#define STRATA_COMPARE_OK(expr)                        \
  do {                                                 \
    const std::string strata_msg_ = (expr);            \
    QVERIFY2(strata_msg_.empty(), strata_msg_.c_str()); \
  } while (0)

// Runs `stmt`, which must throw strata::Error of `kind_`; the message is
// checked to contain every string in the initializer list.
#define STRATA_EXPECT_ERROR(stmt, kind_, ...)                                                                     \
  do {                                                                                                            \
    bool strata_thrown_ = false;                                                                                  \
    try {                                                                                                         \
      stmt;                                                                                                       \
    } catch (const strata::Error& strata_e_) {                                                                    \
      strata_thrown_ = true;                                                                                      \
      const std::string strata_what_ = strata_e_.what();                                                          \
      QVERIFY2(strata_e_.kind() == (kind_), qPrintable(QString("wrong error kind for: ") + strata_what_.c_str())); \
      for (const std::string& strata_needle_ : std::vector<std::string>{__VA_ARGS__})                             \
        QVERIFY2(strata_what_.find(strata_needle_) != std::string::npos,                                          \
                 qPrintable(QString("message '%1' lacks '%2'")                                                    \
                                .arg(QString::fromStdString(strata_what_), QString::fromStdString(strata_needle_)))); \
    } catch (const std::exception& strata_other_) {                                                               \
      QFAIL(qPrintable(QString("expected strata::Error, got std::exception: ") + strata_other_.what()));         \
    }                                                                                                             \
    QVERIFY2(strata_thrown_, "expected a strata::Error, nothing was thrown: " #stmt);                             \
  } while (0)
