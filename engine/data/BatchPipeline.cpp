#include "data/BatchPipeline.h"

#include <algorithm>
#include <numeric>

#include "core/Error.h"
#include "core/Rng.h"

namespace strata {

BatchPipeline::BatchPipeline(std::shared_ptr<const Dataset> dataset, PipelineOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  if (options_.batch_size <= 0) throw bad_input("batch size must be positive, got " + std::to_string(options_.batch_size));
}

BatchPipeline::~BatchPipeline() { stop_worker(); }

int64_t BatchPipeline::steps_per_epoch() const {
  const int64_t n = dataset_->size(), b = options_.batch_size;
  return options_.drop_remainder ? n / b : (n + b - 1) / b;
}

void BatchPipeline::stop_worker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  std::lock_guard lock(mutex_);
  stop_ = false;
  ready_.clear();
  worker_done_ = false;
  worker_error_ = nullptr;
}

std::span<const int64_t> BatchPipeline::rows_of(int64_t index) const {
  const int64_t b = options_.batch_size;
  const int64_t begin = index * b;
  const int64_t end = std::min<int64_t>(begin + b, static_cast<int64_t>(order_.size()));
  return std::span<const int64_t>(order_.data() + begin, static_cast<size_t>(end - begin));
}

Batch BatchPipeline::make_batch(int64_t index) const { return dataset_->gather(rows_of(index), raw_pixels_); }

void BatchPipeline::begin_epoch(int64_t epoch, int64_t first_batch) {
  stop_worker();
  order_.resize(static_cast<size_t>(dataset_->size()));
  std::iota(order_.begin(), order_.end(), 0);
  if (options_.shuffle) {
    // Fisher-Yates with a generator keyed by (seed, epoch).
    Rng rng(hash_combine(options_.seed, static_cast<uint64_t>(epoch)));
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  }
  next_index_ = std::clamp<int64_t>(first_batch, 0, steps_per_epoch());
  start_worker();
}

void BatchPipeline::start_worker() {
  if (options_.prefetch <= 0 || deferred_ || next_index_ >= steps_per_epoch()) return;
  const int64_t start = next_index_;
  worker_ = std::thread([this, start] {
    try {
      for (int64_t i = start; i < steps_per_epoch(); ++i) {
        Batch batch = make_batch(i);
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || static_cast<int>(ready_.size()) < options_.prefetch; });
        if (stop_) return;
        ready_.push_back(std::move(batch));
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      worker_error_ = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    worker_done_ = true;
    cv_.notify_all();
  });
}

void BatchPipeline::set_deferred(bool on) {
  if (on == deferred_) return;
  // Batches prepared ahead in the other form are dropped; the epoch goes on
  // from the next batch not yet handed out.
  stop_worker();
  deferred_ = on;
  if (!order_.empty()) start_worker();
}

std::optional<Batch> BatchPipeline::next() {
  if (next_index_ >= steps_per_epoch()) return std::nullopt;
  if (deferred_) {
    const std::span<const int64_t> rows = rows_of(next_index_++);
    Batch b;
    b.rows.assign(rows.begin(), rows.end());
    b.pending = true;
    b.global_batch_size = static_cast<int64_t>(rows.size());
    return b;
  }
  if (options_.prefetch <= 0) return make_batch(next_index_++);
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return !ready_.empty() || worker_done_; });
  if (worker_error_) std::rethrow_exception(worker_error_);
  if (ready_.empty()) return std::nullopt;
  Batch b = std::move(ready_.front());
  ready_.pop_front();
  ++next_index_;
  cv_.notify_all();
  return b;
}

}  // namespace strata
