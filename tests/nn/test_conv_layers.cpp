// Convolutional layers: shapes, gradient checks, and synchronised batch norm
// across replicas against plain batch norm on the whole global batch.
#include <QtTest>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "GradCheck.h"
#include "backend/cpu/CpuBackend.h"
#include "core/Rng.h"
#include "distribute/Strategies.h"
#include "nn/ActivationLayer.h"
#include "nn/BatchNormalization.h"
#include "nn/Conv2D.h"
#include "nn/LayerFactory.h"
#include "nn/Pool2D.h"
#include "nn/Reshape.h"
#include "nn/Sequential.h"

using namespace strata;
using namespace strata::test;

class TestConvLayers : public QObject {
  Q_OBJECT

private slots:
  void output_shapes_follow_tensorflow() {
    nn::Conv2DLayer same(8, 5, 5, 1, 1, nn::Padding::Same);
    QCOMPARE(same.output_shape(Shape{28, 28, 1}), (Shape{28, 28, 8}));
    nn::Conv2DLayer valid(8, 5, 5, 1, 1, nn::Padding::Valid);
    QCOMPARE(valid.output_shape(Shape{28, 28, 1}), (Shape{24, 24, 8}));
    nn::Conv2DLayer strided(4, 3, 3, 2, 2, nn::Padding::Same);
    QCOMPARE(strided.output_shape(Shape{7, 7, 3}), (Shape{4, 4, 4}));
    QCOMPARE(nn::MaxPool2D(2)->output_shape(Shape{7, 7, 3}), (Shape{3, 3, 3}));
    QCOMPARE(nn::MaxPool2D(2, 2, nn::Padding::Same)->output_shape(Shape{7, 7, 3}), (Shape{4, 4, 3}));
    QCOMPARE(nn::GlobalAveragePooling2D()->output_shape(Shape{7, 7, 3}), (Shape{3}));
    QCOMPARE(nn::Reshape({-1, 4})->output_shape(Shape{2, 3, 4}), (Shape{6, 4}));
    QVERIFY_EXCEPTION_THROWN(valid.output_shape(Shape{3, 3, 1}), Error);
    QVERIFY_EXCEPTION_THROWN(valid.output_shape(Shape{784}), Error);
  }

  void tutorial_cnn_summary() {
    nn::Sequential m{nn::Conv2D(32, 5, Activation::Relu, nn::Padding::Same), nn::MaxPool2D(2),
                     nn::Conv2D(64, 5, Activation::Relu, nn::Padding::Same), nn::MaxPool2D(2)};
    auto s = m.summary(Shape{28, 28, 1});
    QCOMPARE(s.back().output_shape, (Shape{7, 7, 64}));
    m.build(Shape{28, 28, 1});
    QCOMPARE(m.param_count(), int64_t{5 * 5 * 32 + 32 + 5 * 5 * 32 * 64 + 64});
  }

  void conv_gradients_data() {
    QTest::addColumn<int>("kernel");
    QTest::addColumn<int>("stride");
    QTest::addColumn<bool>("same");
    QTest::addColumn<int>("activation");
    QTest::newRow("3x3 valid") << 3 << 1 << false << int(Activation::None);
    QTest::newRow("3x3 same relu") << 3 << 1 << true << int(Activation::Relu);
    QTest::newRow("2x2 stride 2 same tanh") << 2 << 2 << true << int(Activation::Tanh);
    QTest::newRow("3x3 stride 2 same") << 3 << 2 << true << int(Activation::None);
    QTest::newRow("1x1 sigmoid") << 1 << 1 << false << int(Activation::Sigmoid);
  }
  void conv_gradients() {
    QFETCH(int, kernel);
    QFETCH(int, stride);
    QFETCH(bool, same);
    QFETCH(int, activation);
    nn::Conv2DLayer conv(4, kernel, kernel, stride, stride, same ? nn::Padding::Same : nn::Padding::Valid,
                         static_cast<Activation>(activation));
    conv.build(Shape{6, 5, 3});
    Tensor x = random_tensor(Shape{2, 6, 5, 3}, 11);
    // A small step keeps ReLU's kink out of the difference quotient.
    check_layer_gradients(conv, x, true, 2e-2, activation == int(Activation::Relu) ? 1e-3f : 1e-2f);
  }

