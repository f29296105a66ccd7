#include "distribute/parameter_server/ClusterCoordinator.h"

#include <algorithm>
#include <utility>

#include "core/Clock.h"
#include "core/Error.h"
#include "distribute/parameter_server/WorkerRoundSpans.h"

namespace strata {

ClusterCoordinator::ClusterCoordinator(ParameterServerStrategy& strategy, StepFunction step)
    : strategy_(strategy),
      step_(std::move(step)),
      store_(strategy.store()),
      bound_(strategy.staleness_bound()),
      sync_(strategy.synchronous()),
      steps_(static_cast<size_t>(strategy.num_workers()), 0),
      lost_(static_cast<size_t>(strategy.num_workers()), false),
      fail_at_(static_cast<size_t>(strategy.num_workers()), 0) {}

ClusterCoordinator::~ClusterCoordinator() {
  if (!runner_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    if (!fatal_) fatal_ = std::make_exception_ptr(Error(ErrorKind::Aborted, "coordinator destroyed"));
  }
  cv_.notify_all();
  runner_.join();
}

int64_t ClusterCoordinator::watermark() const { return remaining_.empty() ? last_round_ : remaining_.begin()->first - 1; }

void ClusterCoordinator::check_fatal() const {
  if (fatal_) std::rethrow_exception(fatal_);
}

void ClusterCoordinator::start() {
  if (runner_.joinable()) return;
  closing_ = false;
  // The workers run on the strategy's replica threads (their backends, cores
  // and variable components); this thread only waits for them.
  runner_ = std::thread([this] {
    try {
      strategy_.run_replicas([this](ReplicaContext& ctx) { worker_loop(ctx.local_replica_id()); });
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!fatal_) fatal_ = std::current_exception();
    }
    cv_.notify_all();
  });
}

void ClusterCoordinator::schedule(int64_t round, const PerReplica<Batch>& slices) {
  std::unique_lock lock(mutex_);
  const size_t cap = 2 * static_cast<size_t>(slices.num_replicas());
  cv_.wait(lock, [&] { return fatal_ || queue_.size() < cap; });
  check_fatal();
  int nonempty = 0;
  int64_t examples = 0;
  for (auto& s : slices) {
    nonempty += s.size() > 0;
    examples += s.size();
  }
  for (int i = 0; i < slices.num_replicas(); ++i)
    if (slices[i].size() > 0) queue_.emplace(Key{round, i}, Task{slices[i], nonempty, examples});
  remaining_[round] = nonempty;
  last_round_ = round;
  lock.unlock();
  cv_.notify_all();
}

void ClusterCoordinator::join() {
  {
    std::unique_lock lock(mutex_);
    closing_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return fatal_ || (queue_.empty() && in_flight_ == 0); });
  }
  cv_.notify_all();
  if (runner_.joinable()) runner_.join();
  std::lock_guard lock(mutex_);
  closing_ = false;
  check_fatal();
}

