#pragma once
#include <qcustomplot.h>

namespace strata::ui {

// Linear axis ticks the way people read figures: steps of 1, 2, 2.5 or 5
// times a power of ten, no more ticks than the chart's tick count (set per
// replot from its size), at least two of them, and large values with SI
// suffixes ("800k", "1.6M" rather than "800000" beside "1.6·10⁶").
// `whole`: steps of at least 1 (a step axis has no step 0.5).
// QCustomPlot's own tssReadability rounds the step to the nearest nice
// mantissa, down as well as up, so it can place more ticks than fit;
// tssMeetTickCount keeps the count but steps by 0.5 mantissas (0.045).
class ChartTicker final : public QCPAxisTicker {
public:
  explicit ChartTicker(bool whole = false) : whole_(whole) {}
  void setWhole(bool whole) { whole_ = whole; }

protected:
  double getTickStep(const QCPRange& range) override;
  QString getTickLabel(double tick, const QLocale& locale, QChar format_char, int precision) override;

private:
  bool whole_;
  double step_ = 1.0;     // the last step chosen, which the labels' decimals follow
  double largest_ = 0.0;  // the largest magnitude in the range, which chooses the suffix
};

}  // namespace strata::ui