  void one_call_convolution_matches_the_patch_matrix_data() {
    QTest::addColumn<int>("kernel");
    QTest::addColumn<int>("stride");
    QTest::newRow("5x5 same (cuDNN's case)") << 5 << 1;
    QTest::newRow("3x3 stride 2 same on an even size (asymmetric padding)") << 3 << 2;
  }
  void one_call_convolution_matches_the_patch_matrix() {
    // sim convolves in one call (Backend::has_conv2d, as a GPU with cuDNN)
    // through im2col + gemm on the CPU's kernels. The CPU convolves with
    // oneDNN where the build has it, else builds the patch matrix in the
    // layer: then every value agrees bit for bit, with oneDNN (another
    // summation order) to float rounding.
    QFETCH(int, kernel);
    QFETCH(int, stride);
    CpuBackend cpu(1);
    ScopedCpuBackend use(&cpu);
    const Tensor x = random_tensor(Shape{3, 8, 8, 2}, 21);
    const Tensor r = random_tensor(Shape{3, 8 / stride, 8 / stride, 5}, 22);
    auto run = [&](const Device& d) {
      set_global_seed(5);
      VariableComponentsScope scope({d});
      nn::Conv2DLayer conv(5, kernel, kernel, stride, stride, nn::Padding::Same, Activation::Relu);
      conv.build(Shape{8, 8, 2});
      const Tensor xd = x.to(d);
      GradientTape tape;
      Tensor y = conv.call(xd, true);
      std::vector<Tensor> sources{xd};
      for (auto* v : conv.trainable_variables()) sources.push_back(v->value());
      std::vector<std::vector<float>> out{y.values()};
      for (auto& g : tape.gradient(weighted_sum(y, r), sources)) out.push_back(g.values());
      return out;
    };
    const auto on_cpu = run(Device{});
    const auto on_sim = run(Device{DeviceKind::Sim, 0});
    QCOMPARE(on_sim.size(), size_t{4});
    for (size_t i = 0; i < on_cpu.size(); ++i) {
      QCOMPARE(on_sim[i].size(), on_cpu[i].size());
      for (size_t j = 0; j < on_cpu[i].size(); ++j)
        QVERIFY2(std::abs(on_sim[i][j] - on_cpu[i][j]) <= 2e-6f * std::max(1.0f, std::abs(on_cpu[i][j])),
                 qPrintable(
                     QString("output %1 element %2: sim %3, cpu %4").arg(i).arg(j).arg(on_sim[i][j]).arg(on_cpu[i][j])));
    }
  }

  void pooling_gradients() {
    Tensor x = random_tensor(Shape{2, 5, 6, 3}, 12);
    nn::Pool2DLayer max(nn::Pool2DLayer::Kind::Max, 2, 2, 2, 2, nn::Padding::Same);
    // Max is exact in float: a tiny step never crosses a near-tie between
    // two window elements (a 1e-3 step does for this input).
    check_layer_gradients(max, x, true, 2e-2, 1e-5f);
    nn::Pool2DLayer max3(nn::Pool2DLayer::Kind::Max, 3, 3, 1, 1, nn::Padding::Valid);
    check_layer_gradients(max3, x, true, 2e-2, 1e-5f);
    nn::Pool2DLayer avg(nn::Pool2DLayer::Kind::Average, 2, 3, 2, 2, nn::Padding::Same);
    check_layer_gradients(avg, x, true);
    nn::Pool2DLayer global(nn::Pool2DLayer::Kind::GlobalAverage, 0, 0, 1, 1, nn::Padding::Valid);
    check_layer_gradients(global, x, true);
  }

