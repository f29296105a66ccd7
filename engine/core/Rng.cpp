#include "core/Rng.h"

#include <atomic>
#include <cmath>

namespace strata {

float Rng::normal() {
  // Box-Muller; one of the pair is discarded for simplicity.
  float u1 = uniform();
  float u2 = uniform();
  if (u1 < 1e-7f) u1 = 1e-7f;
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.28318530718f * u2);
}

namespace {
std::atomic<uint64_t> g_seed{0x5eed};
std::atomic<uint64_t> g_counter{0};
}  // namespace

void set_global_seed(uint64_t seed) {
  g_seed = seed;
  g_counter = 0;
}

uint64_t next_op_seed() { return hash_combine(g_seed.load(), g_counter.fetch_add(1)); }

}  // namespace strata
