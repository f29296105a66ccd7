#pragma once
#include "backend/Backend.h"
#include "nn/Layer.h"
#include "nn/Padding.h"

namespace strata::nn {

// 2-D convolution on NHWC images, as keras.layers.Conv2D: kernel (kh, kw,
// in, filters), Glorot-uniform, zero bias, optional fused activation.
// Computed as im2col + one matrix product, so it runs on the same tuned GEMM
// as Dense (and a cuDNN backend can replace both kernels).
class Conv2DLayer final : public Layer {
public:
  Conv2DLayer(int64_t filters, int64_t kernel_h, int64_t kernel_w, int64_t stride_h = 1, int64_t stride_w = 1,
              Padding padding = Padding::Valid, Activation activation = Activation::None, bool use_bias = true);
  std::string type() const override { return "conv2d"; }
  Shape output_shape(const Shape& input) const override;
  Json config() const override;
  Tensor call(const Tensor& x, bool training) override;
  std::optional<Tensor> call_with_next(const Layer& next, const Tensor& x, bool training) override;

protected:
  void create_variables(const Shape& input) override;

private:
  // The convolution, with or without the bias and activation after it.
  Tensor convolve(const Tensor& x, bool with_bias_and_activation);

  int64_t filters_, kh_, kw_, sh_, sw_;
  Padding padding_;
  Activation activation_;
  bool use_bias_;
  Variable* kernel_ = nullptr;
  Variable* bias_ = nullptr;
};

// The patch matrix of an NHWC batch as a recorded op (backward: col2im).
Tensor im2col_op(const Tensor& x, const Window2D& win);

LayerPtr Conv2D(int64_t filters, int64_t kernel_size, Activation activation = Activation::None,
                Padding padding = Padding::Valid, int64_t strides = 1);

}  // namespace strata::nn