  void convolution_then_max_pool_fuses_to_the_same_results_data() {
    QTest::addColumn<int>("activation");
    QTest::addColumn<bool>("relu_layer");
    QTest::addColumn<int>("pool");
    QTest::addColumn<int>("stride");
    QTest::addColumn<int>("size");  // odd: the pool pads ("same")
    QTest::newRow("conv relu, 2x2 pool (the tutorial CNN's pair)") << int(Activation::Relu) << false << 2 << 2 << 6;
    QTest::newRow("conv without activation, overlapping 3x3 pool") << int(Activation::None) << false << 3 << 1 << 6;
    QTest::newRow("conv relu, 2x2 pool same on an odd size") << int(Activation::Relu) << false << 2 << 2 << 7;
    QTest::newRow("conv tanh: not fused") << int(Activation::Tanh) << false << 2 << 2 << 6;
    QTest::newRow("relu layer, then 2x2 pool (the BN CNN's pair)") << int(Activation::None) << true << 2 << 2 << 6;
  }
  void convolution_then_max_pool_fuses_to_the_same_results() {
    // Sequential hands a convolution's bias and relu (or a relu layer) to the
    // max pooling after it (Layer::call_with_next). The outputs must be the
    // layer-by-layer ones to the bit, the gradients to float rounding (the
    // bias's gradient is summed over the pooled pixels instead of all).
    QFETCH(int, activation);
    QFETCH(bool, relu_layer);
    QFETCH(int, pool);
    QFETCH(int, stride);
    QFETCH(int, size);
    auto conv = std::make_shared<nn::Conv2DLayer>(4, 3, 3, 1, 1, nn::Padding::Same, static_cast<Activation>(activation));
    std::vector<nn::LayerPtr> layers{conv};
    if (relu_layer) layers.push_back(nn::ReLU());
    layers.push_back(std::make_shared<nn::Pool2DLayer>(nn::Pool2DLayer::Kind::Max, pool, pool, stride, stride,
                                                       size % 2 ? nn::Padding::Same : nn::Padding::Valid));
    nn::Sequential model(layers);
    model.build(Shape{size, size, 3});
    // A bias of either sign, so many windows end below zero under relu.
    Tensor bias = conv->trainable_variables()[1]->value();
    const Tensor b = random_tensor(bias.shape(), 41);
    std::copy(b.data(), b.data() + b.numel(), bias.data());
    const Tensor x = random_tensor(Shape{2, size, size, 3}, 42);
    std::vector<Tensor> sources{x};
    for (auto* v : model.trainable_variables()) sources.push_back(v->value());
    auto run = [&](bool fused) {
      GradientTape tape;
      Tensor y = x;
      if (fused) {
        y = model(x, true);
      } else {
        for (const auto& l : model.layers()) y = l->call(y, true);
      }
      const Tensor r = random_tensor(y.shape(), 43);
      std::vector<std::vector<float>> out{y.values()};
      for (auto& g : tape.gradient(weighted_sum(y, r), sources)) out.push_back(g.values());
      return out;
    };
    // Fused where the pair allows it, and only there.
    const size_t first = relu_layer ? 1 : 0;
    const Tensor into = relu_layer ? conv->call(x, false) : x;
    QCOMPARE(layers[first]->call_with_next(*layers[first + 1], into, false).has_value(), activation != int(Activation::Tanh));
    const auto fused = run(true), apart = run(false);
    QCOMPARE(fused[0], apart[0]);
    for (size_t i = 1; i < fused.size(); ++i)
      for (size_t j = 0; j < fused[i].size(); ++j)
        QVERIFY2(std::abs(fused[i][j] - apart[i][j]) <= 1e-5f * std::max(1.0f, std::abs(apart[i][j])),
                 qPrintable(
                     QString("gradient %1 element %2: fused %3, apart %4").arg(i).arg(j).arg(fused[i][j]).arg(apart[i][j])));
  }

  void batch_norm_then_relu_fuses_to_the_same_bits_data() {
    QTest::addColumn<bool>("images");
    QTest::newRow("nhwc") << true;
    QTest::newRow("dense") << false;
  }
  void batch_norm_then_relu_fuses_to_the_same_bits() {
    // Sequential hands a relu layer to the batch norm before it when
    // training (Layer::call_with_next): the relu in the normalising pass,
    // its gradient in the backward sums' pass. Outputs, gradients and the
    // moving statistics are the layer-by-layer ones to the bit.
    QFETCH(bool, images);
    auto make = [&] {
      auto bn = std::make_shared<nn::BatchNormalizationLayer>();
      nn::Sequential model({bn, nn::ReLU()});
      const Shape in = images ? Shape{5, 5, 6} : Shape{6};
      model.build(in);
      bn->trainable_variables()[0]->assign(random_tensor(Shape{6}, 3, 1.0f));
      bn->trainable_variables()[1]->assign(random_tensor(Shape{6}, 4, 1.0f));
      return std::make_pair(bn, std::move(model));
    };
    const Tensor x = random_tensor(images ? Shape{3, 5, 5, 6} : Shape{7, 6}, 42, 2.0f);
    auto run = [&](bool fused) {
      auto [bn, model] = make();
      std::vector<Tensor> sources{x};
      for (auto* v : model.trainable_variables()) sources.push_back(v->value());
      GradientTape tape;
      Tensor y = x;
      if (fused) {
        y = model(x, true);
      } else {
        for (const auto& l : model.layers()) y = l->call(y, true);
      }
      const Tensor r = random_tensor(y.shape(), 43);
      std::vector<std::vector<float>> out{y.values()};
      for (auto& g : tape.gradient(weighted_sum(y, r), sources)) out.push_back(g.values());
      out.push_back(bn->moving_mean()->value().values());
      out.push_back(bn->moving_variance()->value().values());
      return out;
    };
    const auto fused = run(true), apart = run(false);
    QCOMPARE(fused.size(), apart.size());
    for (size_t i = 0; i < fused.size(); ++i) QCOMPARE(fused[i], apart[i]);
    // Some outputs were cut by the relu, so the fused gradient's mask mattered.
    QVERIFY(std::count(fused[0].begin(), fused[0].end(), 0.0f) > 0);
    // Fused only when training, and only with a relu after.
    auto [bn, model] = make();
    QVERIFY(bn->call_with_next(*model.layers()[1], x, true).has_value());
    QVERIFY(!bn->call_with_next(*model.layers()[1], x, false).has_value());
    QVERIFY(!bn->call_with_next(*nn::Tanh(), x, true).has_value());
  }

