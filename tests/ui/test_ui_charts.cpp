// The dashboard's chart layer without a main window: smoothing against a
// closed-form reference, the chart widget's series, axes, readout, legend
// toggling and exports, run history parsing, and a parameter-server run's
// charts fed from a run folder (overlay and resume prelude).
#include <qcustomplot.h>
#include <QApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QRegularExpression>
#include <QSet>
#include <QSlider>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <fstream>

#include "ChartView.h"
#include "ChartsPanel.h"
#include "ParameterServerCharts.h"
#include "RunHistory.h"
#include "SettingsDiff.h"
#include <map>
#include "RunSeries.h"
#include "Smoothing.h"
#include "train/EventJson.h"

using namespace strata;
using namespace strata::ui;

class ChartsTest : public QObject {
  Q_OBJECT
private Q_SLOTS:
  void smoothingMatchesReference();
  void smoothingKeepsNaNVisible();
  void chartAppendsAndSwitchesAxis();
  void chartLogScaleAndReadout();
  void legendClickHidesSeries();
  void readoutFollowsThePointer();
  void legendClickWithCrosshairUnderPointer();
  void axesFitTheData();
  void ticksNeverOverlap();
  void emptyChartFillsItsWidget();
  void narrowChartsWrapTheirLegend();
  void tickLabelsAreRound();
  void markerLabelsStayInsideThePlot();
  void seriesStylesNeverMislead();
  void perStepAccuracyAndReplicaTimes();
  void chartExports();
  void runSeriesFromEvents();
  void runHistoryListsRuns();
  void runHistorySaysWhyARunFailed();
  void settingsDiffMarksDifferences();
  void parameterServerRunFromFolder();
  void runSummaryCountsInEnglish();
};

// TensorBoard's debiased EMA in closed form: s_n = sum_i (1-w) w^(n-i) x_i / (1 - w^n).
static double reference(const std::vector<double>& x, size_t n, double w) {
  double num = 0;
  for (size_t i = 0; i <= n; ++i) num += (1 - w) * std::pow(w, static_cast<double>(n - i)) * x[i];
  return num / (1 - std::pow(w, static_cast<double>(n + 1)));
}

void ChartsTest::smoothingMatchesReference() {
  std::vector<double> x;
  for (int i = 0; i < 200; ++i) x.push_back(2.0 * std::exp(-i / 50.0) + 0.3 * std::sin(i * 1.7));
  for (double w : {0.0, 0.3, 0.6, 0.9, 0.99}) {
    const auto s = smooth_ema(x, w);
    QCOMPARE(s.size(), x.size());
    for (size_t n = 0; n < x.size(); ++n) QVERIFY2(std::abs(s[n] - reference(x, n, w)) < 1e-9, qPrintable(QString("w=%1 n=%2").arg(w).arg(n)));
  }
  // Debiasing: the first smoothed value is the first value, not (1-w) x0.
  QCOMPARE(smooth_ema(std::vector<double>{5.0, 5.0}, 0.9)[0], 5.0);
  // Hand-computed: [1, 2, 3] at 0.5 -> 1, 5/3, 17/7.
  const auto h = smooth_ema(std::vector<double>{1, 2, 3}, 0.5);
  QVERIFY(std::abs(h[1] - 5.0 / 3) < 1e-12 && std::abs(h[2] - 17.0 / 7) < 1e-12);
}

void ChartsTest::smoothingKeepsNaNVisible() {
  const auto s = smooth_ema(std::vector<double>{1, 2, std::nan(""), 3}, 0.5);
  QVERIFY(std::isnan(s[2]));
  QVERIFY(std::abs(s[3] - 17.0 / 7) < 1e-12);  // the NaN did not enter the average
}

void ChartsTest::chartAppendsAndSwitchesAxis() {
  ChartView chart("Loss", "loss");
  chart.resize(600, 400);
  const int a = chart.addSeries("replica 0", {});
  const int b = chart.addSeries("loss (reduced)", {});
  for (int i = 1; i <= 100; ++i) {
    chart.append(a, XPoint{double(i), i / 50.0, i * 0.1}, 1.0 / i);
    chart.append(b, XPoint{double(i), i / 50.0, i * 0.1}, 2.0 / i);
  }
  QCOMPARE(chart.pointCount(a), 0);  // nothing reaches the plot before flush
  chart.flush();
  QCOMPARE(chart.pointCount(a), 100);
  QCOMPARE(chart.seriesIndex("loss (reduced)"), b);
  QVERIFY(std::abs(chart.plot()->xAxis->range().upper - 100) < 1);
  chart.setXMode(XAxisMode::Time);
  QCOMPARE(chart.pointCount(a), 100);
  QVERIFY(std::abs(chart.plot()->xAxis->range().upper - 10) < 0.2);
  chart.setXMode(XAxisMode::Epoch);
  QVERIFY(std::abs(chart.plot()->xAxis->range().upper - 2) < 0.1);
  // Smoothing adds a smoothed line per series; the raw one stays.
  chart.setSmoothing(0.6);
  QCOMPARE(chart.pointCount(a), 100);
  QCOMPARE(chart.plot()->graphCount(), 4);
  chart.removeSeries("replica");
  QCOMPARE(chart.seriesCount(), 1);
  QCOMPARE(chart.seriesName(0), QString("loss (reduced)"));
}

