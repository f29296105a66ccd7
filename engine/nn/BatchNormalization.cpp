#include "nn/BatchNormalization.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "backend/Backend.h"
#include "core/Error.h"
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

Tensor BatchNormalizationLayer::call(const Tensor& x, bool training) {
  const int64_t channels = x.shape()[x.shape().rank() - 1];
  const int64_t rows = channels ? x.numel() / channels : 0;
  Backend& be = backend_for(x.device());
  Tensor gamma = scale_ ? gamma_->value() : Tensor();
  Tensor beta = center_ ? beta_->value() : Tensor();
  Tensor mean = Tensor::empty(Shape{channels});
  Tensor inv_std = Tensor::empty(Shape{channels});
  Tensor y = Tensor::empty(x.shape());
  const float* g = scale_ ? gamma.data() : nullptr;
  const float* b = center_ ? beta.data() : nullptr;

  if (!training) {
    const Tensor& mm = moving_mean_->value();
    const Tensor& mv = moving_variance_->value();
    for (int64_t c = 0; c < channels; ++c) {
      mean.data()[c] = mm.data()[c];
      inv_std.data()[c] = 1.0f / std::sqrt(mv.data()[c] + epsilon_);
    }
    be.batch_norm_apply(x.data(), rows, channels, mean.data(), inv_std.data(), g, b, y.data());
    // At inference the statistics are constants: the op is affine in x.
    std::vector<Tensor> inputs{x};
    if (scale_) inputs.push_back(gamma);
    if (center_) inputs.push_back(beta);
    const bool has_scale = scale_, has_center = center_;
    record_op(std::move(inputs), y, [=](const Tensor& dy, const std::vector<bool>& need) {
      Backend& bk = backend_for(dy.device());
      std::vector<Tensor> grads(1 + has_scale + has_center);
      Tensor zero = Tensor::zeros(Shape{channels});
      if (need[0]) {
        grads[0] = Tensor::empty(x.shape());
        bk.batch_norm_apply(dy.data(), rows, channels, zero.data(), inv_std.data(), has_scale ? gamma.data() : nullptr,
                            nullptr, grads[0].data());
      }
      Tensor sdy = Tensor::empty(Shape{channels}), sdxh = Tensor::empty(Shape{channels});
      bk.batch_norm_backward_reduce(dy.data(), x.data(), rows, channels, mean.data(), inv_std.data(), sdy.data(), sdxh.data());
      size_t k = 1;
      if (has_scale) grads[k++] = sdxh;
      if (has_center) grads[k++] = sdy;
      return grads;
    });
    return y;
  }

  // Batch statistics: local, or summed over all replicas when synchronised.
  ReplicaSync* sync = synchronized_ ? ReplicaSync::current() : nullptr;
  if (sync && sync->num_replicas_in_sync() == 1) sync = nullptr;
  Tensor sums = Tensor::empty(Shape{2 * channels + 1});
  be.channel_sums(x.data(), rows, channels, sums.data(), sums.data() + channels);
  sums.data()[2 * channels] = static_cast<float>(rows);
  if (sync) {
    std::vector<Tensor> t{sums};
    sync->all_reduce_sum(t);
  }
  const double count = sums.data()[2 * channels];
  for (int64_t c = 0; c < channels; ++c) {
    const double m = count > 0 ? sums.data()[c] / count : 0.0;
    const double var = count > 0 ? std::max(0.0, sums.data()[channels + c] / count - m * m) : 0.0;
    mean.data()[c] = static_cast<float>(m);
    inv_std.data()[c] = static_cast<float>(1.0 / std::sqrt(var + epsilon_));
  }
  be.batch_norm_apply(x.data(), rows, channels, mean.data(), inv_std.data(), g, b, y.data());

  // Moving statistics. With one shared copy (CentralStorage) only replica 0
  // writes it, so replicas never race on the same memory.
  ReplicaSync* ctx = ReplicaSync::current();
  const bool writer = !(ctx && ctx->variables_shared() && ctx->replica_id_in_sync_group() != 0);
  if (writer && count > 0) {
    Tensor& mm = moving_mean_->value();
    Tensor& mv = moving_variance_->value();
    for (int64_t c = 0; c < channels; ++c) {
      const float var = 1.0f / (inv_std.data()[c] * inv_std.data()[c]) - epsilon_;
      mm.data()[c] = mm.data()[c] * momentum_ + mean.data()[c] * (1.0f - momentum_);
      mv.data()[c] = mv.data()[c] * momentum_ + var * (1.0f - momentum_);
    }
  }

  std::vector<Tensor> inputs{x};
  if (scale_) inputs.push_back(gamma);
  if (center_) inputs.push_back(beta);
  const bool has_scale = scale_, has_center = center_;
  const bool synced = sync != nullptr;
  record_op(std::move(inputs), y, [=](const Tensor& dy, const std::vector<bool>& need) {
    Backend& bk = backend_for(dy.device());
    // Local sums give d gamma and d beta (the optimizer all-reduces those);
    // d x needs the sums over every example that shared the statistics.
    Tensor local = Tensor::empty(Shape{2 * channels});
    bk.batch_norm_backward_reduce(dy.data(), x.data(), rows, channels, mean.data(), inv_std.data(), local.data(),
                                  local.data() + channels);
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
      grads[0] = Tensor::empty(x.shape());
      bk.batch_norm_backward_apply(dy.data(), x.data(), rows, channels, mean.data(), inv_std.data(),
                                   has_scale ? gamma.data() : nullptr, total.data(), total.data() + channels, count,
                                   grads[0].data());
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