  void max_pool_values() {
    Tensor x = Tensor::from(Shape{1, 2, 2, 1}, std::vector<float>{1, 5, -3, 2});
    auto pool = nn::MaxPool2D(2);
    QCOMPARE(pool->call(x, false).item(), 5.0f);
    auto avg = nn::AveragePool2D(2);
    QCOMPARE(avg->call(x, false).item(), 1.25f);
  }

  void batch_norm_gradients_data() {
    QTest::addColumn<bool>("training");
    QTest::newRow("training") << true;
    QTest::newRow("inference") << false;
  }
  void batch_norm_gradients() {
    QFETCH(bool, training);
    nn::BatchNormalizationLayer bn;
    bn.build(Shape{3, 3, 4});
    // Non-trivial gamma/beta and moving statistics.
    bn.trainable_variables()[0]->assign(random_tensor(Shape{4}, 3, 1.0f));
    bn.trainable_variables()[1]->assign(random_tensor(Shape{4}, 4, 1.0f));
    bn.moving_variance()->assign(Tensor::full(Shape{4}, 2.0f));
    Tensor x = random_tensor(Shape{4, 3, 3, 4}, 13, 2.0f);
    check_layer_gradients(bn, x, training, 3e-2, 1e-2f);
  }

  void batch_norm_normalises_and_tracks_moving_statistics() {
    nn::BatchNormalizationLayer bn(0.5f);
    bn.build(Shape{2});
    Tensor x = Tensor::from(Shape{4, 2}, std::vector<float>{1, 10, 3, 10, 5, 20, 7, 20});
    Tensor y = bn.call(x, true);
    double m0 = 0;
    for (int r = 0; r < 4; ++r) m0 += y.data()[r * 2];
    QVERIFY(std::abs(m0) < 1e-5);
    QVERIFY(std::abs(bn.moving_mean()->value().data()[0] - 2.0f) < 1e-5);   // 0.5 * 0 + 0.5 * 4
    QVERIFY(std::abs(bn.moving_variance()->value().data()[1] - 13.0f) < 1e-3);  // 0.5 * 1 + 0.5 * 25
  }