void ChartsTest::chartLogScaleAndReadout() {
  ChartView chart("Loss", "loss");
  chart.resize(600, 400);
  const int a = chart.addSeries("replica 0", {});
  const int b = chart.addSeries("replica 1", {});
  for (int i = 1; i <= 10; ++i) {
    chart.append(a, XPoint{double(i), 0, 0}, i * 10.0);
    chart.append(b, XPoint{double(i), 0, 0}, i * 100.0);
  }
  chart.flush();
  chart.setLogScale(true);
  QCOMPARE(chart.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
  const QString text = chart.readoutAt(4.2);
  QVERIFY2(text.contains("replica 0: 40") && text.contains("replica 1: 400"), qPrintable(text));
  chart.setLogScale(false);
  QCOMPARE(chart.plot()->yAxis->scaleType(), QCPAxis::stLinear);
  // Zooming stops following the data; reset follows again.
  chart.plot()->xAxis->setRange(2, 3);
  QWheelEvent wheel(QPointF(300, 200), chart.plot()->mapToGlobal(QPoint(300, 200)), QPoint(), QPoint(0, 120), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(chart.plot(), &wheel);
  QVERIFY(!chart.followingData());
  chart.resetView();
  QVERIFY(chart.followingData());
  QVERIFY(std::abs(chart.plot()->xAxis->range().upper - 10) < 0.5);
  chart.addMarker(XPoint{5, 0, 0}, "loss NaN at step 5");
  QCOMPARE(chart.markerCount(), 1);
}

void ChartsTest::legendClickHidesSeries() {
  ChartView chart("Loss", "loss");
  chart.resize(600, 400);
  chart.show();
  const int a = chart.addSeries("replica 0", {});
  chart.append(a, XPoint{1, 0, 0}, 1);
  chart.append(a, XPoint{2, 0, 0}, 2);
  chart.flush();
  chart.plot()->replot();
  auto* item = chart.plot()->legend->item(0);
  QVERIFY(item);
  const QPoint centre = item->rect().center();
  QTest::mouseClick(chart.plot(), Qt::LeftButton, Qt::NoModifier, centre);
  QVERIFY(!chart.seriesVisible(a));
  QVERIFY(!chart.readoutAt(1).contains("replica 0"));
  chart.plot()->replot();  // the legend item was rebuilt; lay it out
  QTest::qWait(QApplication::doubleClickInterval() + 50);  // two clicks, not a double-click
  QTest::mouseClick(chart.plot(), Qt::LeftButton, Qt::NoModifier, centre);
  QVERIFY(chart.seriesVisible(a));
}

namespace {
// A chart in a window with room beside it, shown and laid out, so the
// pointer can enter and leave it through Qt's own enter/leave handling.
struct HoverWindow {
  QWidget window;
  ChartView* chart;
  QLabel* beside;
  HoverWindow() : chart(new ChartView("Loss", "loss")), beside(new QLabel("beside")) {
    auto* layout = new QHBoxLayout(&window);
    layout->addWidget(chart, 1);
    layout->addWidget(beside);
    window.resize(800, 420);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
  }
  // The pixel of the plot area at data x, halfway up.
  QPoint at(double x) const {
    QCPAxisRect* r = chart->plot()->axisRect();
    return {int(std::lround(chart->plot()->xAxis->coordToPixel(x))), r->rect().center().y()};
  }
  void settle() {
    chart->plot()->replot();
    QApplication::processEvents();
  }
};
}  // namespace

// The hover readout: appears over the plot area, follows the x axis when it
// changes under a resting pointer, never reads a series past its end,
// disappears when the pointer leaves and when the chart is cleared, and is
// never in an exported image.
void ChartsTest::readoutFollowsThePointer() {
  HoverWindow w;
  ChartView& c = *w.chart;
  const int live = c.addSeries("loss (reduced)", {});
  const int old = c.addSeries("run 1: loss", {});
  for (int i = 1; i <= 100; ++i) c.append(live, XPoint{double(i), 0, 0}, 1000.0 + i);
  for (int i = 1; i <= 50; ++i) c.append(old, XPoint{double(i), 0, 0}, 2000.0 + i);
  c.flush();
  w.settle();

  QTest::mouseMove(c.plot(), w.at(30));
  QTRY_VERIFY(c.readoutVisible());
  QTRY_VERIFY2(c.readoutText().contains("loss (reduced): 1030") && c.readoutText().contains("run 1: loss: 2030"),
           qPrintable(c.readoutText()));
  // Past the overlaid run's end only the live run reads out.
  QTest::mouseMove(c.plot(), w.at(90));
  // QTRY: on a real X server the pointer's motion arrives a little later.
  QTRY_VERIFY2(c.readoutText().contains("loss (reduced): 1090") && !c.readoutText().contains("run 1"),
           qPrintable(c.readoutText()));

  // More data rescales x under the resting pointer: the readout says what
  // is under it now, not what was.
  const QString before = c.readoutText();
  for (int i = 101; i <= 300; ++i) c.append(live, XPoint{double(i), 0, 0}, 1000.0 + i);
  c.flush();
  w.settle();
  QVERIFY2(c.readoutText() != before, qPrintable(c.readoutText()));
  QVERIFY2(c.readoutText().contains("loss (reduced): " + QString::number(1000 + 270)), qPrintable(c.readoutText()));

  // Never in an exported image: the export with the pointer over the plot
  // equals the one without.
  QTemporaryDir dir;
  QVERIFY(c.exportPng(dir.filePath("hover.png")));
  QVERIFY(c.readoutVisible());  // still showing on screen
  QTest::mouseMove(w.beside, w.beside->rect().center());
  QTRY_VERIFY(!c.readoutVisible());  // left the chart: gone
  QVERIFY(c.exportPng(dir.filePath("plain.png")));
  QCOMPARE(QImage(dir.filePath("hover.png")), QImage(dir.filePath("plain.png")));

  // Back over the plot, then the chart is cleared (New/Open): gone, and the
  // axes no longer show the old run's range.
  QTest::mouseMove(c.plot(), w.at(100));
  QTRY_VERIFY(c.readoutVisible());
  c.clear();
  QVERIFY(!c.readoutVisible());
  QCOMPARE(c.plot()->xAxis->range(), QCPRange(0, 1));
  QCOMPARE(c.plot()->yAxis->range(), QCPRange(0, 1));
}

// The crosshair follows the pointer to the legend; a click there must reach
// the legend entry (it once hit the crosshair line). The pointer moves over
// the data first, as a person's does.
void ChartsTest::legendClickWithCrosshairUnderPointer() {
  HoverWindow w;
  ChartView& c = *w.chart;
  const int a = c.addSeries("replica 0", {});
  const int b = c.addSeries("replica 1", {});
  for (int i = 1; i <= 20; ++i) {
    c.append(a, XPoint{double(i), 0, 0}, 1.0 / i);
    c.append(b, XPoint{double(i), 0, 0}, 2.0 / i);
  }
  c.flush();
  w.settle();
  // The legend never covers the data: it sits outside the plot area.
  QVERIFY(!c.plot()->legend->outerRect().intersects(c.plot()->axisRect()->rect()));
  for (int series : {a, b}) {
    const QPoint entry = c.plot()->legend->item(series)->rect().center();
    QTest::mouseMove(c.plot(), w.at(10));
    QTRY_VERIFY(c.readoutVisible());
    QTest::mouseMove(c.plot(), QPoint(entry.x(), w.at(10).y()));  // crosshair right below the entry
    QTest::mouseMove(c.plot(), entry);
    QTest::mouseClick(c.plot(), Qt::LeftButton, Qt::NoModifier, entry);
    QVERIFY2(!c.seriesVisible(series), qPrintable(QString("series %1").arg(series)));
    w.settle();
    QTest::qWait(QApplication::doubleClickInterval() + 50);  // two clicks, not a double-click
    QTest::mouseMove(c.plot(), w.at(12));
    QTest::mouseMove(c.plot(), c.plot()->legend->item(series)->rect().center());
    QTest::mouseClick(c.plot(), Qt::LeftButton, Qt::NoModifier, c.plot()->legend->item(series)->rect().center());
    QVERIFY(c.seriesVisible(series));
    QTest::qWait(QApplication::doubleClickInterval() + 50);
  }
}

// Axes that fit what there is: nothing yet, a single per-epoch point, a
// divergence marker past the last finite value.
void ChartsTest::axesFitTheData() {
  ChartView c("Accuracy", "accuracy");
  c.resize(600, 400);
  const int acc = c.addSeries("val_accuracy", {Qt::black, 1.5, Qt::SolidLine, true, false, false});
  c.flush();
  QCOMPARE(c.plot()->yAxis->range(), QCPRange(0, 1));  // no +-1e13 before the first epoch ends
  QCOMPARE(c.plot()->xAxis->range(), QCPRange(0, 1));
  c.append(acc, XPoint{938, 1, 10}, 0.85);
  c.flush();
  // One epoch of 938 steps: the axis spans the run from its start, not 936-940.
  QCOMPARE(c.plot()->xAxis->range().lower, 0.0);
  QCOMPARE(c.plot()->xAxis->range().upper, 938.0);
  QVERIFY(c.plot()->yAxis->range().contains(0.85) && c.plot()->yAxis->range().size() < 0.2);

  ChartView loss("Loss", "loss");
  loss.resize(600, 400);
  const int l = loss.addSeries("loss (reduced)", {});
  for (int i = 1; i <= 100; ++i) loss.append(l, XPoint{double(i), 0, 0}, 1.0 / i);
  for (int i = 101; i <= 120; ++i) loss.append(l, XPoint{double(i), 0, 0}, std::nan(""));
  loss.addMarker(XPoint{120, 0, 0}, "loss NaN at step 120");
  loss.flush();
  QVERIFY2(loss.plot()->xAxis->range().contains(120), qPrintable(QString::number(loss.plot()->xAxis->range().upper)));
  QVERIFY(loss.plot()->yAxis->range().upper < 1.2);  // NaNs are gaps, not range
}

// However small the chart and large the numbers, neighbouring tick labels
// keep a gap between them.
void ChartsTest::ticksNeverOverlap() {
  for (const QSize size : {QSize(240, 160), QSize(400, 260), QSize(900, 500)}) {
    for (const double last : {50.0, 9380.0, 1.2e6}) {
      ChartView c("Loss", "loss");
      c.resize(size);
      c.show();
      QVERIFY(QTest::qWaitForWindowExposed(&c));
      const int s = c.addSeries("loss (reduced)", {});
      for (int i = 0; i <= 100; ++i) c.append(s, XPoint{last * i / 100, 0, 0}, 1e-4 * (1 + i));
      c.flush();
      c.plot()->replot();
      QCPAxis* x = c.plot()->xAxis;
      const QFontMetrics fm(x->tickLabelFont());
      const QVector<double> ticks = x->tickVector();
      const QVector<QString> labels = x->tickVectorLabels();
      QVERIFY(ticks.size() >= 2);
      for (qsizetype i = 1; i < ticks.size(); ++i) {
        const double gap = x->coordToPixel(ticks[i]) - x->coordToPixel(ticks[i - 1]);
        const double need = (fm.horizontalAdvance(labels[i]) + fm.horizontalAdvance(labels[i - 1])) / 2.0 + 4;
        QVERIFY2(gap >= need, qPrintable(QString("%1x%2, up to %3: %4 and %5 are %6 px apart")
                                             .arg(size.width()).arg(size.height()).arg(last)
                                             .arg(labels[i - 1], labels[i]).arg(gap)));
      }
      QCPAxis* y = c.plot()->yAxis;
      const QVector<double> yt = y->tickVector();
      for (qsizetype i = 1; i < yt.size(); ++i)
        QVERIFY(std::abs(y->coordToPixel(yt[i]) - y->coordToPixel(yt[i - 1])) >= fm.height() + 2);
    }
  }
}

// A chart without series yet (the dashboard before the first run) draws
// its plot across the widget: the legend's row, empty, once held the
// layout's column to the legend's own width and the plot to its minimum.
void ChartsTest::emptyChartFillsItsWidget() {
  ChartView c("Loss", "loss");
  c.resize(900, 300);
  c.show();
  QVERIFY(QTest::qWaitForWindowExposed(&c));
  c.plot()->replot();
  const int plotted = c.plot()->axisRect()->rect().width();
  QVERIFY2(plotted > c.width() * 3 / 4, qPrintable(QString("the plot is %1 px of %2").arg(plotted).arg(c.width())));
  // The ticks are spaced for that width, not for the squeezed one (epochs:
  // a step axis has whole steps only, here 0 and 1).
  c.setXMode(XAxisMode::Epoch);
  c.plot()->replot();
  QVERIFY(c.plot()->xAxis->tickVector().size() >= 4);
}

// Tick values are 1, 2, 2.5 or 5 times a power of ten, with the labels a
// person writes: "0.95", "1.00", "1.05" for a flat accuracy of 1, "400k",
// "1.2M" for throughput; a step axis has whole steps.
void ChartsTest::tickLabelsAreRound() {
  const auto labels_of = [](QCPAxis* axis) {
    QStringList l;
    for (const QString& s : axis->tickVectorLabels()) l << s;
    return l.join(' ');
  };
  const auto round_steps = [](QCPAxis* axis) {
    const QVector<double> t = axis->tickVector();
    if (t.size() < 2) return false;
    const double step = t[1] - t[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0})
      if (std::abs(mantissa - m) < 1e-6) return true;
    return false;
  };
  struct Case {
    double low, high;
    QStringList expected;  // labels that must appear
  };
  for (const Case& k :
       {Case{1.0, 1.0, {"1.00"}}, Case{0.0, 1.6e6, {"0", "1.0M"}}, Case{2e-4, 9e-4, {}}, Case{0.0, 9380.0, {"0"}}}) {
    ChartView c("Throughput", "samples/s");
    c.resize(400, 300);
    c.show();
    QVERIFY(QTest::qWaitForWindowExposed(&c));
    const int s = c.addSeries("samples/s", {});
    for (int i = 0; i <= 40; ++i) c.append(s, XPoint{static_cast<double>(i), 0, 0}, k.low + (k.high - k.low) * i / 40);
    c.flush();
    c.plot()->replot();
    const QString y = labels_of(c.plot()->yAxis);
    QVERIFY2(round_steps(c.plot()->yAxis), qPrintable(y));
    for (const QString& e : k.expected) QVERIFY2(y.split(' ').contains(e), qPrintable(y + " lacks " + e));
    // Plain decimals with an SI suffix at most: no "1.6·10⁶", "1e+06" or "1600000".
    static const QRegularExpression plain("^-?[0-9]{1,4}(\\.[0-9]+)?[kMG]?$");
    for (const QString& label : y.split(' ')) QVERIFY2(plain.match(label).hasMatch(), qPrintable(y));
    QVERIFY(round_steps(c.plot()->xAxis));
    for (const double x : c.plot()->xAxis->tickVector()) QCOMPARE(x, std::round(x));
  }
  // Counts (the staleness chart's rounds) tick at whole values: 0 2 4 6, not 2.5 and 7.5.
  ChartView counts("Staleness", "rounds behind");
  counts.setWholeValues(true);
  counts.resize(300, 240);
  counts.show();
  QVERIFY(QTest::qWaitForWindowExposed(&counts));
  const int s = counts.addSeries("staleness", {});
  for (int i = 0; i <= 40; ++i) counts.append(s, XPoint{static_cast<double>(i), 0, 0}, i % 7);
  counts.flush();
  counts.plot()->replot();
  const QVector<double> ticks = counts.plot()->yAxis->tickVector();
  QVERIFY(ticks.size() >= 2);
  QVERIFY(round_steps(counts.plot()->yAxis));  // 5, not 2.5 rounded to 3
  for (const double y : ticks) QCOMPARE(y, std::round(y));
}

// Legend entries keep their whole text: a chart too narrow for them in one
// row puts them on more rows (the accuracy chart beside an overlaid run's
// long name once showed "train a" and "validation" cut off).
void ChartsTest::narrowChartsWrapTheirLegend() {
  for (const int width : {280, 1200}) {
    ChartView c("Accuracy", "accuracy");
    c.resize(width, 220);
    c.show();
    QVERIFY(QTest::qWaitForWindowExposed(&c));
    for (const char* name : {"20261206-144923 · validation accuracy", "train accuracy", "validation accuracy"})
      c.addSeries(name, {});
    c.plot()->replot();
    QCPLegend* legend = c.plot()->legend;
    QCOMPARE(legend->itemCount(), 3);
    QSet<int> rows;
    for (int i = 0; i < legend->itemCount(); ++i) {
      QCPAbstractLegendItem* item = legend->item(i);
      QVERIFY2(item->outerRect().width() >= item->minimumOuterSizeHint().width(),
               qPrintable(QString("%1 px wide: entry %2 has %3 px of the %4 it needs")
                              .arg(width)
                              .arg(i)
                              .arg(item->outerRect().width())
                              .arg(item->minimumOuterSizeHint().width())));
      rows.insert(item->outerRect().top());
    }
    QCOMPARE(rows.size(), width < 1000 ? 3 : 1);
  }
}

// A marker's label (the best epoch's) stays inside the plot wherever its
// line is: left of the line, or right of it near the left edge.
void ChartsTest::markerLabelsStayInsideThePlot() {
  ChartView c("Accuracy", "accuracy");
  c.resize(400, 220);
  c.show();
  QVERIFY(QTest::qWaitForWindowExposed(&c));
  const int s = c.addSeries("validation accuracy", {});
  for (int i = 0; i <= 100; ++i) c.append(s, XPoint{static_cast<double>(i), 0, 0}, 0.5 + 0.004 * i);
  c.flush();
  for (const double x : {2.0, 50.0, 99.0}) {
    c.clearMarkers();
    c.addMarker(XPoint{x, 0, 0}, "best: epoch 1, val acc 0.8558", Qt::darkGreen);
    c.plot()->replot();
    const QRect area = c.plot()->axisRect()->rect();
    auto* label = qobject_cast<QCPItemText*>(c.plot()->item(c.plot()->itemCount() - 1));
    QVERIFY(label);
    const double left = label->topLeft->pixelPosition().x(), right = label->bottomRight->pixelPosition().x();
    QVERIFY2(left >= area.left() - 1 && right <= area.right() + 1,
             qPrintable(QString("at x=%1 the label spans %2..%3, the plot %4..%5")
                            .arg(x)
                            .arg(left)
                            .arg(right)
                            .arg(area.left())
                            .arg(area.right())));
  }
}

// Validation loss is drawn above the reduced loss; no replica and no
// overlaid run looks like a validation series; the smoothing slider moves in
// fine steps from the keyboard.
void ChartsTest::seriesStylesNeverMislead() {
  ChartsPanel panel;
  panel.resize(1000, 700);
  panel.show();
  QVERIFY(QTest::qWaitForWindowExposed(&panel));
  RunStartedEvent started;
  started.replicas = 8;
  started.steps_per_epoch = 10;
  started.epochs = 2;
  started.strategy = "mirrored";
  std::vector<Event> events{started};
  RunSeries old;
  old.add(started);
  for (int i = 1; i <= 20; ++i) {
    StepEvent st;
    st.step = i;
    st.epoch = 1 + (i - 1) / 10;
    st.epoch_step = 1 + (i - 1) % 10;
    st.loss = 1.0 / i;
    st.replica_losses.assign(8, 1.0 / i);
    events.push_back(st);
    old.add(st);
    if (i % 10 == 0) {
      EpochEvent ep;
      ep.epoch = i / 10;
      ep.val_loss = 1.0 / i;
      ep.val_accuracy = 0.5;
      events.push_back(ep);
      old.add(ep);
    }
  }
  panel.addEvents(events);
  for (const char* label : {"run A", "run B", "run C"}) panel.addOverlay(old, label);

  ChartView* loss = panel.lossChart();
  const int reduced = loss->seriesIndex("loss (reduced)"), val = loss->seriesIndex("validation loss");
  QVERIFY(loss->seriesStyle(val).on_top && val > reduced);
  QCPLayer* top = loss->plot()->layer("top");
  qsizetype reduced_at = -1, val_at = -1;
  for (qsizetype i = 0; i < top->children().size(); ++i) {
    auto* g = qobject_cast<QCPGraph*>(top->children()[i]);
    if (g && g->name() == "loss (reduced)" && reduced_at < 0) reduced_at = i;
    if (g && g->name() == "validation loss" && val_at < 0) val_at = i;
  }
  QVERIFY2(reduced_at >= 0 && val_at > reduced_at, "validation loss is painted after (above) the reduced loss");
  const ChartView::Style validation = loss->seriesStyle(val);
  for (ChartView* chart : {loss, panel.accuracyChart()})
    for (int i = 0; i < chart->seriesCount(); ++i) {
      const QString name = chart->seriesName(i);
      if (name.startsWith("validation")) continue;
      const ChartView::Style st = chart->seriesStyle(i);
      QVERIFY2(st.color != validation.color, qPrintable(name + " has the validation colour"));
      if (name.startsWith("run ")) QVERIFY2(st.pen != validation.pen, qPrintable(name + " is dashed like validation"));
    }
  // Per-epoch series are never smoothed; training accuracy, per step, is.
  ChartView* acc = panel.accuracyChart();
  QVERIFY(!loss->seriesStyle(val).smoothable);
  QVERIFY(!acc->seriesStyle(acc->seriesIndex("validation accuracy")).smoothable);
  QVERIFY(acc->seriesStyle(acc->seriesIndex("train accuracy")).smoothable);

  auto* slider = panel.findChild<QSlider*>("smoothing");
  QVERIFY(slider);
  slider->setFocus();
  QTest::keyClick(slider, Qt::Key_Right);
  QTest::keyClick(slider, Qt::Key_Right);
  QCOMPARE(slider->value(), 10);  // 0.010: two small steps, not two tenths
  bool shows = false;
  for (auto* l : panel.findChildren<QLabel*>()) shows |= l->text() == "0.010";
  QVERIFY(shows);
}

// Training accuracy arrives with every step and is drawn per step; an
// in-process Mirrored run's step-time chart has a line per replica (a slow
// replica shows there), a run across processes one per worker.
void ChartsTest::perStepAccuracyAndReplicaTimes() {
  for (const bool across_processes : {false, true}) {
    ChartsPanel panel;
    RunStartedEvent started;
    started.strategy = across_processes ? "multi_worker_mirrored" : "mirrored";
    started.replicas = across_processes ? 2 : 3;
    started.workers = across_processes ? 2 : 1;
    started.steps_per_epoch = 10;
    std::vector<Event> events{started};
    for (int i = 1; i <= 10; ++i) {
      StepEvent st;
      st.step = st.epoch_step = i;
      st.epoch = 1;
      st.loss = 1.0 / i;
      st.accuracy = 0.05 * i;
      st.replica_losses.assign(size_t(started.replicas), st.loss);
      st.worker_step_times.assign(size_t(started.workers), 0.01);
      st.replica_step_times = {0.01, 0.03, 0.01};
      if (across_processes) st.replica_step_times = {0.01, 0.01};
      events.push_back(st);
    }
    EpochEvent ep;
    ep.epoch = 1;
    ep.accuracy = 0.275;
    ep.val_accuracy = 0.3;
    events.push_back(ep);
    panel.addEvents(events);
    ChartView* acc = panel.accuracyChart();
    const int train = acc->seriesIndex("train accuracy");
    QCOMPARE(acc->pointCount(train), 10);
    QCOMPARE(acc->seriesValues(train).back(), 0.5);
    QCOMPARE(acc->pointCount(acc->seriesIndex("validation accuracy")), 1);
    ChartView* times = panel.workerChart();
    if (across_processes) {
      QCOMPARE(times->seriesCount(), 2);
      QCOMPARE(times->pointCount(times->seriesIndex("worker 1")), 10);
    } else {
      QCOMPARE(times->seriesCount(), 3);
      QCOMPARE(times->seriesValues(times->seriesIndex("replica 1")).front(), 30.0);  // 0.03 s, in ms
    }
  }
}

void ChartsTest::chartExports() {
  QTemporaryDir dir;
  ChartView chart("Loss", "loss");
  chart.resize(600, 400);
  const int a = chart.addSeries("replica 0", {});
  for (int i = 1; i <= 5; ++i) chart.append(a, XPoint{double(i), i / 5.0, i * 0.5}, 1.0 / i);
  chart.flush();
  QVERIFY(chart.exportPng(dir.filePath("c.png")));
  QVERIFY(chart.exportPdf(dir.filePath("c.pdf")));
  QVERIFY(chart.exportCsv(dir.filePath("c.csv")));
  QVERIFY(QImage(dir.filePath("c.png")).width() > 100);
  QFile pdf(dir.filePath("c.pdf"));
  QVERIFY(pdf.open(QIODevice::ReadOnly) && pdf.read(4) == "%PDF");
  QFile csv(dir.filePath("c.csv"));
  QVERIFY(csv.open(QIODevice::ReadOnly));
  const QStringList lines = QString::fromUtf8(csv.readAll()).split('\n', Qt::SkipEmptyParts);
  QCOMPARE(lines.size(), 6);
  QCOMPARE(lines[0], QString("series,step,epoch,time,value,smoothed"));
  QCOMPARE(lines[2], QString("\"replica 0\",2,0.4,1,0.5,"));
}

void ChartsTest::runSeriesFromEvents() {
  RunSeries s;
  RunStartedEvent r;
  r.replicas = 2;
  r.steps_per_epoch = 4;
  s.add(r);
  for (int i = 1; i <= 6; ++i) {
    StepEvent e;
    e.step = i;
    e.epoch = (i - 1) / 4 + 1;
    e.epoch_step = (i - 1) % 4 + 1;
    e.replica_losses = {1.0 * i, 2.0 * i};
    e.loss = i == 6 ? std::nan("") : 1.5 * i;
    s.add(e);
  }
  QCOMPARE(s.replicas(), size_t(2));
  QCOMPARE(s.step.size(), size_t(6));
  QCOMPARE(s.epoch_pos[5], 1.5);
  QCOMPARE(s.replica_loss[1][2], 6.0);
  QVERIFY(s.diverged_at && *s.diverged_at == 5);
  QVERIFY(!s.is_parameter_server());
  QVERIFY(s.staleness.empty() && s.server_updates.empty() && s.lost_at.empty());
}

void ChartsTest::runHistoryListsRuns() {
  QTemporaryDir dir;
  const std::string project = dir.filePath("p.strata").toStdString();
  const std::string runs = runs_folder_for(project);
  QCOMPARE(QString::fromStdString(runs), dir.filePath("p.runs"));
  for (const char* name : {"20250101-100000", "20250102-100000"}) {
    QDir().mkpath(QString::fromStdString(runs + "/" + name));
    std::ofstream out(runs + "/" + name + "/events.jsonl");
    RunStartedEvent r;
    r.strategy = "mirrored";
    r.replicas = 2;
    r.steps_per_epoch = 2;
    out << event_to_jsonl(r) << "\n";
    StepEvent s;
    s.step = 1;
    s.epoch = 1;
    s.epoch_step = 1;
    s.replica_losses = {0.5, 0.7};
    s.loss = 0.6;
    out << event_to_jsonl(s) << "\n";
    FinishedEvent f;
    out << event_to_jsonl(f) << "\n{\"type\": \"ste";  // a run killed mid-line
  }
  const auto list = list_runs(project);
  QCOMPARE(list.size(), size_t(2));
  QCOMPARE(QString::fromStdString(list[0].name), QString("20250102-100000"));  // newest first
  QVERIFY(QString::fromStdString(list[0].summary).contains("mirrored x2 · completed"));
  int bad = 0;
  const RunSeries s = load_run(list[0].dir, &bad);
  QCOMPARE(bad, 1);
  QCOMPARE(s.step.size(), size_t(1));
  QCOMPARE(s.replica_loss[1][0], 0.7);
}

// The Runs table's status of a failed run names the failure kind the
// finished event carries ("failed: out of device memory"), in the table and
// the summary alike; an older stream without the kind says "failed".
void ChartsTest::runHistorySaysWhyARunFailed() {
  QTemporaryDir dir;
  const std::string project = dir.filePath("p.strata").toStdString();
  const std::string runs = runs_folder_for(project);
  const auto write_run = [&](const char* name, const std::string& finished) {
    QDir().mkpath(QString::fromStdString(runs + "/" + name));
    std::ofstream out(runs + "/" + name + "/events.jsonl");
    RunStartedEvent r;
    r.strategy = "one_device";
    r.replicas = 1;
    out << event_to_jsonl(r) << "\n" << finished << "\n";
  };
  FinishedEvent oom;
  oom.status = RunStatus::Failed;
  oom.failure = FailureKind::OutOfDeviceMemory;
  oom.message = "gpu:0 (NVIDIA H200): out of device memory allocating 2048 MiB";
  write_run("20250103-100000", event_to_jsonl(oom));
  FinishedEvent stopped;
  stopped.status = RunStatus::Stopped;
  write_run("20250102-100000", event_to_jsonl(stopped));
  // Written before the kind existed: read as internal, shown as such.
  write_run("20250101-100000",
            R"({"type":"finished","status":"failed","message":"boom","steps":0,"epochs_completed":0,"time":0})");
  const auto list = list_runs(project);
  QCOMPARE(list.size(), size_t(3));
  QCOMPARE(QString::fromStdString(list[0].status_text()), QString("failed: out of device memory"));
  QVERIFY(QString::fromStdString(list[0].summary).contains("one_device x1 · failed: out of device memory"));
  QCOMPARE(QString::fromStdString(list[1].status_text()), QString("stopped"));
  QCOMPARE(QString::fromStdString(list[2].status_text()), QString("failed: internal"));
}

// Two projects flattened to settings: nested fields by path, arrays of
// layers by index, arrays of scalars whole; a setting only one has differs.
void ChartsTest::settingsDiffMarksDifferences() {
  const nlohmann::json a = nlohmann::json::parse(
      R"({"training": {"epochs": 3, "optimizer": {"type": "adam", "learning_rate": 0.001}},
          "model": {"layers": [{"type": "dense", "units": 8}, {"type": "conv2d", "kernel_size": [3, 3]}]},
          "strategy": {"devices": ["cpu:0", "cpu:1"]}})");
  nlohmann::json b = a;
  b["training"]["optimizer"]["learning_rate"] = 0.01;
  b["model"]["layers"][1]["kernel_size"] = {5, 5};
  b["training"]["lr_schedule"] = {{"type", "cosine"}};
  const auto rows = diff_settings(a, b);
  std::map<std::string, SettingRow> by_path;
  for (const auto& r : rows) by_path[r.path] = r;
  QCOMPARE(rows.size(), size_t(9));  // 8 of a, 1 only in b
  QVERIFY(!by_path["training.epochs"].differs);
  QVERIFY(by_path["training.optimizer.learning_rate"].differs);
  QCOMPARE(QString::fromStdString(by_path["training.optimizer.learning_rate"].b), QString("0.01"));
  QVERIFY(!by_path["model.layers[0].units"].differs);
  QVERIFY(by_path["model.layers[1].kernel_size"].differs);
  QCOMPARE(QString::fromStdString(by_path["model.layers[1].kernel_size"].a), QString("[3,3]"));
  QVERIFY(!by_path["strategy.devices"].differs);
  QVERIFY(by_path["training.lr_schedule.type"].differs);
  QVERIFY(by_path["training.lr_schedule.type"].a.empty());
}

