// strata_ui_bench: what the dashboard costs. Prints JSON (docs/architecture.md §7: a
// benchmark, not a timed test):
//  - training throughput with the dashboard attached vs a headless Trainer
//    on the same project, rounds alternated (goal >= 0.97): the median of
//    the rounds' ratios and the ratio of each side's best round,
//  - the UI thread's CPU time while the dashboard streams, as a share of one
//    core and per step: what the dashboard takes from training directly,
//    and steadier than throughput on a noisy machine,
//  - the longest UI event-loop stall while events stream (goal < 50 ms),
//  - the charts' handling of a step apart from replotting, 1 and 4 replicas
//    (the floor of the UI's cost for a fast run),
//  - replot time after zoom/pan with 1,000,000 points per series over 4
//    replicas plus the reduced loss (goal < 30 ms).
// Each run's throughput is its epochs' after the first (which warms up).
// usage: strata_ui_bench [PROJECT] [--steps N] [--epochs N] [--rounds N] [--points N] [--timeline]
//   --timeline: the step timeline recorded in both and the Timeline tab shown
//   (QT_QPA_PLATFORM=offscreen works)
#include <qcustomplot.h>
#include <QApplication>
#include <QElapsedTimer>
#include <QTabWidget>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "AppPaths.h"
#include "BenchUtil.h"
#include "ChartView.h"
#include "ChartsPanel.h"
#include "ConfigEditor.h"
#include "DatasetPanel.h"
#include "MainWindow.h"
#include "RunController.h"
#include "TimelinePanel.h"
#include "project/ProjectFile.h"
#include "train/Trainer.h"

using namespace strata;
using namespace strata::ui;

