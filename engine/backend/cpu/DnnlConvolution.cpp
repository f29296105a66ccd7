#include "backend/cpu/DnnlConvolution.h"

#include <omp.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "core/Error.h"

namespace strata {

namespace {
using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

int64_t pad_bottom(const Window2D& w) { return (w.out_h - 1) * w.stride_h + w.kernel_h - w.height - w.pad_top; }
int64_t pad_right(const Window2D& w) { return (w.out_w - 1) * w.stride_w + w.kernel_w - w.width - w.pad_left; }

// The shape a primitive was made for (the batch is a slice's).
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
Key key_of(const Window2D& w, int64_t filters) {
  return {w.batch,    w.height,   w.width,   w.channels, w.kernel_h, w.kernel_w,
          w.stride_h, w.stride_w, w.pad_top, w.pad_left, filters};
}

dnnl::primitive_attr user_scratchpad() {
  // Slices run one primitive concurrently: each brings its own scratchpad.
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

// The user's HWIO kernel in the layout `want`: itself, or a reorder of it.
memory weights_as(const dnnl::engine& engine, const memory::desc& want, const memory::desc& user, const float* kernel) {
  memory mine(user, engine, const_cast<float*>(kernel));
  if (want == user) return mine;
  memory out(want, engine);
  dnnl::stream s(engine);
  dnnl::reorder(mine, out).execute(s, mine, out);
  s.wait();
  return out;
}

// The kernel in each layout the slices' primitives ask for, reordered from
// the user's HWIO once per layout per call (the slices normally agree: the
// layout follows the channels and the kernel, not the batch).
class KernelLayouts {
public:
  KernelLayouts(const dnnl::engine& engine, const float* kernel) : engine_(engine), kernel_(kernel) {}
  memory get(const memory::desc& want, const memory::desc& user) {
    std::lock_guard lock(mutex_);
    for (auto& [desc, mem] : made_)
      if (desc == want) return mem;
    return made_.emplace_back(want, weights_as(engine_, want, user, kernel_)).second;
  }

private:
  const dnnl::engine& engine_;
  const float* kernel_;
  std::mutex mutex_;
  std::vector<std::pair<memory::desc, memory>> made_;
};

// The forward pass of a stride-1 convolution is the backward-data pass of
// its transpose: y = x * k equals dx of the convolution that maps y's shape
// to x's, with k's input and output channels swapped, its window flipped and
// the padding K - 1 - p on each side. Which way is faster depends on the
// ISA's kernels (bench_dnnl_forward_ways, one thread, batch 64, oneDNN 2.6):
// - AVX2: backward-data runs 12-17% faster than forward for 32->64 and
//   64->64 channels at 14x14 (3x3), 6-10% for the first layers' 1->32, and
//   3-5% slower for 32->32 at 28x28 only (about 2 ms of the CNN with batch
//   norm's 100 ms step, net), so every stride-1 forward pass takes it.
// - AVX-512 (the avx512_core kernels, which the later ISAs run in float32):
//   the direct kernel wins from 16 input channels up (4-16% faster at 16, 32
//   and 64) and loses below (backward-data is 3-6% faster at 8 channels, 22%
//   at 4, 8-20% at 1 with 3x3, 31-43% at 1 with 5x5), so only first layers
//   of at most 8 channels take it.
// Other ISAs' kernels were not measured: direct. The bits differ between the
// two ways; a machine always takes the same one.
bool forward_as_transposed(const Window2D& w) {
  static const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  // avx2_vnni adds only integer instructions: its float32 kernels are AVX2's.
  static const bool avx2 = isa == dnnl::cpu_isa::avx2 || isa == dnnl::cpu_isa::avx2_vnni;
  static const bool avx512 = isa == dnnl::cpu_isa::avx512_core || isa == dnnl::cpu_isa::avx512_core_vnni ||
                             isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  const auto fits = [](int64_t kernel, int64_t pad) { return pad <= kernel - 1; };
  const bool stride_1 = w.stride_h == 1 && w.stride_w == 1 && fits(w.kernel_h, w.pad_top) &&
                        fits(w.kernel_h, pad_bottom(w)) && fits(w.kernel_w, w.pad_left) && fits(w.kernel_w, pad_right(w));
  return stride_1 && (avx2 || (avx512 && w.channels <= 8));
}

// The transposed convolution's window (its input is y's shape, its output x's).
Window2D transposed(const Window2D& w, int64_t filters) {
  Window2D t = w;
  t.height = w.out_h;
  t.width = w.out_w;
  t.channels = filters;
  t.pad_top = w.kernel_h - 1 - w.pad_top;
  t.pad_left = w.kernel_w - 1 - w.pad_left;
  t.out_h = w.height;
  t.out_w = w.width;
  return t;
}

// Its HWIO kernel: t[kh][kw][o][c] = k[K_h-1-kh][K_w-1-kw][c][o].
std::vector<float> transposed_kernel(const Window2D& w, int64_t filters, const float* kernel) {
  const int64_t kh = w.kernel_h, kw = w.kernel_w, c = w.channels;
  std::vector<float> t(static_cast<size_t>(kh * kw * c * filters));
  for (int64_t y = 0; y < kh; ++y)
    for (int64_t x = 0; x < kw; ++x) {
      const float* from = kernel + ((kh - 1 - y) * kw + (kw - 1 - x)) * c * filters;
      float* to = t.data() + (y * kw + x) * filters * c;
      for (int64_t i = 0; i < c; ++i)
        for (int64_t o = 0; o < filters; ++o) to[o * c + i] = from[i * filters + o];
    }
  return t;
}

}  // namespace

struct DnnlConvolution::Impl {
  // One slice shape's three primitives and the weight layouts they chose.
  struct Shape {
    memory::desc src, dst, user_weights;
    dnnl::convolution_forward::primitive_desc fwd_pd;
    dnnl::convolution_backward_data::primitive_desc bwd_data_pd;
    dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd;
    dnnl::convolution_forward fwd;
    dnnl::convolution_backward_data bwd_data;
    dnnl::convolution_backward_weights bwd_weights;
    memory::desc scratchpad;  // the largest the three need, in bytes
  };

