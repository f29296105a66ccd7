#pragma once
#include "nn/Layer.h"

namespace strata::nn {

// keras.layers.BatchNormalization over the last (channel) axis, for dense
// (batch, C) and NHWC (batch, H, W, C) inputs. Training normalises with the
// batch statistics and updates the moving ones (momentum 0.99, epsilon 1e-3
// as Keras); inference uses the moving statistics.
//
// synchronized = true (keras' SyncBatchNormalization): under a mirrored
// strategy the per-channel sums are all-reduced across replicas in the forward
// pass and the two gradient sums in the backward pass, so N replicas
// normalise exactly like one device on the whole global batch. Otherwise each
// replica uses its own examples' statistics.
class BatchNormalizationLayer final : public Layer {
public:
  BatchNormalizationLayer(float momentum = 0.99f, float epsilon = 1e-3f, bool center = true, bool scale = true,
                          bool synchronized = false);
  std::string type() const override { return "batch_normalization"; }
  Shape output_shape(const Shape& input) const override { return input; }
  Json config() const override;
  Tensor call(const Tensor& x, bool training) override;
  // Training, followed by a relu layer: the relu in the normalising pass and
  // its gradient in the backward passes (Backend::batch_norm_apply_relu,
  // batch_norm_relu_backward_reduce and _apply), the same bits.
  std::optional<Tensor> call_with_next(const Layer& next, const Tensor& x, bool training) override;
  bool synchronized() const { return synchronized_; }
  Variable* moving_mean() { return moving_mean_; }
  Variable* moving_variance() { return moving_variance_; }

protected:
  void create_variables(const Shape& input) override;

private:
  Tensor normalize(const Tensor& x, bool training, bool relu);
  float momentum_, epsilon_;
  bool center_, scale_, synchronized_;
  Variable* gamma_ = nullptr;
  Variable* beta_ = nullptr;
  Variable* moving_mean_ = nullptr;
  Variable* moving_variance_ = nullptr;
};

LayerPtr BatchNormalization(bool synchronized = false, float momentum = 0.99f, float epsilon = 1e-3f);

}  // namespace strata::nn
