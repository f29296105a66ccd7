// The TensorFlow 2 custom training loop with MirroredStrategy
// (tensorflow.org/tutorials/distribute/custom_training), line for line in C++.
//
//   custom_training_loop [--epochs N] [--examples N] [--replicas N | --devices LIST]
// (--devices sim:0,sim:1 trains on the simulated accelerator: docs/devices.md)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "data/FashionMnist.h"
#include "distribute/Strategies.h"
#include "nn/ActivationLayer.h"
#include "nn/Dense.h"
#include "nn/Flatten.h"
#include "nn/GradientTape.h"
#include "nn/Loss.h"
#include "nn/Optimizer.h"
#include "nn/Sequential.h"

using namespace strata;

int main(int argc, char** argv) {
  int EPOCHS = 10;
  int64_t examples = 0;  // 0 = all 60,000
  int replicas = 2;
  std::string device_list;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--epochs")) EPOCHS = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--examples")) examples = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--replicas")) replicas = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--devices")) device_list = argv[i + 1];
  }
  try {
    // Fashion-MNIST as tensors: (60000, 28, 28, 1) floats in [0, 1] and int labels.
    DatasetSplits fashion_mnist = load_fashion_mnist();
    const int64_t n = examples > 0 ? std::min(examples, fashion_mnist.train.size()) : fashion_mnist.train.size();
    Batch train = fashion_mnist.train.range(0, n);
    Tensor train_images = train.features, train_labels = train.labels;

    std::vector<Device> devices;
    if (!device_list.empty()) devices = Device::parse_list(device_list);
    else
      for (int r = 0; r < replicas; ++r) devices.push_back(Device{DeviceKind::Cpu, r});
    MirroredStrategy strategy(devices);
    std::printf("Number of devices: %d\n", strategy.num_replicas_in_sync());

    const int64_t BUFFER_SIZE = n;
    const int64_t BATCH_SIZE_PER_REPLICA = 64;
    const int64_t GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync();

    auto train_dataset = Dataset::from_tensors(train_images, train_labels).shuffle(BUFFER_SIZE, 1).batch(GLOBAL_BATCH_SIZE);
    auto train_dist_dataset = strategy.distribute(train_dataset);

    // `with strategy.scope():` - variables created while the scope lives are mirrored.
    auto scope = strategy.scope();
    auto model = nn::Sequential{nn::Flatten(), nn::Dense(256, Activation::Relu), nn::Dense(128, Activation::Relu),
                                nn::Dense(10)};
    nn::Adam optimizer;
    nn::SparseCategoricalCrossentropy loss_object(/*from_logits=*/true, nn::Reduction::None);

    auto compute_loss = [&](const Tensor& labels, const Tensor& predictions) {
      Tensor per_example_loss = loss_object(labels, predictions);
      return nn::compute_average_loss(per_example_loss, GLOBAL_BATCH_SIZE);
    };

    auto train_step = [&](const Batch& inputs) {
      GradientTape tape;
      Tensor predictions = model(inputs.features, /*training=*/true, tape);
      Tensor loss = compute_loss(inputs.labels, predictions);
      auto gradients = tape.gradient(loss, model.trainable_variables());
      optimizer.apply_gradients(gradients, model.trainable_variables());
      return loss;
    };

    auto distributed_train_step = [&](const PerReplica<Batch>& dist_inputs) {
      PerReplica<Tensor> per_replica_losses = strategy.run(train_step, dist_inputs);
      return strategy.reduce(ReduceOp::Sum, per_replica_losses);
    };

    for (int epoch = 0; epoch < EPOCHS; ++epoch) {
      double total_loss = 0.0;
      int num_batches = 0;
      for (const auto& x : train_dist_dataset) {
        total_loss += distributed_train_step(x).item();
        ++num_batches;
      }
      const double train_loss = total_loss / num_batches;
      std::printf("Epoch %d: Loss = %f\n", epoch + 1, train_loss);
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "custom_training_loop: %s\n", e.what());
    return e.kind() == ErrorKind::BadInput ? 2 : 1;
  }
}
