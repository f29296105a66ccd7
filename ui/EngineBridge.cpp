#include "EngineBridge.h"

#include "core/Error.h"
#include "project/RunDirectory.h"
#include "train/Trainer.h"

namespace strata::ui {

namespace {
// Forwards to the UI queue and, once prepare() succeeded, to the run folder.
class BridgeSink final : public EventSink {
public:
  BridgeSink(EventQueue& queue, std::unique_ptr<RunDirectory>& dir) : queue_(queue), dir_(dir) {}
  void emit(const Event& e) override {
    if (dir_) dir_->emit(e);
    queue_.emit(e);
  }

private:
  EventQueue& queue_;
  std::unique_ptr<RunDirectory>& dir_;
};
}  // namespace

EngineBridge::EngineBridge(QObject* parent) : QObject(parent) {
  timer_.setInterval(33);
  connect(&timer_, &QTimer::timeout, this, &EngineBridge::drain);
}

EngineBridge::~EngineBridge() {
  // Never leave a training thread behind: stop after the current step.
  if (trainer_) trainer_->request_stop();
  if (thread_.joinable()) thread_.join();
  if (reaper_.joinable()) reaper_.join();
}

void EngineBridge::start(const RunConfig& config, const std::string& run_dir, const std::string& resume_from) {
  if (running_) return;
  finishThread();
  queue_.take();
  prepare_failed_ = false;
  prepare_error_.clear();
  run_dir_.reset();
  auto sink = std::make_shared<BridgeSink>(queue_, run_dir_);
  trainer_ = std::make_unique<Trainer>(config, *sink);
  running_ = true;
  paused_ = false;
  Trainer* trainer = trainer_.get();
  thread_ = std::thread([this, trainer, sink, config, run_dir, resume_from] {
    try {
      trainer->prepare();
      // As strata-run does: the folder is created only once the config is
      // known to be good, so a bad project leaves nothing behind.
      if (!run_dir.empty()) {
        auto dir = std::make_unique<RunDirectory>(run_dir, config, /*resume=*/!resume_from.empty());
        trainer->enable_checkpoints(dir->checkpoints());
        run_dir_ = std::move(dir);
      }
      if (!resume_from.empty()) trainer->restore(resume_from);
    } catch (const std::exception& e) {
      prepare_error_ = e.what();
      prepare_failed_ = true;
      FinishedEvent f;
      f.status = RunStatus::Failed;
      f.failure = failure_kind_of(e);
      f.message = e.what();
      queue_.emit(f);
      return;
    }
    trainer->run();
  });
  timer_.start();
  Q_EMIT runningChanged(true);
}

void EngineBridge::pause() {
  if (!running_ || paused_ || !trainer_) return;
  trainer_->pause();
  paused_ = true;
  Q_EMIT pausedChanged(true);
}

void EngineBridge::resume() {
  if (!running_ || !paused_ || !trainer_) return;
  trainer_->resume();
  paused_ = false;
  Q_EMIT pausedChanged(false);
}

void EngineBridge::stop() {
  if (!running_ || !trainer_) return;
  trainer_->request_stop();  // also releases a pause
}

void EngineBridge::finishThread() {
  // Joining the training thread and freeing the trainer (its replica
  // threads, prefetcher, dataset and model) can take tens of milliseconds:
  // a reaper thread does it so the event loop keeps turning. The finished
  // event was the trainer's last emit, and the run folder flushed it, so
  // nothing on the UI side needs them any more.
  if (reaper_.joinable()) reaper_.join();
  reaper_ = std::thread([thread = std::move(thread_), trainer = std::move(trainer_), dir = std::move(run_dir_)]() mutable {
    if (thread.joinable()) thread.join();
    trainer.reset();
    dir.reset();
  });
}

void EngineBridge::drain() {
  std::vector<Event> batch = queue_.take();
  if (batch.empty()) return;
  bool finished = false;
  for (const auto& e : batch) finished = finished || std::holds_alternative<FinishedEvent>(e);
  if (finished) {
    // The finished event is the trainer's last act; joining now waits only
    // for run() to return. Stop the timer first so a modal dialog raised by
    // a receiver cannot re-enter drain().
    timer_.stop();
    finishThread();
    running_ = false;
    if (paused_) {
      paused_ = false;
      Q_EMIT pausedChanged(false);
    }
  }
  if (finished && prepare_failed_) {
    Q_EMIT runningChanged(false);
    Q_EMIT prepareFailed(QString::fromStdString(prepare_error_));
    return;
  }
  Q_EMIT events(batch);
  if (finished) Q_EMIT runningChanged(false);
}

}  // namespace strata::ui
