// The evidence behind DnnlConvolution's forward_as_transposed: oneDNN's two
// ways to compute a stride-1 convolution's forward pass on NHWC images, timed
// side by side on one thread, for the convolutions of the example models.
//
//   direct      convolution_forward of x with k
//   transposed  convolution_backward_data of the transposed convolution (y's
//               shape to x's, channels swapped, window flipped, padding
//               K - 1 - p), fed x as its output gradient
//
// Prints one JSON line per shape: the best and median milliseconds of each
// way over interleaved repetitions, GFLOP/s, oneDNN's implementation names,
// the effective ISA, and direct / transposed (above 1: transposed is faster).
//
//   bench_dnnl_forward_ways [--reps N] [--batch N]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "BenchUtil.h"

namespace {
using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void fill(const memory& m) {
  auto* p = static_cast<float*>(m.get_data_handle());
  const size_t n = m.get_desc().get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
}

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

struct Conv {
  const char* model;
  int64_t channels, size, filters, kernel;
};
// The example models' stride-1 "same" convolutions (28x28 Fashion-MNIST),
// then first layers of few input channels (an RGB image's 3; 4, 8 and 16)
// that locate where the ways cross on an ISA.
const Conv kConvs[] = {{"cnn-bn", 1, 28, 32, 3},  {"cnn-bn", 32, 28, 32, 3}, {"cnn-bn", 32, 14, 64, 3},
                       {"cnn-bn", 64, 14, 64, 3}, {"tf-cnn", 1, 28, 32, 5},  {"tf-cnn", 32, 14, 64, 5},
                       {"rgb", 3, 32, 32, 3},     {"probe", 4, 28, 32, 3},   {"probe", 8, 28, 32, 3},
                       {"probe", 16, 28, 32, 3}};
}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  int64_t batch = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--batch")) batch = std::max(1, std::atoi(argv[i + 1]));
  }
  omp_set_num_threads(1);  // as DnnlConvolution runs each slice
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  for (const Conv& c : kConvs) {
    const int64_t k = c.kernel, p = k / 2;
    const memory::desc x_desc({batch, c.channels, c.size, c.size}, f32, Tag::nhwc);
    const memory::desc y_desc({batch, c.filters, c.size, c.size}, f32, Tag::nhwc);
    const memory::dims one{1, 1}, pad{p, p}, tpad{k - 1 - p, k - 1 - p};
    const auto algo = dnnl::algorithm::convolution_direct;
    const memory::desc w_any({c.filters, c.channels, k, k}, f32, Tag::any);
    const memory::desc t_any({c.channels, c.filters, k, k}, f32, Tag::any);
    dnnl::convolution_forward::primitive_desc direct_pd(
        {dnnl::prop_kind::forward_training, algo, x_desc, w_any, y_desc, one, pad, pad}, engine);
    dnnl::convolution_forward::primitive_desc t_fwd_pd(
        {dnnl::prop_kind::forward_training, algo, y_desc, t_any, x_desc, one, tpad, tpad}, engine);
    dnnl::convolution_backward_data::primitive_desc transposed_pd({algo, y_desc, t_any, x_desc, one, tpad, tpad}, engine,
                                                                  t_fwd_pd);
    memory x(x_desc, engine), y(y_desc, engine), w(direct_pd.weights_desc(), engine), t(transposed_pd.weights_desc(), engine);
    for (const memory* m : {&x, &w, &t}) fill(*m);
    dnnl::convolution_forward direct(direct_pd);
    dnnl::convolution_backward_data transposed(transposed_pd);
    std::vector<double> d_ms, t_ms;
    for (int r = 0; r < reps + 1; ++r) {  // the first of each is a warm-up
      double t0 = now_ms();
      direct.execute(stream, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
      stream.wait();
      if (r) d_ms.push_back(now_ms() - t0);
      t0 = now_ms();
      transposed.execute(stream, {{DNNL_ARG_DIFF_DST, x}, {DNNL_ARG_WEIGHTS, t}, {DNNL_ARG_DIFF_SRC, y}});
      stream.wait();
      if (r) t_ms.push_back(now_ms() - t0);
    }
    const double gflop = 2.0 * static_cast<double>(batch * c.size * c.size * c.channels * c.filters * k * k) * 1e-9;
    const double d_best = *std::min_element(d_ms.begin(), d_ms.end());
    const double t_best = *std::min_element(t_ms.begin(), t_ms.end());
    nlohmann::json j = {{"bench", "dnnl_forward_ways"},
                        {"model", c.model},
                        {"shape", std::to_string(c.channels) + "->" + std::to_string(c.filters) + " " +
                                      std::to_string(c.size) + "x" + std::to_string(c.size) + " k" + std::to_string(k)},
                        {"batch", batch},
                        {"isa", isa_name(dnnl::get_effective_cpu_isa())},
                        {"direct_impl", direct_pd.impl_info_str()},
                        {"transposed_impl", transposed_pd.impl_info_str()},
                        {"direct_best_ms", d_best},
                        {"direct_median_ms", strata::bench::median(d_ms)},
                        {"transposed_best_ms", t_best},
                        {"transposed_median_ms", strata::bench::median(t_ms)},
                        {"direct_gflops", gflop / (d_best * 1e-3)},
                        {"transposed_gflops", gflop / (t_best * 1e-3)},
                        {"direct_over_transposed", d_best / t_best}};
    std::cout << j.dump() << std::endl;
  }
  return 0;
}