namespace {
// The start of a stored parameter-server run: `workers` on cpu:0.., one epoch.
RunStartedEvent ps_started(int workers, int64_t steps, int servers) {
  RunStartedEvent r;
  r.strategy = "parameter_server";
  r.replicas = workers;
  for (int w = 0; w < workers; ++w) r.devices.push_back("cpu:" + std::to_string(w));
  r.steps_per_epoch = steps;
  r.epochs = 1;
  r.servers = servers;
  return r;
}

// Step i of a stored 2-worker, 2-server run: staleness cycles 0,1,2; worker
// 1 is reported lost from step `lost_from` on (0 = never).
StepEvent ps_step(int i, int lost_from) {
  StepEvent s;
  s.step = s.epoch_step = i;
  s.epoch = 1;
  s.time = 0.01 * i;
  s.replica_losses = {1.0 / i, 2.0 / i};
  s.loss = 1.5 / i;
  s.staleness = (i - 1) % 3;
  s.worker_steps = {i, i - 1};
  s.server_updates_per_sec = {10.0 * i, 20.0 * i};
  if (lost_from > 0 && i >= lost_from) s.lost_workers = {1};
  return s;
}
}  // namespace

// A stored run of one step on one server reads "1 server" and "1 step".
void ChartsTest::runSummaryCountsInEnglish() {
  QTemporaryDir dir;
  const std::string project = dir.filePath("p.strata").toStdString();
  const std::string run_dir = runs_folder_for(project) + "/20250104-100000";
  QDir().mkpath(QString::fromStdString(run_dir));
  const RunStartedEvent r = ps_started(1, 1, 1);
  {
    std::ofstream out(run_dir + "/events.jsonl");
    out << event_to_jsonl(r) << "\n" << event_to_jsonl(ps_step(1, 0)) << "\n";
    FinishedEvent f;
    f.steps = 1;
    out << event_to_jsonl(f) << "\n";
  }
  const auto list = list_runs(project);
  QCOMPARE(list.size(), size_t(1));
  QCOMPARE(QString::fromStdString(list[0].summary), QString("parameter_server x1 · 1 server · completed · 1 step"));
}

