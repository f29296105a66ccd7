#pragma once
// The narrow compute interface. Every kernel the layers need is here, in terms
// of raw pointers into a device's memory, so a CUDA implementation plugs in
// beside the CPU one and nn/ never changes. Matrices are row-major.
//
// On a device with a stream (sim, CUDA) every call is queued and returns at
// once: nothing here returns a value computed on the device. Results the host
// needs (the loss, metrics, the error flag) are written to device memory and
// read once per step after synchronize(). Per-step scalars (learning rate,
// Adam's step, 1/global batch, batch-norm counts) are read from device memory
// too, so a captured step replays unchanged.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/WeightStores.h"
#include "core/Device.h"
#include "core/DeviceMemory.h"
#include "core/Tensor.h"

namespace strata {

enum class Activation { None, Relu, Tanh, Sigmoid, Softmax };

// A 2-D window over NHWC images: convolution patches and pooling windows.
// Padding is given explicitly (TF "same" puts the odd pixel after).
struct Window2D {
  int64_t batch, height, width, channels;  // input
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left;
  int64_t out_h, out_w;
};

// Throws unless act is one max_pool takes (None, Relu).
void require_pool_activation(Activation act);

// A way a backend chose to convolve one shape in one direction, and what
// each way it timed took (its best run, milliseconds; infinity: refused or
// out of memory); none timed when the choice was made untimed (inside a
// capture, autotuning off, one way offered).
struct ConvolutionChoice {
  Window2D window;
  int64_t filters = 0;
  std::string direction;  // "forward", "gradient of the input", "gradient of the kernel"
  std::string way;
  std::vector<std::pair<std::string, double>> timed_ms;
};

// Adam's constants; the learning rate and step come from device memory.
struct AdamParams {
  float beta1, beta2, epsilon;
};
// One tensor of a multi-tensor Adam update: n weights, their gradient and state.
struct AdamTensor {
  int64_t n;
  float* w;
  const float* g;
  float* m;
  float* v;
};

class Backend : public DeviceMemory {
public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual int threads() const = 0;