void ClusterCoordinator::worker_loop(int w) {
  // Workers never wait for each other: no collectives inside a step (a
  // synchronised batch norm normalises over the worker's own slice).
  ReplicaSync::Scope no_collectives(nullptr);
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return fatal_ || lost_[w] || !queue_.empty() || (closing_ && in_flight_ == 0); });
    if (fatal_ || lost_[w] || queue_.empty()) return;
    auto node = queue_.extract(queue_.begin());
    ++in_flight_;
    // Stale-synchronous parallel: wait until the rounds more than k behind
    // this one are applied. A lower slice put back by a lost worker is taken
    // first, or the workers could all wait for a slice nobody holds.
    const double wait_start = monotonic_seconds();
    bool waited = false;
    while (bound_ && node.key().first - 1 - watermark() > *bound_ && !fatal_) {
      if (!queue_.empty() && queue_.begin()->first < node.key()) {
        auto lower = queue_.extract(queue_.begin());
        queue_.insert(std::move(node));
        node = std::move(lower);
        continue;
      }
      waited = true;
      cv_.wait(lock);
    }
    if (fatal_) {
      --in_flight_;
      return;
    }
    const int64_t round = node.key().first;
    const Task& task = node.mapped();
    const bool inject = fail_at_[static_cast<size_t>(w)] > 0 && steps_[static_cast<size_t>(w)] + 1 >= fail_at_[static_cast<size_t>(w)];
    PushRecord r;
    r.round = round;
    r.worker = w;
    r.examples = task.batch.size();
    r.round_examples = task.round_examples;
    // Slice-mean gradients: asynchronously each is one update; in a
    // synchronous round they are weighted by slice size, so the sum is the
    // gradient of the mean over the whole global batch.
    r.weight = sync_ ? static_cast<float>(r.examples) / static_cast<float>(task.round_examples) : 1.0f;
    r.sync_slices = sync_ ? task.slices : 0;
    r.staleness = static_cast<int>(round - 1 - watermark());
    lock.unlock();

    std::string worker_error;
    std::exception_ptr server_error;
    const double t0 = monotonic_seconds();
    if (tracer_ && waited)
      tracer_->record(trace::Span{trace::SpanKind::StalenessWait, trace::Lane{trace::LaneKind::Worker, w}, round,
                                  wait_start * 1e6, (t0 - wait_start) * 1e6, 0});
    double pulled_at = t0;
    try {
      std::vector<int64_t> pulled;
      try {
        pulled = store_.pull(w, round);
        pulled_at = monotonic_seconds();
      } catch (...) {
        server_error = std::current_exception();
      }
      if (!server_error) {
        if (inject)
          throw worker_lost("worker " + std::to_string(w) + " failed (injected at its step " +
                              std::to_string(fail_at_[static_cast<size_t>(w)]) + ")");
        // Any worker may take any slice: its examples move to this worker's
        // device first (a no-op when they are there, or all on the host).
        WorkerStep out = step_(w, task.batch.to(strategy_.devices()[static_cast<size_t>(w)]));
        r.loss = out.loss;
        r.correct = out.correct;
        const double push_start = monotonic_seconds();
        try {
          r.updates_between = store_.push(out.grads, pulled, r);
          record_worker_round(tracer_, w, round, out.grads, t0, pulled_at, push_start, monotonic_seconds());
        } catch (...) {
          server_error = std::current_exception();
        }
      }
    } catch (const std::exception& e) {
      worker_error = e.what();
    }
    r.seconds = monotonic_seconds() - t0;

    lock.lock();
    --in_flight_;
    if (server_error) {
      if (!fatal_) fatal_ = server_error;
      cv_.notify_all();
      return;
    }
    if (!worker_error.empty()) {
      lost_[static_cast<size_t>(w)] = true;
      lost_events_.push_back({w, worker_error});
      queue_.insert(std::move(node));  // another worker does this slice
      if (std::none_of(lost_.begin(), lost_.end(), [](bool l) { return !l; }))
        fatal_ = std::make_exception_ptr(worker_lost("parameter_server: all " + std::to_string(lost_.size()) +
                                                       " workers were lost; the last: " + worker_error));
      cv_.notify_all();
      return;
    }
    ++steps_[static_cast<size_t>(w)];
    if (--remaining_[round] == 0) remaining_.erase(round);
    results_.push_back(r);
    cv_.notify_all();
  }
}

std::vector<PushRecord> ClusterCoordinator::take_results() {
  std::lock_guard lock(mutex_);
  return std::exchange(results_, {});
}

std::vector<WorkerLost> ClusterCoordinator::take_lost() {
  std::lock_guard lock(mutex_);
  return std::exchange(lost_events_, {});
}

std::vector<int64_t> ClusterCoordinator::worker_steps() const {
  std::lock_guard lock(mutex_);
  return steps_;
}

void ClusterCoordinator::fail_worker_at(int worker, int64_t at_step) {
  std::lock_guard lock(mutex_);
  if (worker < 0 || worker >= static_cast<int>(fail_at_.size()))
    throw bad_input("parameter_server: no worker " + std::to_string(worker) + " to fail (there are " +
                    std::to_string(fail_at_.size()) + ")");
  fail_at_[static_cast<size_t>(worker)] = at_step;
}

}  // namespace strata
