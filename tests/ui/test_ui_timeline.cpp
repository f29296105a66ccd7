// The Timeline tab without a main window: hovering a span names it, only the
// last steps are kept, each step's slowest replica is marked, the summary's
// shares and hidden-communication line match hand-built spans, and a trace
// file's steps are browsed with the header's boxes and left for Live.
#include <qcustomplot.h>
#include <QApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <random>

#include "TimelinePanel.h"

using namespace strata;
using namespace strata::ui;
using trace::Lane;
using trace::LaneKind;
using trace::Span;
using trace::SpanKind;

class TimelineTest : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void emptyStateAndClear();
  void hoverNamesTheSpan();
  void keepsOnlyTheLastSteps();
  void showsTheNewestBurstOfDeviceLanes();
  void slowestReplicaIsMarked();
  void summarySharesPerKind();
  void hiddenCommunication();
  void traceFileStepsAndLive();
};

namespace {
const Lane kReplica0{LaneKind::Replica, 0};
const Lane kReplica1{LaneKind::Replica, 1};
const Lane kComm0{LaneKind::CommStream, 0};

// Times in milliseconds here, microseconds in the span.
Span span(SpanKind kind, Lane lane, int64_t step, double start_ms, double duration_ms, int64_t bytes = 0) {
  return Span{kind, lane, step, start_ms * 1000, duration_ms * 1000, bytes};
}

// One step of a replica: its frame, then forward and backward filling it.
void add_step(std::vector<Span>& out, Lane lane, int64_t step, double start_ms, double forward_ms, double backward_ms) {
  out.push_back(span(SpanKind::Step, lane, step, start_ms, forward_ms + backward_ms));
  out.push_back(span(SpanKind::Forward, lane, step, start_ms, forward_ms));
  out.push_back(span(SpanKind::Backward, lane, step, start_ms + forward_ms, backward_ms));
}

int column_of(const QTableWidget* table, const QString& header) {
  for (int c = 0; c < table->columnCount(); ++c)
    if (table->horizontalHeaderItem(c) && table->horizontalHeaderItem(c)->text() == header) return c;
  return -1;
}

int row_of(const QTableWidget* table, const QString& header) {
  for (int r = 0; r < table->rowCount(); ++r)
    if (table->verticalHeaderItem(r) && table->verticalHeaderItem(r)->text() == header) return r;
  return -1;
}

QString cell(const QTableWidget* table, const QString& row, const QString& column) {
  const int r = row_of(table, row), c = column_of(table, column);
  if (r < 0 || c < 0 || !table->item(r, c)) return QStringLiteral("<no cell %1/%2>").arg(row, column);
  return table->item(r, c)->text();
}

// The panel in a window with room beside it, shown and laid out, so the
// pointer reaches the plot through Qt's own event path.
struct ShownPanel {
  QWidget window;
  TimelinePanel* panel;
  QLabel* beside;
  ShownPanel() : panel(new TimelinePanel), beside(new QLabel("beside")) {
    auto* layout = new QHBoxLayout(&window);
    layout->addWidget(panel, 1);
    layout->addWidget(beside);
    window.resize(1000, 640);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
  }
  // The plot's pixel at a time (ms from the first shown span) in a lane's row.
  QPoint at(double ms, int row) const {
    QCustomPlot* p = panel->plot();
    return {int(std::lround(p->xAxis->coordToPixel(ms))), int(std::lround(p->yAxis->coordToPixel(row)))};
  }
  void settle() {
    QApplication::processEvents();
    panel->plot()->replot();
    QApplication::processEvents();
  }
};
}  // namespace

