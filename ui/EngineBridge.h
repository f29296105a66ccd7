#pragma once
#include <QTimer>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "EventQueue.h"
#include "RunBridge.h"
#include "train/RunConfig.h"

namespace strata {
class RunSession;
}  // namespace strata

namespace strata::ui {

// Runs a training session (RunSession) on a background std::thread and hands its events to the UI
// thread in batches (docs/architecture.md §4): the trainer writes to an EventQueue, a
// ~30 Hz QTimer swaps the queue out and emits one `events` signal per tick,
// so however fast steps arrive the event loop sees at most 30 deliveries a
// second and the training thread never waits for a repaint.
class EngineBridge final : public RunBridge {
  Q_OBJECT
public:
  explicit EngineBridge(QObject* parent = nullptr);
  ~EngineBridge() override;

  // Starts training `config`; run_dir empty = no run folder. Data loading and
  // model building (Trainer::prepare) happen on the training thread too, so
  // a large dataset does not freeze the window; their errors arrive as
  // `prepareFailed`. With a run folder, checkpoints go to its checkpoints/.
  // resume_from (a checkpoint folder): continue that run instead, appending
  // to run_dir's events.
  void start(const RunConfig& config, const std::string& run_dir, const std::string& resume_from = {});
  bool canPause() const override { return running_; }
  void pause() override;
  void resume() override;
  void stop() override;
  bool running() const override { return running_; }
  bool paused() const override { return paused_; }
  void setInterval(int ms) override { timer_.setInterval(ms); }
  // Processes what is queued now, without waiting for the timer (tests).
  void drainNow() { drain(); }
  size_t peakQueue() const { return queue_.peak_size(); }

private:
  void drain();
  void finishThread();

  EventQueue queue_;
  QTimer timer_;
  std::unique_ptr<RunSession> session_;
  std::thread thread_;
  std::thread reaper_;  // joins and frees the previous run off the UI thread
  bool running_ = false;
  bool paused_ = false;
  // Written by the training thread before it emits its last event; read
  // after the queue shows that event, so the queue's lock orders the access.
  std::string prepare_error_;
  bool prepare_failed_ = false;
  // Timeline spans from the training thread, taken by drain(). Bounded: a
  // window that cannot keep up loses the oldest, never the training's time.
  std::mutex spans_mutex_;
  std::vector<trace::Span> pending_spans_;
};

}  // namespace strata::ui
