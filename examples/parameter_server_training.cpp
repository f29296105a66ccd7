// Asynchronous training with ParameterServerStrategy and a ClusterCoordinator
// (tensorflow.org/tutorials/distribute/parameter_server_training, the custom
// training loop part), in C++ with worker threads in one process.
//
//   parameter_server_training [--epochs N] [--examples N] [--workers N | --devices LIST] [--servers N] [--staleness K]
// (--devices sim:0,sim:1 puts the workers on the simulated accelerator: docs/devices.md)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "data/FashionMnist.h"
#include "distribute/parameter_server/ClusterCoordinator.h"
#include "distribute/parameter_server/ParameterServerStrategy.h"
#include "nn/Dense.h"
#include "nn/Flatten.h"
#include "nn/GradientTape.h"
#include "nn/Loss.h"
#include "nn/Metrics.h"
#include "nn/Optimizer.h"
#include "nn/Sequential.h"

using namespace strata;

int main(int argc, char** argv) {
  int epochs = 3, workers = 2, servers = 2, staleness = -1;
  int64_t examples = 0;  // 0 = all 60,000
  std::string device_list;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--epochs")) epochs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--examples")) examples = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--workers")) workers = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--servers")) servers = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--staleness")) staleness = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--devices")) device_list = argv[i + 1];
  }
  try {
    DatasetSplits fashion_mnist = load_fashion_mnist();
    const int64_t n = examples > 0 ? std::min(examples, fashion_mnist.train.size()) : fashion_mnist.train.size();
    Batch train = fashion_mnist.train.range(0, n);

    StrategyOptions options;
    if (!device_list.empty()) options.devices = Device::parse_list(device_list);
    else
      for (int w = 0; w < workers; ++w) options.devices.push_back(Device{DeviceKind::Cpu, w});
    options.parameter_server.servers = servers;
    if (staleness >= 0) options.parameter_server.staleness = staleness;
    ParameterServerStrategy strategy(options.devices, options);
    std::printf("Workers: %d, parameter servers: %d\n", strategy.num_workers(), strategy.num_servers());

    const int64_t global_batch = 64 * strategy.num_workers();
    auto dataset = Dataset::from_tensors(train.features, train.labels).shuffle(n, 1).batch(global_batch);
    auto dist_dataset = strategy.distribute(dataset);

    // Variables created in scope() get one private copy per worker; place()
    // shards them over the servers, which own the optimizer's state.
    auto model = [&] {
      auto scope = strategy.scope();
      auto m = std::make_unique<nn::Sequential>(
          nn::Sequential{nn::Flatten(), nn::Dense(256, Activation::Relu), nn::Dense(128, Activation::Relu), nn::Dense(10)});
      m->build(fashion_mnist.train.example_shape());
      return m;
    }();
    nn::Adam optimizer;
    auto variables = model->trainable_variables();
    strategy.place(variables, optimizer);
    nn::SparseCategoricalCrossentropy loss_object(/*from_logits=*/true, nn::Reduction::None);

    // The per-worker step: the gradients of the mean loss over the worker's
    // slice. The coordinator pulls the weights before and pushes after.
    ClusterCoordinator coordinator(strategy, [&](int, const Batch& in) {
      GradientTape tape;
      Tensor logits = (*model)(in.features, /*training=*/true, tape);
      Tensor loss = nn::compute_average_loss(loss_object(in.labels, logits), in.size());
      // The loss comes to the host for the report (loss.numpy() in TF).
      return WorkerStep{tape.gradient(loss, variables), loss.to(Device{}).item(), nn::count_correct(logits, in.labels)};
    });

    int64_t round = 0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      coordinator.start();
      for (const auto& slices : dist_dataset) coordinator.schedule(++round, slices);
      coordinator.join();  // every scheduled slice applied
      double loss = 0;
      int64_t correct = 0, seen = 0;
      int staleness_max = 0;
      for (const PushRecord& r : coordinator.take_results()) {
        loss += r.loss * static_cast<double>(r.examples);
        correct += r.correct;
        seen += r.examples;
        staleness_max = std::max(staleness_max, r.staleness);
      }
      const auto steps = coordinator.worker_steps();
      std::printf("Epoch %d: Loss = %f, Accuracy = %f, max staleness %d, slices per worker:", epoch, loss / seen,
                  static_cast<double>(correct) / seen, staleness_max);
      for (auto s : steps) std::printf(" %lld", static_cast<long long>(s));
      std::printf("\n");
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "parameter_server_training: %s\n", e.what());
    return e.kind() == ErrorKind::BadInput ? 2 : 1;
  }
}