void TimelineTest::emptyStateAndClear() {
  TimelinePanel panel;
  QVERIFY(panel.showingEmptyState());
  QCOMPARE(panel.emptyStateText(),
           QString("Turn on tracing in the Training panel (or strata-run --trace) to see where each step's time goes, "
                   "or open a trace file"));
  QCOMPARE(panel.laneCount(), 0);
  QCOMPARE(panel.spansShown(), 0);

  std::vector<Span> spans;
  add_step(spans, kReplica0, 0, 0, 4, 6);
  spans.push_back(span(SpanKind::AllReduce, kComm0, 0, 5, 3, 1 << 20));
  panel.addSpans(spans);
  QVERIFY(!panel.showingEmptyState());
  QCOMPARE(panel.laneCount(), 2);
  QCOMPARE(panel.spansShown(), 4);
  QCOMPARE(panel.summaryTable()->rowCount(), 1);
  QVERIFY(!panel.hiddenCommText().isEmpty());

  panel.clear();
  QVERIFY(panel.showingEmptyState());
  QCOMPARE(panel.laneCount(), 0);
  QCOMPARE(panel.spansShown(), 0);
  QVERIFY(panel.stepsKept().empty());
  QCOMPARE(panel.slowestMarks(), 0);
  QCOMPARE(panel.summaryTable()->rowCount(), 0);
  QCOMPARE(panel.hiddenCommText(), QString());
  for (int i = 0; i < panel.plot()->plottableCount(); ++i)
    QCOMPARE(panel.plot()->plottable(i)->interface1D()->dataCount(), 0);
  QCOMPARE(panel.plot()->legend->itemCount(), 0);
}

void TimelineTest::hoverNamesTheSpan() {
  ShownPanel w;
  TimelinePanel& p = *w.panel;
  std::vector<Span> spans;
  // Starts at 1 ms on the engine's clock: the chart's x = 0 is there.
  add_step(spans, kReplica0, 7, 1, 4, 6);
  spans.push_back(span(SpanKind::AllReduce, kComm0, 7, 8, 2, 4 << 20));
  std::reverse(spans.begin(), spans.end());  // any order
  p.addSpans(spans);
  w.settle();

  QCOMPARE(p.originUs(), 1000.0);
  QCOMPARE(p.laneCount(), 2);
  QCOMPARE(p.laneLabel(0), QString("replica 0"));
  QCOMPARE(p.laneLabel(1), QString("replica 0 comm"));
  QCOMPARE(p.laneRow(kComm0), 1);
  auto ticker = p.plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
  QVERIFY(ticker);
  QCOMPARE(ticker->ticks().value(0), QString("replica 0"));
  QCOMPARE(ticker->ticks().value(1), QString("replica 0 comm"));
  // The time axis spans the shown spans, in ms from the first.
  QCOMPARE(p.plot()->xAxis->range().lower, 0.0);
  QVERIFY(p.plot()->xAxis->range().contains(10.0));
  // The legend lists the kinds present (and no slowest mark: one replica is
  // still the slowest of one, so it is there too).
  QStringList legend;
  for (int i = 0; i < p.plot()->legend->itemCount(); ++i)
    legend << qobject_cast<QCPPlottableLegendItem*>(p.plot()->legend->item(i))->plottable()->name();
  QVERIFY2(legend.contains("forward") && legend.contains("backward") && legend.contains("all reduce") &&
               legend.contains("step"),
           qPrintable(legend.join(", ")));
  QVERIFY(!legend.contains("optimizer"));

  // Forward: 0..4 ms on row 0.
  QTest::mouseMove(p.plot(), w.at(2, 0));
  QTRY_VERIFY2(p.hoverText().startsWith("forward — replica 0"), qPrintable(p.hoverText()));
  QVERIFY2(p.hoverText().contains("step 7") && p.hoverText().contains("4.000 ms"), qPrintable(p.hoverText()));
  QVERIFY(!p.hoverText().contains("B"));  // no bytes line for compute
  QVERIFY(p.hoveredSpan() && p.hoveredSpan()->kind == SpanKind::Forward);

  // Backward: 4..10 ms.
  QTest::mouseMove(p.plot(), w.at(7.5, 0));
  QTRY_VERIFY2(p.hoverText().startsWith("backward — replica 0"), qPrintable(p.hoverText()));
  QVERIFY2(p.hoverText().contains("6.000 ms"), qPrintable(p.hoverText()));

  // The all-reduce on the comm stream: 7..9 ms, 4 MiB.
  QTest::mouseMove(p.plot(), w.at(8, 1));
  QTRY_VERIFY2(p.hoverText().startsWith("all reduce — replica 0 comm"), qPrintable(p.hoverText()));
  QVERIFY2(p.hoverText().contains("2.000 ms") && p.hoverText().contains("4.0 MiB"), qPrintable(p.hoverText()));

  // The step's frame shows above the narrower work inside it.
  const double frame_y = p.plot()->yAxis->coordToPixel(-0.35);
  QTest::mouseMove(p.plot(), QPoint(w.at(2, 0).x(), int(std::lround(frame_y))));
  QTRY_VERIFY2(p.hoverText().startsWith("step — replica 0"), qPrintable(p.hoverText()));
  QVERIFY2(p.hoverText().contains("10.000 ms"), qPrintable(p.hoverText()));

  // Nothing on the comm stream at 3 ms.
  QTest::mouseMove(p.plot(), w.at(3, 1));
  QTRY_VERIFY2(p.hoverText().isEmpty(), qPrintable(p.hoverText()));
  QVERIFY(!p.hoveredSpan());
}