namespace {
// The mean throughput of the epochs after the first (the only one's when
// there is one).
double steady_samples_per_sec(const std::vector<double>& epochs) {
  if (epochs.empty()) return 0;
  if (epochs.size() == 1) return epochs.front();
  double sum = 0;
  for (size_t i = 1; i < epochs.size(); ++i) sum += epochs[i];
  return sum / static_cast<double>(epochs.size() - 1);
}

struct EpochRecorder final : EventSink {
  std::vector<double> samples_per_sec;
  void emit(const Event& e) override {
    if (auto* ep = std::get_if<EpochEvent>(&e)) samples_per_sec.push_back(ep->samples_per_sec);
  }
};

double headless(const RunConfig& config) {
  EpochRecorder sink;
  Trainer trainer(config, sink);
  trainer.prepare();
  trainer.run();
  return steady_samples_per_sec(sink.samples_per_sec);
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct Attached {
  double samples_per_sec = 0, max_stall_ms = 0;
  double ui_cpu_ms = 0, wall_ms = 0;  // the UI thread's CPU time over the run's
  size_t steps = 0;
};

Attached attached(const RunConfig& config, bool timeline) {
  MainWindow window;
  window.resize(1600, 1000);
  window.show();
  window.configEditor()->setConfig(config);
  window.charts()->setSmoothing(0.6);
  // The dataset preview loads on a worker thread; let it finish so it does
  // not compete with training for the cores.
  while (window.configEditor()->datasetPanel()->previewBusy()) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
  Attached out;
  // A 5 ms timer measures how long the event loop goes without turning (the
  // goal is 50 ms; a 1 ms one woke the UI thread a thousand times a second,
  // which took a core's share from training that the dashboard does not).
  QElapsedTimer clock;
  clock.start();
  qint64 last = clock.elapsed();
  QTimer probe;
  probe.setInterval(5);
  // The UI thread's CPU is counted from the first step shown (the run's
  // set-up before it is not streaming).
  double cpu_first = -1;
  qint64 wall_first = 0;
  size_t steps_first = 0;
  QObject::connect(&probe, &QTimer::timeout, [&] {
    const qint64 now = clock.elapsed();
    if (cpu_first < 0 && !window.charts()->liveRun().step.empty()) {
      cpu_first = thread_cpu_ms();
      wall_first = now;
      steps_first = window.charts()->liveRun().step.size();
    }
    out.max_stall_ms = std::max(out.max_stall_ms, static_cast<double>(now - last));
    if (now - last > 30 && std::getenv("STRATA_BENCH_VERBOSE"))
      std::fprintf(stderr, "stall %lld ms after %zu steps\n", static_cast<long long>(now - last), window.charts()->liveRun().step.size());
    last = now;
  });
  QEventLoop loop;
  QObject::connect(window.runController(), &RunController::runningChanged, &loop, [&](bool running) {
    if (!running) loop.quit();
  });
  window.startRun();
  // The Timeline tab in view as a run starts (starting shows the log).
  if (timeline) {
    auto* panel = window.findChild<TimelinePanel*>();
    for (auto* tabs : window.findChildren<QTabWidget*>())
      if (panel && tabs->indexOf(panel) >= 0) tabs->setCurrentWidget(panel);
  }
  probe.start();
  last = clock.elapsed();
  loop.exec();
  probe.stop();
  if (cpu_first >= 0) {
    out.ui_cpu_ms = thread_cpu_ms() - cpu_first;
    out.wall_ms = static_cast<double>(clock.elapsed() - wall_first);
    out.steps = window.charts()->liveRun().step.size() - steps_first;
  }
  std::vector<double> epochs;
  for (const auto& e : window.charts()->liveRun().epochs) epochs.push_back(e.samples_per_sec);
  out.samples_per_sec = steady_samples_per_sec(epochs);
  return out;
}

// What the dashboard does per step, apart from replotting: a stream of
// `replicas`-replica steps handed to the charts in deliveries of `per_delivery`
// (the queued replot each asks for is left out). This is the floor of the
// UI's cost for a fast run: the adaptive delivery spreads replots, not steps.
double handling_us_per_step(int replicas, int per_delivery, int64_t steps) {
  MainWindow window;
  window.resize(1600, 1000);
  window.show();
  RunStartedEvent started;
  started.strategy = replicas > 1 ? "mirrored" : "one_device";
  started.replicas = replicas;
  for (int r = 0; r < replicas; ++r) started.devices.push_back("cpu:" + std::to_string(r));
  started.global_batch = 128;
  started.steps_per_epoch = steps;
  started.epochs = 1;
  window.charts()->addEvents({started});
  std::vector<Event> batch;
  double total_ns = 0;
  for (int64_t i = 1; i <= steps; ++i) {
    StepEvent e;
    e.step = e.epoch_step = i;
    e.epoch = 1;
    e.time = static_cast<double>(i) * 1e-4;
    e.loss = 1.0 / static_cast<double>(i);
    e.accuracy = 0.5;
    e.lr = 1e-3;
    e.samples_per_sec = 1e6;
    for (int r = 0; r < replicas; ++r) {
      e.replica_losses.push_back(e.loss * (1 + 0.01 * r));
      e.replica_step_times.push_back(1e-4);
    }
    e.worker_step_times.push_back(1e-4);
    batch.emplace_back(std::move(e));
    if (static_cast<int>(batch.size()) == per_delivery || i == steps) {
      QElapsedTimer t;
      t.start();
      window.charts()->addEvents(batch);
      total_ns += static_cast<double>(t.nsecsElapsed());
      batch.clear();
      QCoreApplication::processEvents();  // the queued replots, outside the timing
    }
  }
  return total_ns / 1e3 / static_cast<double>(steps);
}

struct ReplotFigures {
  double full_ms = 0, zoomed_ms = 0, panned_ms = 0;
  int64_t points = 0;
};

ReplotFigures replot_benchmark(int64_t n) {
  ChartView chart("Loss", "loss");
  chart.resize(1200, 600);
  chart.show();
  std::vector<double> step(static_cast<size_t>(n)), epoch(step.size()), time(step.size()), y(step.size());
  for (int64_t i = 0; i < n; ++i) {
    step[static_cast<size_t>(i)] = static_cast<double>(i + 1);
    epoch[static_cast<size_t>(i)] = static_cast<double>(i) / 1000.0;
    time[static_cast<size_t>(i)] = static_cast<double>(i) * 0.001;
  }
  ReplotFigures f;
  for (int r = 0; r <= 4; ++r) {
    ChartView::Style s;
    s.color = r < 4 ? QColor::fromHsv(r * 80, 200, 200) : Qt::black;
    s.on_top = r == 4;
    const int idx = chart.addSeries(r < 4 ? QString("replica %1").arg(r) : "loss (reduced)", s);
    for (int64_t i = 0; i < n; ++i)
      y[static_cast<size_t>(i)] = 2.0 * std::exp(-static_cast<double>(i) / (0.3 * n)) + 0.2 * std::sin(i * 0.37 + r) * (r < 4);
    chart.appendMany(idx, step, epoch, time, y);
    f.points += n;
  }
  chart.flush();
  QCustomPlot* plot = chart.plot();
  auto timed = [&](auto&& change, int reps) {
    double total = 0;
    for (int i = 0; i < reps; ++i) {
      change(i);
      QElapsedTimer t;
      t.start();
      plot->replot(QCustomPlot::rpImmediateRefresh);
      total += static_cast<double>(t.nsecsElapsed()) / 1e6;
    }
    return total / reps;
  };
  f.full_ms = timed([&](int) { plot->xAxis->setRange(0, static_cast<double>(n)); }, 5);
  const double centre = n / 2.0;
  f.zoomed_ms = timed([&](int i) { plot->xAxis->setRange(centre - n / (10.0 + i), centre + n / (10.0 + i)); }, 10);
  f.panned_ms = timed([&](int i) { plot->xAxis->setRange(centre + i * n / 100.0, centre + i * n / 100.0 + n / 5.0); }, 10);
  return f;
}
}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName("StrataBench");
  QString project = findExampleProject("fashion-mlp.strata");
  int steps = 400, epochs = 3, rounds = 5;
  int64_t points = 1000000;
  bool timeline = false;
  for (int i = 1; i < argc; ++i) {
    const QString a = argv[i];
    if (a == "--steps" && i + 1 < argc) steps = std::atoi(argv[++i]);
    else if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--points" && i + 1 < argc) points = std::atoll(argv[++i]);
    else if (a == "--timeline") timeline = true;
    else project = a;
  }
  try {
    RunConfig config = load_project(project.toStdString());
    config.training.epochs = std::max(1, epochs);
    config.training.max_steps_per_epoch = steps;
    config.trace.enabled = timeline;
    // Alternate the two so drift in machine load hits both alike.
    double best_headless = 0, best_attached = 0, worst_stall = 0, ui_cpu_ms = 0, wall_ms = 0;
    size_t attached_steps = 0;
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) {
      const double h = headless(config);
      const Attached a = attached(config, timeline);
      best_headless = std::max(best_headless, h);
      best_attached = std::max(best_attached, a.samples_per_sec);
      worst_stall = std::max(worst_stall, a.max_stall_ms);
      if (h > 0) ratios.push_back(a.samples_per_sec / h);
      if (std::getenv("STRATA_BENCH_VERBOSE"))
        std::fprintf(stderr, "round %d: headless %.0f, dashboard %.0f samples/s; UI thread %.0f ms CPU in %.0f ms\n", r + 1,
                     h, a.samples_per_sec, a.ui_cpu_ms, a.wall_ms);
      ui_cpu_ms += a.ui_cpu_ms;
      wall_ms += a.wall_ms;
      attached_steps += a.steps;
    }
    const double median = ratios.empty() ? 0 : bench::median(ratios);
    const double handling_1 = handling_us_per_step(1, 50, 20000), handling_4 = handling_us_per_step(4, 50, 20000);
    const ReplotFigures rp = replot_benchmark(points);
    std::printf("{\n  \"project\": \"%s\",\n  \"steps\": %d,\n  \"epochs\": %d,\n  \"rounds\": %d,\n  \"timeline\": %s,\n",
                qPrintable(project), steps, config.training.epochs, rounds, timeline ? "true" : "false");
    std::printf("  \"headless_samples_per_sec\": %.0f,\n  \"dashboard_samples_per_sec\": %.0f,\n", best_headless, best_attached);
    std::printf("  \"throughput_ratio\": %.3f,\n  \"throughput_ratio_median\": %.3f,\n", best_attached / best_headless,
                median);
    std::printf("  \"ui_thread_cpu_share_of_one_core\": %.3f,\n  \"ui_thread_cpu_us_per_step\": %.1f,\n",
                wall_ms > 0 ? ui_cpu_ms / wall_ms : 0.0,
                attached_steps ? ui_cpu_ms * 1e3 / static_cast<double>(attached_steps) : 0.0);
    std::printf("  \"max_event_loop_stall_ms\": %.1f,\n", worst_stall);
    std::printf("  \"step_handling_us_1_replica\": %.2f,\n  \"step_handling_us_4_replicas\": %.2f,\n", handling_1,
                handling_4);
    std::printf("  \"replot_points_total\": %lld,\n  \"replot_full_ms\": %.1f,\n  \"replot_zoomed_ms\": %.1f,\n  \"replot_panned_ms\": %.1f\n}\n",
                static_cast<long long>(rp.points), rp.full_ms, rp.zoomed_ms, rp.panned_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_ui_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