  explicit Impl(ThreadPool& p) : pool(p), engine(dnnl::engine::kind::cpu, 0) {}

  Shape& shape(const Window2D& w, int64_t filters) {
    std::lock_guard lock(mutex);
    const Key k = key_of(w, filters);
    if (auto it = shapes.find(k); it != shapes.end()) return it->second;
    const memory::dims src_dims{w.batch, w.channels, w.height, w.width};  // logical NCHW, stored NHWC
    const memory::dims dst_dims{w.batch, filters, w.out_h, w.out_w};
    const memory::dims wei_dims{filters, w.channels, w.kernel_h, w.kernel_w};
    const memory::dims strides{w.stride_h, w.stride_w}, pad_l{w.pad_top, w.pad_left}, pad_r{pad_bottom(w), pad_right(w)};
    const memory::desc src(src_dims, f32, Tag::nhwc), dst(dst_dims, f32, Tag::nhwc);
    const memory::desc any_weights(wei_dims, f32, Tag::any);
    const auto algo = dnnl::algorithm::convolution_direct;
    const dnnl::primitive_attr attr = user_scratchpad();
    dnnl::convolution_forward::primitive_desc fwd_pd(
        {dnnl::prop_kind::forward_training, algo, src, any_weights, dst, strides, pad_l, pad_r}, attr, engine);
    dnnl::convolution_backward_data::primitive_desc bwd_data_pd({algo, src, any_weights, dst, strides, pad_l, pad_r}, attr,
                                                                engine, fwd_pd);
    dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd({algo, src, any_weights, dst, strides, pad_l, pad_r},
                                                                      attr, engine, fwd_pd);
    const size_t scratch = std::max({fwd_pd.scratchpad_desc().get_size(), bwd_data_pd.scratchpad_desc().get_size(),
                                     bwd_weights_pd.scratchpad_desc().get_size()});
    Shape s{src,
            dst,
            memory::desc(wei_dims, f32, Tag::hwio),
            fwd_pd,
            bwd_data_pd,
            bwd_weights_pd,
            dnnl::convolution_forward(fwd_pd),
            dnnl::convolution_backward_data(bwd_data_pd),
            dnnl::convolution_backward_weights(bwd_weights_pd),
            memory::desc({static_cast<memory::dim>(scratch)}, memory::data_type::u8, Tag::a)};
    return shapes.emplace(k, std::move(s)).first->second;
  }

  // Runs body(slice window, first example, stream, scratchpad) for slices of
  // the batch on the pool's threads, each with a one-thread oneDNN call.
  void for_slices(const Window2D& w, int64_t filters,
                  const std::function<void(Shape&, int64_t, dnnl::stream&, const memory&)>& body) {
    try {
      pool.parallel_for(w.batch, 1, [&](int64_t begin, int64_t end) {
        omp_set_num_threads(1);  // per calling thread
        Window2D slice = w;
        slice.batch = end - begin;
        Shape& s = shape(slice, filters);
        dnnl::stream stream(engine);
        thread_local std::vector<uint8_t> scratch;
        if (scratch.size() < s.scratchpad.get_size()) scratch.resize(s.scratchpad.get_size());
        body(s, begin, stream, memory(s.scratchpad, engine, scratch.data()));
        stream.wait();
      });
    } catch (const dnnl::error& e) {
      throw runtime_error(std::string("oneDNN convolution: ") + e.what());
    }
  }

