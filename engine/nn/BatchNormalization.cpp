#include "nn/BatchNormalization.h"

#include <bit>
#include <cmath>
#include <nlohmann/json.hpp>

#include "backend/Backend.h"
#include "core/Error.h"
#include "nn/ActivationLayer.h"
#include "nn/GradientTape.h"
#include "nn/ReplicaSync.h"

namespace strata::nn {

BatchNormalizationLayer::BatchNormalizationLayer(float momentum, float epsilon, bool center, bool scale, bool synchronized)
    : momentum_(momentum), epsilon_(epsilon), center_(center), scale_(scale), synchronized_(synchronized) {
  if (!(momentum >= 0.0f && momentum < 1.0f)) throw bad_input("BatchNormalization: momentum must be in [0, 1)");
  if (!(epsilon > 0.0f)) throw bad_input("BatchNormalization: epsilon must be positive");
}

Json BatchNormalizationLayer::config() const {
  return Json{{"type", "batch_normalization"}, {"momentum", momentum_}, {"epsilon", epsilon_},
              {"center", center_},             {"scale", scale_},       {"synchronized", synchronized_}};
}

void BatchNormalizationLayer::create_variables(const Shape& input) {
  const int64_t c = input[input.rank() - 1];
  if (scale_) gamma_ = add_variable("gamma", Tensor::full(Shape{c}, 1.0f));
  if (center_) beta_ = add_variable("beta", Tensor::zeros(Shape{c}));
  moving_mean_ = add_variable("moving_mean", Tensor::zeros(Shape{c}), false);
  moving_variance_ = add_variable("moving_variance", Tensor::full(Shape{c}, 1.0f), false);
}

Tensor BatchNormalizationLayer::call(const Tensor& x, bool training) { return normalize(x, training, false); }

std::optional<Tensor> BatchNormalizationLayer::call_with_next(const Layer& next, const Tensor& x, bool training) {
  const auto* act = dynamic_cast<const ActivationLayer*>(&next);
  if (!training || !act || act->activation() != Activation::Relu) return std::nullopt;
  return normalize(x, true, true);
}

Tensor BatchNormalizationLayer::normalize(const Tensor& x, bool training, bool relu) {
  const int64_t channels = x.shape()[x.shape().rank() - 1];
  const int64_t rows = channels ? x.numel() / channels : 0;
  const Device dev = x.device();
  Backend& be = backend_for(dev);
  Tensor gamma = scale_ ? gamma_->value() : Tensor();
  Tensor beta = center_ ? beta_->value() : Tensor();
  Tensor mean = Tensor::empty(Shape{channels}, dev);
  Tensor inv_std = Tensor::empty(Shape{channels}, dev);
  Tensor y = Tensor::empty(x.shape(), dev);
  const float* g = scale_ ? gamma.ptr() : nullptr;
  const float* b = center_ ? beta.ptr() : nullptr;
  std::vector<Tensor> inputs{x};
  if (scale_) inputs.push_back(gamma);
  if (center_) inputs.push_back(beta);
  const bool has_scale = scale_, has_center = center_;

  if (!training) {
    be.batch_norm_inference_stats(moving_mean_->value().ptr(), moving_variance_->value().ptr(), channels, epsilon_,
                                  mean.ptr(), inv_std.ptr());
    be.batch_norm_apply(x.ptr(), rows, channels, mean.ptr(), inv_std.ptr(), g, b, y.ptr());
    // At inference the statistics are constants: the op is affine in x.
    record_op(std::move(inputs), y, [=](const Tensor& dy, const std::vector<bool>& need) {
      Backend& bk = backend_for(dy.device());
      std::vector<Tensor> grads(1 + has_scale + has_center);
      Tensor zero = Tensor::zeros(Shape{channels}, dy.device());
      if (need[0]) {
        grads[0] = Tensor::empty(x.shape(), dy.device());
        bk.batch_norm_apply(dy.ptr(), rows, channels, zero.ptr(), inv_std.ptr(), has_scale ? gamma.ptr() : nullptr,
                            nullptr, grads[0].ptr());
      }
      Tensor sdy = Tensor::empty(Shape{channels}, dy.device()), sdxh = Tensor::empty(Shape{channels}, dy.device());
      bk.batch_norm_backward_reduce(dy.ptr(), x.ptr(), rows, channels, mean.ptr(), inv_std.ptr(), sdy.ptr(), sdxh.ptr());
      size_t k = 1;
      if (has_scale) grads[k++] = sdxh;
      if (has_center) grads[k++] = sdy;
      return grads;
    });
    return y;
  }

  // Batch statistics: local, or summed over all replicas when synchronised.
  // The count travels with the sums (its last element), so it is a device
  // scalar like they are: nothing is read back to the host.
  ReplicaSync* sync = synchronized_ ? ReplicaSync::current() : nullptr;
  if (sync && sync->num_replicas_in_sync() == 1) sync = nullptr;
  Tensor sums = Tensor::empty(Shape{2 * channels + 1}, dev);
  be.channel_sums(x.ptr(), rows, channels, sums.ptr(), sums.ptr() + channels);
  be.fill32(sums.ptr() + 2 * channels, 1, std::bit_cast<uint32_t>(static_cast<float>(rows)));
  if (sync) {
    std::vector<Tensor> t{sums};
    sync->all_reduce_sum(t);
  }
  const float* count = sums.ptr() + 2 * channels;
  be.batch_norm_stats(sums.ptr(), channels, epsilon_, mean.ptr(), inv_std.ptr());
  if (relu) be.batch_norm_apply_relu(x.ptr(), rows, channels, mean.ptr(), inv_std.ptr(), g, b, y.ptr());
  else be.batch_norm_apply(x.ptr(), rows, channels, mean.ptr(), inv_std.ptr(), g, b, y.ptr());

  // Moving statistics. With one copy shared by this process's replicas
  // (CentralStorage; host replicas under the sharded update) only its
  // replica 0 writes it, so replicas never race on the same memory.
  const bool writer = moving_mean_->num_components() > 1 || current_replica() == 0;
  if (writer)
    be.batch_norm_moving_update(mean.ptr(), inv_std.ptr(), count, channels, epsilon_, momentum_,
                                moving_mean_->value().ptr(), moving_variance_->value().ptr());

  const bool synced = sync != nullptr;
  record_op(std::move(inputs), y, [=](const Tensor& dy, const std::vector<bool>& need) {
    Backend& bk = backend_for(dy.device());
    // Local sums give d gamma and d beta (the optimizer all-reduces those);
    // d x needs the sums over every example that shared the statistics.
    Tensor local = Tensor::empty(Shape{2 * channels}, dy.device());
    // With the relu after: the sums of dz, the gradient at the normalised
    // values, which the backend takes again from x, gamma and beta (as they
    // were in the forward pass: a step updates them after its backward pass;
    // read through the captured tensors, which keep their memory alive).
    const float* gamma_at = has_scale ? gamma.ptr() : nullptr;
    const float* beta_at = has_center ? beta.ptr() : nullptr;
    if (relu)
      bk.batch_norm_relu_backward_reduce(dy.ptr(), x.ptr(), rows, channels, mean.ptr(), inv_std.ptr(), gamma_at, beta_at,
                                         local.ptr(), local.ptr() + channels);
    else
      bk.batch_norm_backward_reduce(dy.ptr(), x.ptr(), rows, channels, mean.ptr(), inv_std.ptr(), local.ptr(),
                                    local.ptr() + channels);
    Tensor total = local;
    if (synced) {
      // Every replica reaches this collective: gradient() walks the same ops
      // in the same order on each, and d x is always needed below a trained layer.
      ReplicaSync* s = ReplicaSync::current();
      std::vector<Tensor> t{local.clone()};
      s->all_reduce_sum(t);
      total = t.front();
    }
    std::vector<Tensor> grads(1 + has_scale + has_center);
    if (need[0] || synced) {
      grads[0] = Tensor::empty(x.shape(), dy.device());
      const float* all_rows = sums.ptr() + 2 * channels;
      if (relu)
        bk.batch_norm_relu_backward_apply(dy.ptr(), x.ptr(), rows, channels, mean.ptr(), inv_std.ptr(), gamma_at, beta_at,
                                          total.ptr(), total.ptr() + channels, all_rows, grads[0].ptr());
      else
        bk.batch_norm_backward_apply(dy.ptr(), x.ptr(), rows, channels, mean.ptr(), inv_std.ptr(), gamma_at, total.ptr(),
                                     total.ptr() + channels, all_rows, grads[0].ptr());
    }
    size_t k = 1;
    if (has_scale) grads[k++] = local.slice_rows(channels, 2 * channels);
    if (has_center) grads[k++] = local.slice_rows(0, channels);
    return grads;
  });
  return y;
}

LayerPtr BatchNormalization(bool synchronized, float momentum, float epsilon) {
  return std::make_shared<BatchNormalizationLayer>(momentum, epsilon, true, true, synchronized);
}

}  // namespace strata::nn
