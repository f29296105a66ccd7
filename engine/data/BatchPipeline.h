#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "data/Dataset.h"

namespace strata {

struct PipelineOptions {
  int64_t batch_size = 32;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_remainder = false;
  int prefetch = 2;  // batches prepared ahead on a background thread (0 = none)
};

// shuffle -> batch -> prefetch, as tf.data. The permutation of epoch e
// depends only on (seed, e), so an epoch can be replayed or resumed at any
// batch. A background thread converts the next batches (uint8 -> float)
// while the current step trains.
class BatchPipeline {
public:
  BatchPipeline(std::shared_ptr<const Dataset> dataset, PipelineOptions options);
  ~BatchPipeline();
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  int64_t steps_per_epoch() const;
  // Starts epoch `epoch` at batch `first_batch`; stops any epoch under way.
  void begin_epoch(int64_t epoch, int64_t first_batch = 0);
  // The next batch of the epoch, or nothing at its end.
  std::optional<Batch> next();
  const Dataset& dataset() const { return *dataset_; }
  // Image batches keep uint8 features, for the device that trains on them
  // to convert (Dataset::gather's raw_pixels). Batches already prepared keep
  // the form they were made in.
  void set_raw_pixels(bool raw) { raw_pixels_ = raw; }
  // Pending batches (Batch::pending): next() hands out only the examples'
  // indices, and whoever trains on them gathers. No prefetch thread runs
  // meanwhile. For host replicas that take every core: each gathers its own
  // rows, in parallel, instead of a prefetch thread winning a core from
  // them. Switching mid-epoch goes on from the next batch not handed out.
  void set_deferred(bool on);
  const PipelineOptions& options() const { return options_; }

private:
  std::span<const int64_t> rows_of(int64_t index) const;
  Batch make_batch(int64_t index) const;
  void start_worker();
  void stop_worker();

  std::shared_ptr<const Dataset> dataset_;
  PipelineOptions options_;
  std::vector<int64_t> order_;
  int64_t next_index_ = 0;

  std::atomic<bool> raw_pixels_{false};
  bool deferred_ = false;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;
  bool stop_ = false;
  bool worker_done_ = false;
  std::exception_ptr worker_error_;
};

}  // namespace strata