void TimelineTest::keepsOnlyTheLastSteps() {
  TimelinePanel p;
  QCOMPARE(p.stepsShown(), 20);
  p.setStepsShown(20);
  std::vector<Span> all;
  for (int step = 0; step < 30; ++step) {
    add_step(all, kReplica0, step, step * 10.0, 4, 5);
    add_step(all, kReplica1, step, step * 10.0, 4, 6);
  }
  // Live: arriving shuffled, in batches of 7.
  std::mt19937 rng(19);
  std::shuffle(all.begin(), all.end(), rng);
  for (size_t i = 0; i < all.size(); i += 7)
    p.addSpans(std::vector<Span>(all.begin() + static_cast<std::ptrdiff_t>(i),
                                 all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), i + 7))));
  std::vector<int64_t> expected;
  for (int64_t s = 10; s < 30; ++s) expected.push_back(s);
  QCOMPARE(p.stepsKept(), expected);
  QCOMPARE(p.spansShown(), 20 * 2 * 3);
  QCOMPARE(p.originUs(), 100'000.0);  // step 10's start
  QCOMPARE(p.slowestMarks(), 20);

  // A late span of a dropped step stays dropped.
  p.addSpans({span(SpanKind::Optimizer, kReplica0, 3, 30, 1)});
  QCOMPARE(p.stepsKept(), expected);
  QCOMPARE(p.spansShown(), 120);
  // A new step pushes the oldest out.
  std::vector<Span> next;
  add_step(next, kReplica0, 30, 300, 4, 5);
  p.addSpans(next);
  QCOMPARE(p.stepsKept().front(), int64_t{11});
  QCOMPARE(p.stepsKept().back(), int64_t{30});
  QCOMPARE(p.spansShown(), 19 * 6 + 3);

  // A span with no finite time is skipped, as in trace files.
  p.addSpans({span(SpanKind::Optimizer, kReplica0, 30, std::nan(""), 1)});
  QCOMPARE(p.spansShown(), 19 * 6 + 3);

  p.setStepsShown(5);
  QCOMPARE(p.stepsKept(), (std::vector<int64_t>{26, 27, 28, 29, 30}));
  QCOMPARE(p.spansShown(), 4 * 6 + 3);
  QCOMPARE(p.originUs(), 260'000.0);
  // The time axis follows: from step 26's start to step 30's end (309 ms), 49 ms.
  QCOMPARE(p.plot()->xAxis->range().lower, 0.0);
  QVERIFY(p.plot()->xAxis->range().contains(49.0));
  QVERIFY(p.plot()->xAxis->range().upper < 51);
}

// Sampled device lanes come in bursts of steps: the live view draws the
// newest burst whole, not the newer steps without device lanes, nor the
// tail of the burst before beside the start of a new one.
void TimelineTest::showsTheNewestBurstOfDeviceLanes() {
  TimelinePanel p;
  const Lane device0{LaneKind::Device, 0};
  auto steps = [&](int64_t from, int64_t to, bool marked) {
    std::vector<Span> out;
    for (int64_t step = from; step < to; ++step) {
      add_step(out, kReplica0, step, step * 10.0, 4, 5);
      if (marked) add_step(out, device0, step, step * 10.0 + 1, 4, 5);
    }
    return out;
  };
  auto range = [](int64_t from, int64_t to) {
    std::vector<int64_t> v;
    for (int64_t s = from; s < to; ++s) v.push_back(s);
    return v;
  };
  std::vector<Span> batch = steps(0, 40, false), burst = steps(40, 60, true), after = steps(60, 100, false);
  batch.insert(batch.end(), burst.begin(), burst.end());
  batch.insert(batch.end(), after.begin(), after.end());
  std::mt19937 rng(5);
  std::shuffle(batch.begin(), batch.end(), rng);
  p.addSpans(batch);
  QCOMPARE(p.stepsKept(), range(40, 60));
  QCOMPARE(p.spansShown(), 20 * 6);
  QCOMPARE(p.originUs(), 400'000.0);
  QCOMPARE(p.laneCount(), 2);

  // A new burst's first steps replace the old one.
  p.addSpans(steps(100, 105, true));
  QCOMPARE(p.stepsKept(), range(100, 105));
  p.addSpans(steps(105, 125, true));
  QCOMPARE(p.stepsKept(), range(105, 125));
  // A step whose device spans are still to come is kept, not drawn, until they are.
  std::vector<Span> host = steps(125, 126, false), device;
  add_step(device, device0, 125, 1251, 4, 5);
  p.addSpans(host);
  QCOMPARE(p.stepsKept(), range(105, 125));
  p.addSpans(device);
  QCOMPARE(p.stepsKept(), range(106, 126));
  QCOMPARE(p.spansShown(), 20 * 6);

  // A new run without device lanes shows its steps again.
  p.clear();
  p.addSpans(steps(0, 30, false));
  QCOMPARE(p.stepsKept(), range(10, 30));
}

void TimelineTest::slowestReplicaIsMarked() {
  TimelinePanel p;
  std::vector<Span> spans;
  for (int step = 0; step < 4; ++step) {
    add_step(spans, kReplica0, step, step * 20.0, 4, 6);  // 10 ms
    add_step(spans, kReplica1, step, step * 20.0, 5, 9);  // 14 ms: the straggler
  }
  add_step(spans, kReplica0, 4, 80, 9, 9);  // step 4: replica 0 is the slow one
  add_step(spans, kReplica1, 4, 80, 4, 6);
  p.addSpans(spans);
  for (int64_t step = 0; step < 4; ++step) QCOMPARE(p.slowestLaneOfStep(step), QString("replica 1"));
  QCOMPARE(p.slowestLaneOfStep(4), QString("replica 0"));
  QCOMPARE(p.slowestLaneOfStep(5), QString());
  QCOMPARE(p.slowestMarks(), 5);

  // The outline rings the slow lane's step frame: find the marking plottable
  // (the one without a brush) and check where its marks lie.
  QCPFinancial* outline = nullptr;
  for (int i = 0; i < p.plot()->plottableCount(); ++i)
    if (auto* f = qobject_cast<QCPFinancial*>(p.plot()->plottable(i)); f && f->brush().style() == Qt::NoBrush) outline = f;
  QVERIFY(outline);
  QCOMPARE(outline->data()->size(), 5);
  int on_replica1 = 0;
  for (auto it = outline->data()->constBegin(); it != outline->data()->constEnd(); ++it) {
    if (it->key == p.laneRow(kReplica1)) {
      ++on_replica1;
      QCOMPARE(it->close - it->open, 14.0);  // replica 1's whole step
    } else {
      QCOMPARE(it->key, double(p.laneRow(kReplica0)));
      QCOMPARE(it->open, 80.0);
      QCOMPARE(it->close, 98.0);
    }
  }
  QCOMPARE(on_replica1, 4);
}

void TimelineTest::summarySharesPerKind() {
  TimelinePanel p;
  std::vector<Span> spans;
  add_step(spans, kReplica0, 0, 0, 4, 6);   // forward 40%, backward 60%
  add_step(spans, kReplica0, 1, 10, 4, 6);  // the same again
  add_step(spans, kReplica1, 0, 0, 2, 6);   // replica 1 over both steps: (2+4)/(8+12) = 30% forward
  add_step(spans, kReplica1, 1, 10, 4, 8);
  p.addSpans(spans);
  const QTableWidget* t = p.summaryTable();
  QCOMPARE(t->rowCount(), 2);
  // Only the kinds that occur, after the mean step time.
  QCOMPARE(t->columnCount(), 3);
  QCOMPARE(t->horizontalHeaderItem(0)->text(), QString("mean step"));
  QCOMPARE(cell(t, "replica 0", "forward"), QString("40.0%"));
  QCOMPARE(cell(t, "replica 0", "backward"), QString("60.0%"));
  QCOMPARE(cell(t, "replica 0", "mean step"), QString("10.000 ms"));
  QCOMPARE(cell(t, "replica 1", "forward"), QString("30.0%"));
  QCOMPARE(cell(t, "replica 1", "backward"), QString("70.0%"));
  QCOMPARE(cell(t, "replica 1", "mean step"), QString("10.000 ms"));
  QCOMPARE(p.hiddenCommText(), QString());  // no communication: no line

  // A data wait appears as its own column once it occurs.
  p.addSpans({span(SpanKind::DataWait, kReplica0, 1, 10, 1)});
  QCOMPARE(t->columnCount(), 4);
  QCOMPARE(cell(t, "replica 0", "data wait"), QString("5.0%"));
  QCOMPARE(cell(t, "replica 1", "data wait"), QString("0.0%"));
}

void TimelineTest::hiddenCommunication() {
  TimelinePanel p;
  std::vector<Span> spans;
  // Backward until 10 ms; the all-reduce on the comm stream runs 8-12 ms:
  // 2 of its 4 ms behind compute.
  spans.push_back(span(SpanKind::Step, kReplica0, 0, 0, 12));
  spans.push_back(span(SpanKind::Forward, kReplica0, 0, 0, 4));
  spans.push_back(span(SpanKind::Backward, kReplica0, 0, 4, 6));
  spans.push_back(span(SpanKind::CollectiveWait, kReplica0, 0, 10, 2));
  spans.push_back(span(SpanKind::AllReduce, kComm0, 0, 8, 4, 8 << 20));
  p.addSpans(spans);
  QCOMPARE(p.hiddenCommText(), QString("communication hidden behind compute: 50.0% of 4.0 ms"));
  // The summary has the replica, not its comm stream.
  const QTableWidget* t = p.summaryTable();
  QCOMPARE(t->rowCount(), 1);
  QCOMPARE(column_of(t, "all reduce"), -1);
  QCOMPARE(cell(t, "replica 0", "collective wait"), QString("16.7%"));
  QCOMPARE(cell(t, "replica 0", "forward"), QString("33.3%"));

  // A second step whose all-reduce (2 ms) runs after compute: 2 of 6 ms hidden.
  std::vector<Span> more;
  more.push_back(span(SpanKind::Step, kReplica0, 1, 20, 10));
  more.push_back(span(SpanKind::Forward, kReplica0, 1, 20, 3));
  more.push_back(span(SpanKind::Backward, kReplica0, 1, 23, 5));
  more.push_back(span(SpanKind::AllReduce, kComm0, 1, 28, 2, 8 << 20));
  p.addSpans(more);
  QCOMPARE(p.hiddenCommText(), QString("communication hidden behind compute: 33.3% of 6.0 ms"));

  // Communication too short for tenths of a millisecond reads in microseconds, not "0.0 ms".
  TimelinePanel small;
  small.addSpans({span(SpanKind::Step, kReplica0, 0, 0, 1), span(SpanKind::Backward, kReplica0, 0, 0, 0.5),
                  span(SpanKind::AllReduce, kComm0, 0, 0.49, 0.04, 4096)});
  QCOMPARE(small.hiddenCommText(), QString("communication hidden behind compute: 25.0% of 40 µs"));
}

// A file of two ranks, 30 steps: the last 20 drawn, each rank's lanes apart;
// the header's boxes (typed into, as a user does) move and widen the window;
// live spans arriving meanwhile wait for Live, and a new run (clear) goes live.
void TimelineTest::traceFileStepsAndLive() {
  ShownPanel w;
  TimelinePanel& p = *w.panel;
  trace::TraceContents file;
  file.path = "/runs/merged.json";
  file.run_name = "mw";
  file.ranks = {{0, "node-a"}, {1, "node-b"}};
  const Lane r0{LaneKind::Replica, 0, 0}, r1{LaneKind::Replica, 0, 1};
  for (int step = 1; step <= 30; ++step) {
    add_step(file.spans, r0, step, step * 20.0, 4, 6);
    add_step(file.spans, r1, step, step * 20.0 + 1, 5, 7);  // rank 1 the slower
  }
  file.spans.push_back(span(SpanKind::Evaluation, Lane{LaneKind::Run, 0, 0}, -1, 30 * 20.0 + 15, 3));
  p.addSpans({span(SpanKind::Forward, kReplica0, 1, 0, 1)});  // a live span before
  p.showTrace(file);
  w.settle();

  QVERIFY(p.showingFile());
  QCOMPARE(p.shownFile(), QString("/runs/merged.json"));
  QCOMPARE(p.fileStepCount(), 30);
  QVERIFY2(p.sourceText().startsWith("merged.json: run “mw” · ranks 0, 1 · node-a, node-b · 30 steps"),
           qPrintable(p.sourceText()));
  auto* live = p.findChild<QPushButton*>("liveTimelineButton");
  auto* first = p.findChild<QSpinBox*>("timelineFirstStep");
  auto* count = p.findChild<QSpinBox*>("timelineStepsShown");
  QVERIFY(live && first && count);
  QVERIFY(live->isVisible() && first->isVisible());
  std::vector<int64_t> last20;
  for (int64_t s = 11; s <= 30; ++s) last20.push_back(s);
  QCOMPARE(p.stepsKept(), last20);
  QCOMPARE(first->value(), 11);
  QCOMPARE(p.laneCount(), 3);
  QCOMPARE(p.laneLabel(0), QString("rank 0 · replica 0"));
  QCOMPARE(p.laneLabel(1), QString("rank 0 · run"));  // the evaluation after step 30
  QCOMPARE(p.laneLabel(2), QString("rank 1 · replica 0"));
  QCOMPARE(p.slowestLaneOfStep(30), QString("rank 1 · replica 0"));
  QCOMPARE(p.summaryTable()->rowCount(), 2);
  QCOMPARE(cell(p.summaryTable(), "rank 1 · replica 0", "mean step"), QString("12.000 ms"));

  // From step 3, typed into the box: steps 3..22, no evaluation lane.
  first->setFocus();
  first->selectAll();
  QTest::keyClicks(first, "3");
  QTest::keyClick(first, Qt::Key_Enter);
  QCOMPARE(p.stepsKept().front(), int64_t{3});
  QCOMPARE(p.stepsKept().back(), int64_t{22});
  QCOMPARE(p.laneCount(), 2);
  QCOMPARE(p.originUs(), 60'000.0);
  // All 30 steps: the step count box.
  count->setFocus();
  count->selectAll();
  QTest::keyClicks(count, "100");
  QTest::keyClick(count, Qt::Key_Enter);
  QCOMPARE(p.stepsShown(), 100);
  QCOMPARE(int(p.stepsKept().size()), 28);  // from step 3
  first->setFocus();
  first->selectAll();
  QTest::keyClicks(first, "1");
  QTest::keyClick(first, Qt::Key_Enter);
  QCOMPARE(int(p.stepsKept().size()), 30);
  QCOMPARE(p.laneCount(), 3);
  // The time axis holds them all: step 1's start to the evaluation's end.
  QVERIFY(p.plot()->xAxis->range().contains(30 * 20.0 + 18 - 20));

  // Spans of a run arriving meanwhile do not disturb the file.
  p.addSpans({span(SpanKind::Backward, kReplica0, 1, 1, 2)});
  QCOMPARE(int(p.stepsKept().size()), 30);
  QTest::mouseClick(live, Qt::LeftButton);
  QVERIFY(!p.showingFile());
  QVERIFY(!live->isVisible() && !first->isVisible());
  QCOMPARE(p.stepsKept(), (std::vector<int64_t>{1}));
  QCOMPARE(p.spansShown(), 2);
  QCOMPARE(p.laneLabel(0), QString("replica 0"));

  // A new run (clear) leaves a file for the live view.
  p.showTrace(file);
  QVERIFY(p.showingFile());
  p.clear();
  QVERIFY(!p.showingFile());
  QVERIFY(p.showingEmptyState());
}

QTEST_MAIN(TimelineTest)
#include "test_ui_timeline.moc"