  // C[m,n] = alpha * op(A) * op(B) + beta * C, op = transpose when the flag is set.
  virtual void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                    const float* b, float beta, float* c) = 0;
  // C[m,n] = op(A) * op(B) + bias on every row (no bias when null): a dense
  // layer's forward product. The default is gemm then add_bias_rows; a GPU
  // adds the bias in the product's epilogue, saving a pass over C.
  virtual void gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                         const float* bias, float* c);
  // y[r, :] += bias for every row.
  virtual void add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) = 0;
  // out[c] = (accumulate ? out[c] : 0) + sum_r x[r, c].
  virtual void sum_rows(const float* x, int64_t rows, int64_t cols, float* out, bool accumulate) = 0;

  // Element-wise activation, y may alias x. Softmax is per row of `cols`.
  virtual void activation_forward(Activation act, const float* x, float* y, int64_t rows, int64_t cols) = 0;
  // y = act(y + bias) in place, bias (cols) optional: add_bias_rows and
  // activation_forward, in one pass over y where a backend fuses them.
  virtual void bias_activation(Activation act, float* y, const float* bias, int64_t rows, int64_t cols) {
    if (bias) add_bias_rows(y, bias, rows, cols);
    if (act != Activation::None) activation_forward(act, y, y, rows, cols);
  }
  // dx = dy * act'(.) given the activation's output y (all four derive from y).
  virtual void activation_backward(Activation act, const float* y, const float* dy, float* dx, int64_t rows,
                                   int64_t cols) = 0;

  // dx = activation_backward(act, y, dy) and dbias[c] = sum_r dx[r, c]
  // (overwritten): a layer's gradient through its activation and bias. The
  // default makes the two calls; a GPU sums dx in the pass that writes it
  // (one kernel for two or three: at small batches a step takes about as
  // long as its number of kernels).
  virtual void bias_activation_backward(Activation act, const float* y, const float* dy, float* dx, float* dbias,
                                        int64_t rows, int64_t cols);

  // Per-example loss for integer labels; dlogits (optional) = d loss_i / d logits_i.
  // A label outside [0, cols) gives loss 0 and no gradient (check_labels reports it).
  virtual void sparse_softmax_xent(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                   float* loss, float* dlogits) = 0;
  // A replica's share of the mean loss and its gradient, for integer labels:
  // check_labels (into error, when given), sparse_softmax_xent, total[0] =
  // scaled_sum of the losses, and dlogits (required) times scale[0], so it
  // is d total / d logits. The default makes those four calls; a GPU makes
  // one kernel of them at small batches.
  virtual void sparse_softmax_xent_average(const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                           const float* scale, float* error, float* loss, float* dlogits, float* total);
  // Same for dense probability targets.
  virtual void softmax_xent(const float* logits, const float* targets, int64_t rows, int64_t cols, float* loss,
                            float* dlogits) = 0;

  // y = alpha * x + beta * y (beta = 0 means y is not read).
  virtual void axpby(int64_t n, float alpha, const float* x, float beta, float* y) = 0;
  // y = x * mask_scale where a counter-based uniform draw keeps the element.
  // The draw's key is hash_combine(seed, (call[0] << 16) ^ stream), with the
  // call number (read as unsigned) from device memory, so a captured step
  // draws a new mask each replay; element i uses counter + i.
  virtual void dropout(int64_t n, float rate, uint64_t seed, uint64_t stream, const int32_t* call, uint64_t counter,
                       const float* x, float* y, float* mask) = 0;
  virtual void mul(int64_t n, const float* a, const float* b, float* y) = 0;
  // y[r, c] = scale[r] * x[r, c] (per-example loss gradients).
  virtual void scale_rows(const float* x, const float* scale, int64_t rows, int64_t cols, float* y) = 0;
  // y = log(clamp(x, eps, 1 - eps)); backward: dx = dy / x inside the clamp, 0 outside.
  virtual void log_clamp(int64_t n, const float* x, float eps, float* y) = 0;
  virtual void log_clamp_backward(int64_t n, const float* x, float eps, const float* dy, float* dx) = 0;

  // Input pixels to model features: out[r, k] = in[r, k] * scale, then, when
  // mean is given, (out - mean[k]) * inv_std[k] (the dataset's normalisation).
  virtual void pixels_to_float(int64_t rows, int64_t features, const uint8_t* in, float scale, const float* mean,
                               const float* inv_std, float* out) = 0;
  // out's row i = table's row rows[i], rows of row_bytes bytes (an image's
  // uint8 pixels, an int32 label): a batch gathered on the device that keeps
  // the training set, so only the batch's row numbers cross to it.
  virtual void gather_rows(const uint8_t* table, int64_t row_bytes, const int32_t* rows, int64_t n, uint8_t* out) = 0;
  // A training batch from the set kept on the device, in one pass: for each
  // i < n, features' row i = pixels_to_float of the pixel table's row
  // rows[i] (row_bytes values) and labels_out[i] = labels[rows[i]]. The
  // default gathers the pixels, converts them and gathers the labels (three
  // calls and a uint8 batch between); CUDA does it in one kernel.
  virtual void gather_examples(const uint8_t* pixels, int64_t row_bytes, const int32_t* labels, const int32_t* rows,
                               int64_t n, float scale, const float* mean, const float* inv_std, float* features,
                               int32_t* labels_out);

  // ---- scalars kept on the device -------------------------------------------
  // out[0] = scale[0] * sum(x) (accumulated in double on the CPU).
  virtual void scaled_sum(int64_t n, const float* x, const float* scale, float* out) = 0;
  // y[i] = g[0] * scale[0]: the gradient of scaled_sum.
  virtual void broadcast_scaled(int64_t n, const float* g, const float* scale, float* y) = 0;
  // x[i] += value (step counters).
  virtual void add_scalar(int64_t n, float value, float* x) = 0;
  // x[i] += 1 as unsigned, wrapping at 2^32: counters that must stay exact
  // (dropout's call number; a float stops counting at 2^24).
  virtual void increment(int64_t n, int32_t* x) = 0;
  // out[r] = the first column holding row r's largest value.
  virtual void argmax_rows(const float* x, int64_t rows, int64_t cols, int32_t* out) = 0;
  // count[0] += rows whose argmax equals their label.
  virtual void count_correct(const float* predictions, const int32_t* labels, int64_t rows, int64_t cols,
                             float* count) = 0;
  // A step's figures for one read-back: stats = [loss[0], the rows of
  // logits whose argmax is their label (none counted without labels),
  // error[0], error[1]], then error = {0, 0} (no error flag: 0, 0). The
  // default makes five calls of this interface; a GPU makes one kernel of
  // them, as small steps are as long as the number of their kernels.
  virtual void gather_step_stats(const float* loss, const float* logits, const int32_t* labels, int64_t rows, int64_t cols,
                                 float* error, float* stats);
  // The device error flag for labels outside [0, classes): error[0] counts
  // them, error[1] keeps the first such label seen. A kernel cannot throw, so
  // the caller reads the flag at its sync point.
  virtual void check_labels(const int32_t* labels, int64_t n, int64_t classes, float* error) = 0;

  // ---- images (NHWC) --------------------------------------------------------
  // col[(n, oy, ox), (ky, kx, c)] = x[n, oy*s - pad + ky, ox*s - pad + kx, c] (0 outside).
  virtual void im2col(const Window2D& w, const float* x, float* col) = 0;
  // dx = 0, then the adjoint of im2col: every patch element adds into its pixel.
  virtual void col2im(const Window2D& w, const float* col, float* dx) = 0;
  // y = act(max over each window of x + bias[c]) per channel, bias optional;
  // argmax holds the flat input index of the maximum (for backward). act is
  // None or Relu: Relu is monotonic, so act(max(x + b)) = max(act(x + b)),
  // and the gradient reaches the same pixel wherever it is not zero: a
  // convolution's bias and relu can follow its pooling, on a quarter of the
  // elements (nn::max_pool_op).
  virtual void max_pool(const Window2D& w, const float* x, const float* bias, Activation act, float* y, int32_t* argmax) = 0;
  virtual void max_pool_backward(const Window2D& w, const float* dy, const int32_t* argmax, float* dx) = 0;
  // Mean over the window's pixels that lie inside the image (TF's "same" averaging).
  virtual void avg_pool(const Window2D& w, const float* x, float* y) = 0;
  virtual void avg_pool_backward(const Window2D& w, const float* dy, float* dx) = 0;

  // ---- convolution as one operation, where a library does it (cuDNN) -------
  // y[(n, oy, ox), f] = sum over the window of x * kernel, the kernel a
  // (kh * kw * channels, filters) matrix (HWIO), no bias. Backends without a
  // library for it say no, and layers use im2col + gemm themselves (keeping
  // the patch matrix for the backward pass instead of recomputing it).
  virtual bool has_conv2d(const Window2D& /*w*/, int64_t /*filters*/) { return false; }
  // These defaults compute through im2col, gemm and col2im on this backend.
  virtual void conv2d(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y);
  // conv2d, and where the way it took made the whole batch's patch matrix
  // (im2col: (rows, kh * kw * channels)), that matrix, handed over: the
  // kernel gradient is then one product with it (dkernel = patches^T dy,
  // what conv2d_backward_filter's im2col way computes, to the bit) instead
  // of making it again. An empty tensor otherwise, as by default, and for
  // a matrix over kKeptPatchesBytes (kept from the forward pass to the
  // backward, it adds to the activations' memory).
  virtual Tensor conv2d_keeping_patches(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y);
  static constexpr int64_t kKeptPatchesBytes = int64_t{512} << 20;
  // dx = the adjoint of conv2d for dy (rows, filters).
  virtual void conv2d_backward_data(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx);
  // dkernel = d(sum dy * y) / d kernel, overwritten.
  virtual void conv2d_backward_filter(const Window2D& w, int64_t filters, const float* x, const float* dy,
                                      float* dkernel);
  // Backends with their own ways of convolving: the ways a shape's direction
  // can take (the last one, im2col over the whole batch, takes every shape)
  // and one forced for every shape ("": each shape's fastest), for checking
  // each way.
  enum class ConvolutionDirection : uint8_t { Forward, BackwardData, BackwardFilter };
  virtual std::vector<std::string> convolution_ways(const Window2D& /*w*/, int64_t /*filters*/, ConvolutionDirection /*d*/) {
    return {"im2col"};
  }
  virtual void force_convolution_way(const std::string& /*way*/) {}
  // Calls so far whose forced way was not offered or refused, so that the
  // last way ran instead (a check forcing a way learns it did not check it).
  virtual int64_t forced_convolution_refusals() const { return 0; }
  // The choices made so far in this process, in the order made.
  virtual std::vector<ConvolutionChoice> convolution_choices() const { return {}; }

  // ---- batch normalisation over rows of a (rows, channels) view -------------
  // sum[c] = sum_r x[r,c], sumsq[c] = sum_r x[r,c]^2 (accumulated in double).
  virtual void channel_sums(const float* x, int64_t rows, int64_t channels, float* sum, float* sumsq) = 0;
  // From sums = [sum(C), sumsq(C), count]: mean and 1 / sqrt(var + epsilon).
  virtual void batch_norm_stats(const float* sums, int64_t channels, float epsilon, float* mean, float* inv_std) = 0;
  // Inference: mean = moving_mean, inv_std = 1 / sqrt(moving_var + epsilon).
  virtual void batch_norm_inference_stats(const float* moving_mean, const float* moving_var, int64_t channels,
                                          float epsilon, float* mean, float* inv_std) = 0;
  // moving = moving * momentum + batch * (1 - momentum), skipped when count[0] is 0.
  virtual void batch_norm_moving_update(const float* mean, const float* inv_std, const float* count, int64_t channels,
                                        float epsilon, float momentum, float* moving_mean, float* moving_var) = 0;
  // y = (x - mean) * inv_std * gamma + beta.
  virtual void batch_norm_apply(const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                                const float* gamma, const float* beta, float* y) = 0;
  // batch_norm_apply, then relu in place: a batch norm followed by a relu
  // layer, in one pass where a backend fuses them (the default makes the
  // two calls).
  virtual void batch_norm_apply_relu(const float* x, int64_t rows, int64_t channels, const float* mean, const float* inv_std,
                                     const float* gamma, const float* beta, float* y);
  // sum_dy[c] = sum_r dy, sum_dy_xhat[c] = sum_r dy * (x - mean) * inv_std.
  virtual void batch_norm_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels,
                                          const float* mean, const float* inv_std, float* sum_dy,
                                          float* sum_dy_xhat) = 0;
  // Through the relu after a batch norm (batch_norm_apply_relu's y =
  // relu(v), v = x * scale + shift, scale = gamma * inv_std, shift = beta -
  // mean * scale) and into its backward sums: batch_norm_backward_reduce of
  // dz = v > 0 ? dy : 0, the relu's gradient, with v computed again from x
  // exactly as batch_norm_apply_relu computes it (the same bits: v > 0 where
  // y > 0). dz is never stored: the pass reads dy and x only, and the apply
  // below takes dz the same way (a third of the memory traffic of reading y
  // and writing dz, on passes that are bound by it).
  virtual void batch_norm_relu_backward_reduce(const float* dy, const float* x, int64_t rows, int64_t channels,
                                               const float* mean, const float* inv_std, const float* gamma, const float* beta,
                                               float* sum_dz, float* sum_dz_xhat) = 0;
  // dx = gamma * inv_std / count * (count * dy - sum_dy - xhat * sum_dy_xhat), with
  // count[0] the number of rows over all replicas (synchronised statistics).
  virtual void batch_norm_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels,
                                         const float* mean, const float* inv_std, const float* gamma,
                                         const float* sum_dy, const float* sum_dy_xhat, const float* count,
                                         float* dx) = 0;
  // batch_norm_backward_apply of batch_norm_relu_backward_reduce's dz.
  virtual void batch_norm_relu_backward_apply(const float* dy, const float* x, int64_t rows, int64_t channels,
                                              const float* mean, const float* inv_std, const float* gamma, const float* beta,
                                              const float* sum_dz, const float* sum_dz_xhat, const float* count,
                                              float* dx) = 0;

  // Fused optimizer updates, one pass over the parameter. lr[0] is the
  // learning rate; Adam reads lr_step = [learning rate, 1-based step].
  virtual void sgd_update(int64_t n, float* w, const float* g, float* velocity, const float* lr, float momentum,
                          bool nesterov, WeightStores stores) = 0;
  virtual void adam_update(int64_t n, float* w, const float* g, float* m, float* v, const AdamParams& p, const float* lr_step,
                           WeightStores stores) = 0;
  // adam_update of several tensors with the same step, in one launch where a
  // backend can (on a GPU a model's many small tensors, biases above all,
  // each cost a launch's fixed time otherwise). The same arithmetic per
  // element. The default updates them one by one.
  virtual void adam_update_many(std::span<const AdamTensor> tensors, const AdamParams& p, const float* lr_step,
                                WeightStores stores) {
    for (const AdamTensor& t : tensors) adam_update(t.n, t.w, t.g, t.m, t.v, p, lr_step, stores);
  }

  // This device's label error flag (two floats in its memory, zero until
  // check_labels finds a bad label).
  virtual float* label_error_flag() = 0;

  // ---- a side branch of the calling thread's work (CUDA: a second stream) ---
  // The calls this thread makes between begin_branch() and end_branch() may
  // run beside the calls it makes after end_branch(); join_branch() orders
  // every later call after both. The backward pass computes a layer's
  // weight gradients on the branch beside its input gradient: at small
  // batches each kernel fills a fraction of a GPU, one after the other.
  // Memory the branch uses must outlive the join, and the branch must not
  // use the device's convolution library (its handle is the main stream's).
  // Only while allow_branches(true) has been said more often than
  // allow_branches(false) (the Trainer says it for a device one replica
  // uses, and takes it back when done); elsewhere, and on devices that run
  // calls in order, no-ops. A device has one branch: begun by one thread, it
  // keeps other threads' work on the main stream until that thread joins it.
  virtual void allow_branches(bool /*allowed*/) {}
  virtual void begin_branch() {}
  virtual void end_branch() noexcept {}
  virtual void join_branch() noexcept {}

