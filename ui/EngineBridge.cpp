#include "EngineBridge.h"

#include "core/Error.h"
#include "project/RunSession.h"

namespace strata::ui {

EngineBridge::EngineBridge(QObject* parent) : RunBridge(parent) {
  timer_.setInterval(33);
  connect(&timer_, &QTimer::timeout, this, &EngineBridge::drain);
}

EngineBridge::~EngineBridge() {
  // Never leave a training thread behind: stop after the current step.
  if (session_) session_->trainer().request_stop();
  if (thread_.joinable()) thread_.join();
  if (reaper_.joinable()) reaper_.join();
}

void EngineBridge::start(const RunConfig& config, const std::string& run_dir, const std::string& resume_from) {
  if (running_) return;
  finishThread();
  queue_.take();
  {
    std::lock_guard lock(spans_mutex_);
    pending_spans_.clear();
  }
  prepare_failed_ = false;
  prepare_error_.clear();
  session_ = std::make_unique<RunSession>(config, queue_);
  running_ = true;
  paused_ = false;
  RunSession* session = session_.get();
  thread_ = std::thread([this, session, run_dir, resume_from] {
    try {
      // The folder is created only once the config is known to be good, so
      // a bad project leaves nothing behind.
      session->prepare();
      session->trainer().set_span_listener([this](const std::vector<trace::Span>& spans) {
        constexpr size_t kMaxPending = 200000;
        std::lock_guard lock(spans_mutex_);
        if (pending_spans_.size() + spans.size() > kMaxPending) pending_spans_.clear();
        pending_spans_.insert(pending_spans_.end(), spans.begin(), spans.end());
      });
      RunFolderOptions folder;
      folder.dir = run_dir;
      folder.resume_from = resume_from;
      session->open(folder);
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
    session->run();
  });
  timer_.start();
  Q_EMIT runningChanged(true);
}

void EngineBridge::pause() {
  if (!running_ || paused_ || !session_) return;
  session_->trainer().pause();
  paused_ = true;
  Q_EMIT pausedChanged(true);
}

void EngineBridge::resume() {
  if (!running_ || !paused_ || !session_) return;
  session_->trainer().resume();
  paused_ = false;
  Q_EMIT pausedChanged(false);
}

void EngineBridge::stop() {
  if (!running_ || !session_) return;
  session_->trainer().request_stop();  // also releases a pause
}

void EngineBridge::finishThread() {
  // Joining the training thread and freeing the trainer (its replica
  // threads, prefetcher, dataset and model) can take tens of milliseconds:
  // a reaper thread does it so the event loop keeps turning. The finished
  // event was the trainer's last emit, and the run folder flushed it, so
  // nothing on the UI side needs them any more.
  if (reaper_.joinable()) reaper_.join();
  reaper_ = std::thread([thread = std::move(thread_), session = std::move(session_)]() mutable {
    if (thread.joinable()) thread.join();
    session.reset();
  });
}

void EngineBridge::drain() {
  std::vector<trace::Span> spans;
  {
    std::lock_guard lock(spans_mutex_);
    spans.swap(pending_spans_);
  }
  if (!spans.empty()) Q_EMIT this->spans(spans);
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