void ChartsTest::parameterServerRunFromFolder() {
  QTemporaryDir dir;
  const std::string project = dir.filePath("p.strata").toStdString();
  const std::string run_dir = runs_folder_for(project) + "/20250103-100000";
  QDir().mkpath(QString::fromStdString(run_dir));
  RunStartedEvent r = ps_started(2, 6, 2);
  r.staleness_bound = 2;
  r.shards = "server 0: dense/kernel; server 1: dense/bias";
  {
    std::ofstream out(run_dir + "/events.jsonl");
    out << event_to_jsonl(r) << "\n";
    for (int i = 1; i <= 6; ++i) {
      if (i == 5) out << event_to_jsonl(LogEvent{"warning", "worker 1 (cpu:1) lost: injected", 0.045}) << "\n";
      out << event_to_jsonl(ps_step(i, 5)) << "\n";
    }
    FinishedEvent f;
    f.steps = 6;
    out << event_to_jsonl(f) << "\n";
  }
  const auto list = list_runs(project);
  QCOMPARE(list.size(), size_t(1));
  QCOMPARE(QString::fromStdString(list[0].summary), QString("parameter_server x2 · 2 servers · completed · 6 steps · 1 worker lost"));

  // The stored run as columns.
  const RunSeries run = load_run(list[0].dir);
  QVERIFY(run.is_parameter_server());
  QCOMPARE(run.staleness, (std::vector<double>{0, 1, 2, 0, 1, 2}));
  QCOMPARE(run.server_updates.size(), size_t(2));
  QCOMPARE(run.server_updates[1], (std::vector<double>{20, 40, 60, 80, 100, 120}));
  QCOMPARE(run.worker_steps, (std::vector<int64_t>{6, 5}));
  QCOMPARE(run.lost_at.size(), size_t(2));
  QVERIFY(!run.lost_at[0]);
  QCOMPARE(run.lost_at[1], std::optional<int64_t>(5));
  QCOMPARE(run.lost_worker_count(), 1);

  // As an overlay: its staleness dashed on the staleness chart, which shows
  // for it even though no parameter-server run is live.
  ChartsPanel panel;
  QVERIFY(!panel.parameterServerCharts()->isVisibleTo(&panel));
  panel.addOverlay(run, "old");
  ChartView* staleness = panel.stalenessChart();
  const int o = staleness->seriesIndex("old · staleness");
  QVERIFY(o >= 0);
  QCOMPARE(staleness->seriesValues(o), run.staleness);
  QCOMPARE(staleness->seriesStyle(o).pen, Qt::DashDotLine);  // the overlay style
  QVERIFY(panel.parameterServerCharts()->isVisibleTo(&panel));
  panel.removeOverlay("old");
  QCOMPARE(staleness->seriesIndex("old · staleness"), -1);
  QVERIFY(!panel.parameterServerCharts()->isVisibleTo(&panel));

  // Resumed from its step-4 checkpoint: the stored steps (JSON Lines, read
  // back) come first, through the same path as live events; the new attempt
  // has both workers again.
  panel.setPrelude(events_until(list[0].dir, 4));
  std::vector<Event> resumed{r};
  for (int i = 5; i <= 6; ++i) resumed.push_back(ps_step(i, 0));
  panel.addEvents(resumed);
  QCOMPARE(staleness->seriesValues(staleness->seriesIndex("staleness")), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  QCOMPARE(staleness->pointCount(staleness->seriesIndex("bound (k = 2)")), 6);
  ChartView* servers = panel.serverUpdatesChart();
  QCOMPARE(servers->seriesValues(servers->seriesIndex("server 0")), (std::vector<double>{10, 20, 30, 40, 50, 60}));
  ChartView* loss = panel.lossChart();
  QCOMPARE(loss->seriesLabel(loss->seriesIndex("worker 1")), QString("worker 1 — 5 steps"));
  // Worker 1 finished no slice by step 1: its line starts at step 2.
  QCOMPARE(loss->pointCount(loss->seriesIndex("worker 1")), 5);
  QCOMPARE(loss->markerCount(), 0);

  // The stored attempt lost worker 1 at step 5: replaying the whole file
  // marks it there, and only once.
  std::vector<Event> all;
  std::ifstream in(run_dir + "/events.jsonl");
  for (std::string line; std::getline(in, line);) all.push_back(event_from_jsonl(line));
  panel.addEvents(all);
  QCOMPARE(loss->markerCount(), 1);
  QCOMPARE(loss->markerText(0), QString("worker 1 lost (step 5)"));
  QCOMPARE(loss->seriesLabel(loss->seriesIndex("worker 1")), QString("worker 1 (lost) — 5 steps"));
  QCOMPARE(loss->pointCount(loss->seriesIndex("worker 1")), 3);  // steps 2-4
  QVERIFY(panel.parameterServerCharts()->workerLost(1));
}

QTEST_MAIN(ChartsTest)
#include "test_ui_charts.moc"