protected:
  // The default convolutions over slices of `images` images at a time (the
  // whole batch when images >= w.batch): the patch matrix holds one slice,
  // which a device can keep in its cache between im2col and the product.
  void conv2d_im2col(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y, int64_t images);
  // The same over the whole batch, its patch matrix handed back (empty, and
  // conv2d_im2col over the whole batch, where over kKeptPatchesBytes).
  Tensor conv2d_im2col_kept(const Window2D& w, int64_t filters, const float* x, const float* kernel, float* y);
  void conv2d_backward_data_im2col(const Window2D& w, int64_t filters, const float* dy, const float* kernel, float* dx,
                                   int64_t images);
  void conv2d_backward_filter_im2col(const Window2D& w, int64_t filters, const float* x, const float* dy, float* dkernel,
                                     int64_t images);
};

// A side branch (Backend::begin_branch) for one scope: begun when made,
// end() ends it, and it is ended and joined when the scope is left (also by
// an exception).
class SideBranch {
public:
  explicit SideBranch(Backend& b) : b_(b) { b_.begin_branch(); }
  ~SideBranch() {
    end();
    b_.join_branch();
  }
  void end() noexcept {
    if (ended_) return;
    ended_ = true;
    b_.end_branch();
  }
  SideBranch(const SideBranch&) = delete;
  SideBranch& operator=(const SideBranch&) = delete;

private:
  Backend& b_;
  bool ended_ = false;
};

// The backend that serves tensors on `device` for the calling thread. CPU
// replica threads install their own (with their share of cores); other
// threads get a process-wide one using every core. Other devices have one
// backend each, shared by every thread (its stream orders their work).
Backend& backend_for(const Device& device);
Backend& cpu_backend();
// Installs `b` as this thread's CPU backend until the guard dies.
class ScopedCpuBackend {
public:
  explicit ScopedCpuBackend(Backend* b);
  ~ScopedCpuBackend();
  ScopedCpuBackend(const ScopedCpuBackend&) = delete;
  ScopedCpuBackend& operator=(const ScopedCpuBackend&) = delete;

private:
  Backend* previous_;
};

}  // namespace strata
