#pragma once
#include <cstdint>

// The counter-based functions are compiled for the GPU too (CUDA kernels
// include this header), so dropout draws the same bits on every device.
#if defined(__CUDACC__)
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif

namespace strata {

// Counter-based generator: a value depends only on (key, counter), never on
// call order, so dropout masks and initial weights are reproducible for a
// seed whatever the thread count, and a GPU kernel can compute the same bits.
STRATA_HOST_DEVICE inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

STRATA_HOST_DEVICE inline uint64_t hash_combine(uint64_t key, uint64_t counter) { return splitmix64(key ^ splitmix64(counter)); }

// Uniform float in [0, 1) from 24 random bits.
STRATA_HOST_DEVICE inline float uniform01(uint64_t key, uint64_t counter) {
  return static_cast<float>(hash_combine(key, counter) >> 40) * (1.0f / 16777216.0f);
}

// Small sequential generator for shuffles and synthetic data.
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmix64(state_++); }
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
  float normal();
  uint64_t state() const { return state_; }

private:
  uint64_t state_;
};

// Seeds for variable initialisers are drawn in construction order from one
// process-wide sequence, so a model built twice with the same global seed gets
// the same weights (as Keras' global + op seed).
void set_global_seed(uint64_t seed);
uint64_t next_op_seed();

}  // namespace strata