  // Forward and backward data alike: per slice one NHWC image in (x, or
  // dy), the kernel, one image out (y, or dx).
  void image_pass(const Window2D& w, int64_t filters, const float* kernel, bool forward, const float* in, float* out) {
    KernelLayouts weights(engine, kernel);
    const int64_t image = w.height * w.width * w.channels, out_image = w.out_h * w.out_w * filters;
    const int64_t in_size = forward ? image : out_image, out_size = forward ? out_image : image;
    for_slices(w, filters, [&](Shape& s, int64_t begin, dnnl::stream& stream, const memory& scratch) {
      const memory from(forward ? s.src : s.dst, engine, const_cast<float*>(in + begin * in_size));
      const memory to(forward ? s.dst : s.src, engine, out + begin * out_size);
      const memory wei = weights.get(forward ? s.fwd_pd.weights_desc() : s.bwd_data_pd.weights_desc(), s.user_weights);
      const dnnl::primitive& p = forward ? static_cast<const dnnl::primitive&>(s.fwd) : s.bwd_data;
      p.execute(stream, {{forward ? DNNL_ARG_SRC : DNNL_ARG_DIFF_DST, from},
                         {DNNL_ARG_WEIGHTS, wei},
                         {forward ? DNNL_ARG_DST : DNNL_ARG_DIFF_SRC, to},
                         {DNNL_ARG_SCRATCHPAD, scratch}});
    });
  }

  ThreadPool& pool;
  dnnl::engine engine;
  std::mutex mutex;
  std::map<Key, Shape> shapes;
};

DnnlConvolution::DnnlConvolution(ThreadPool& pool) : impl_(std::make_unique<Impl>(pool)) {}
DnnlConvolution::~DnnlConvolution() = default;

bool DnnlConvolution::supports(const Window2D& w) { return pad_bottom(w) >= 0 && pad_right(w) >= 0; }

void DnnlConvolution::forward(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y) {
  if (forward_as_transposed(w)) {
    const std::vector<float> t = transposed_kernel(w, filters, kernel);
    impl_->image_pass(transposed(w, filters), w.channels, t.data(), false, x, y);
    return;
  }
  impl_->image_pass(w, filters, kernel, true, x, y);
}

void DnnlConvolution::backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx) {
  impl_->image_pass(w, filters, kernel, false, dy, dx);
}

void DnnlConvolution::backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel) {
  Impl& d = *impl_;
  const int64_t in = w.height * w.width * w.channels, out = w.out_h * w.out_w * filters;
  const size_t n = static_cast<size_t>(w.kernel_h * w.kernel_w * w.channels * filters);
  // Each slice's gradient in HWIO, keyed by its first example.
  std::mutex m;
  std::map<int64_t, std::vector<float>> partial;
  d.for_slices(w, filters, [&](Impl::Shape& s, int64_t begin, dnnl::stream& stream, const memory& scratch) {
    std::vector<float> mine(n);
    memory src(s.src, d.engine, const_cast<float*>(x + begin * in)),
        diff_dst(s.dst, d.engine, const_cast<float*>(dy + begin * out));
    memory user(s.user_weights, d.engine, mine.data());
    const memory::desc chosen = s.bwd_weights_pd.diff_weights_desc();
    memory diff_wei = chosen == s.user_weights ? user : memory(chosen, d.engine);
    s.bwd_weights.execute(stream, {{DNNL_ARG_SRC, src},
                                   {DNNL_ARG_DIFF_DST, diff_dst},
                                   {DNNL_ARG_DIFF_WEIGHTS, diff_wei},
                                   {DNNL_ARG_SCRATCHPAD, scratch}});
    if (chosen != s.user_weights) dnnl::reorder(diff_wei, user).execute(stream, diff_wei, user);
    stream.wait();
    std::lock_guard lock(m);
    partial.emplace(begin, std::move(mine));
  });
  // Summed in slice order: the same bits for the same thread count. (No
  // slices: an empty batch, whose gradient is zero.)
  if (partial.empty()) {
    std::fill(dkernel, dkernel + n, 0.0f);
    return;
  }
  auto it = partial.begin();
  std::copy(it->second.begin(), it->second.end(), dkernel);
  for (++it; it != partial.end(); ++it)
    for (size_t i = 0; i < n; ++i) dkernel[i] += it->second[i];
}

}  // namespace strata