  void sync_batch_norm_equals_global_batch_norm_data() {
    QTest::addColumn<int>("replicas");
    QTest::newRow("2 replicas") << 2;
    QTest::newRow("3 replicas") << 3;
  }
  void sync_batch_norm_equals_global_batch_norm() {
    QFETCH(int, replicas);
    const int64_t batch = 7;  // uneven split on purpose
    Tensor x = random_tensor(Shape{batch, 2, 2, 3}, 21, 3.0f);
    Tensor r = random_tensor(Shape{batch, 2, 2, 3}, 22);
    Tensor gamma = random_tensor(Shape{3}, 23), beta = random_tensor(Shape{3}, 24);

    // Reference: one device, whole batch.
    nn::BatchNormalizationLayer ref(0.9f);
    ref.build(Shape{2, 2, 3});
    ref.trainable_variables()[0]->assign(gamma);
    ref.trainable_variables()[1]->assign(beta);
    std::vector<Tensor> ref_grads;
    Tensor ref_y;
    {
      GradientTape tape;
      ref_y = ref.call(x, true);
      std::vector<Tensor> sources{x, ref.trainable_variables()[0]->value(), ref.trainable_variables()[1]->value()};
      ref_grads = tape.gradient(weighted_sum(ref_y, r), sources);
    }

    // As test_conv_layers_sim, the replicas run on the simulated accelerator.
    const char* env = std::getenv("STRATA_TEST_DEVICES");
    const DeviceKind kind = env && std::string(env) == "sim" ? DeviceKind::Sim : DeviceKind::Cpu;
    std::vector<Device> devices;
    for (int i = 0; i < replicas; ++i) devices.push_back(Device{kind, i});
    MirroredStrategy strategy(devices);
    std::unique_ptr<nn::BatchNormalizationLayer> bn;
    {
      auto scope = strategy.scope();
      bn = std::make_unique<nn::BatchNormalizationLayer>(0.9f, 1e-3f, true, true, true);
      bn->build(Shape{2, 2, 3});
      bn->trainable_variables()[0]->assign(gamma);
      bn->trainable_variables()[1]->assign(beta);
    }
    Batch global;
    global.features = x;
    global.labels = Tensor::zeros(Shape{batch}, DType::Int32);
    auto xs = split_batch(global, replicas, devices);
    std::vector<int64_t> offsets{0};
    for (int i = 0; i < replicas; ++i) offsets.push_back(offsets.back() + xs[i].size());

    auto results = strategy.run(
        [&](ReplicaContext& ctx, const Batch& in) {
          const int id = ctx.replica_id_in_sync_group();
          Tensor rr = r.slice_rows(offsets[static_cast<size_t>(id)], offsets[static_cast<size_t>(id) + 1]);
          GradientTape tape;
          Tensor y = bn->call(in.features, true);
          std::vector<Tensor> sources{in.features, bn->trainable_variables()[0]->value(), bn->trainable_variables()[1]->value()};
          auto grads = tape.gradient(weighted_sum(y, rr), sources);
          std::vector<Tensor> params{grads[1], grads[2]};
          ctx.all_reduce(ReduceOp::Sum, params);  // what the optimizer does
          return std::vector<Tensor>{y, grads[0], params[0], params[1]};
        },
        xs);

    auto close = [](const Tensor& on_device, const float* b, int64_t n, double tol) {
      const std::vector<float> a = on_device.values();
      for (int64_t i = 0; i < n; ++i)
        if (std::abs(a[static_cast<size_t>(i)] - b[i]) > tol * std::max(1.0f, std::abs(b[i]))) return false;
      return true;
    };
    for (int i = 0; i < replicas; ++i) {
      const auto& out = results[i];
      const int64_t row = 12, lo = offsets[static_cast<size_t>(i)];
      QVERIFY2(close(out[0], ref_y.data() + lo * row, out[0].numel(), 1e-5), "outputs differ");
      QVERIFY2(close(out[1], ref_grads[0].data() + lo * row, out[1].numel(), 1e-4), "input gradients differ");
      QVERIFY2(close(out[2], ref_grads[1].data(), 3, 1e-4), "gamma gradients differ");
      QVERIFY2(close(out[3], ref_grads[2].data(), 3, 1e-4), "beta gradients differ");
      // Moving statistics agree on every replica and with one device (host
      // replicas under the sharded update share one copy).
      QVERIFY(bn->moving_mean()->replica_component(i).device().same_memory(devices[static_cast<size_t>(i)]));
      QVERIFY(close(bn->moving_mean()->replica_component(i), ref.moving_mean()->value().data(), 3, 1e-5));
      QVERIFY(close(bn->moving_variance()->replica_component(i), ref.moving_variance()->value().data(), 3, 1e-4));
    }
  }

  void factory_builds_and_validates_conv_layers() {
    auto conv = nn::make_layer(Json::parse(R"({"type":"conv2d","filters":8,"kernel_size":[3,5],"strides":2,"padding":"same","activation":"relu"})"), "l");
    QCOMPARE(conv->output_shape(Shape{28, 28, 1}), (Shape{14, 14, 8}));
    auto problems = nn::check_layer(Json::parse(R"({"type":"conv2d","filters":-3,"kernel_size":[3],"padding":"full"})"), "model.layers[0]");
    QCOMPARE(problems.size(), size_t{3});
    QVERIFY(QString::fromStdString(problems[0]).startsWith("model.layers[0].filters: must be a positive integer"));
    auto bn = nn::make_layer(Json::parse(R"({"type":"batch_normalization","synchronized":true})"), "l");
    QVERIFY(static_cast<nn::BatchNormalizationLayer*>(bn.get())->synchronized());
    QVERIFY(!nn::check_layer(Json::parse(R"({"type":"reshape","target_shape":[-1,2]})"), "l").size());
    QVERIFY(nn::check_layer(Json::parse(R"({"type":"reshape","target_shape":[0]})"), "l").size());
  }
};

QTEST_GUILESS_MAIN(TestConvLayers)
#include "test_conv_layers.moc"
