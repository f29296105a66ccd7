#pragma once
#include <cstdint>

#include "core/Error.h"

namespace strata {

// What an input function needs to build its part of a distributed dataset
// (tf.distribute.InputContext).
struct InputContext {
  int num_input_pipelines = 1;
  int input_pipeline_id = 0;
  int num_replicas_in_sync = 1;

  int64_t get_per_replica_batch_size(int64_t global_batch_size) const {
    if (global_batch_size % num_replicas_in_sync != 0)
      throw bad_input("global batch " + std::to_string(global_batch_size) + " is not divisible by " +
                      std::to_string(num_replicas_in_sync) + " replicas");
    return global_batch_size / num_replicas_in_sync;
  }
};

}  // namespace strata
