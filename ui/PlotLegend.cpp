#include "PlotLegend.h"

#include <qcustomplot.h>

namespace strata::ui {

namespace {
// A legend as wide as its row allows. The plot layout's column is no wider
// than the narrowest maximum of its elements, and a QCPLegend's maximum is
// the sum of its columns': with no entries yet (an empty chart) that is its
// margins alone, which squeezed the plot under it to its minimum width.
class RowLegend final : public QCPLegend {
public:
  QSize maximumOuterSizeHint() const override { return {QWIDGETSIZE_MAX, QCPLegend::maximumOuterSizeHint().height()}; }
};
}  // namespace

void place_legend_in_row(QCustomPlot* plot, int row, int wrap, const QFont& base, const QMargins& margins) {
  // The plot's own legend (in the axis rect's inset layout, without entries
  // yet) gives way to one that lives in the row.
  QCPLegend* own = plot->legend;
  if (plot->axisRect()->insetLayout()->take(own)) delete own;
  plot->legend = new RowLegend;
  plot->plotLayout()->insertRow(row);
  plot->plotLayout()->addElement(row, 0, plot->legend);
  plot->plotLayout()->setRowStretchFactor(row, 0.001);
  plot->legend->setLayer(QLatin1String("legend"));
  plot->legend->setVisible(true);
  QFont legend_font = base;
  legend_font.setPointSizeF(legend_font.pointSizeF() * 0.85);
  plot->legend->setFont(legend_font);
  plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
  plot->legend->setWrap(wrap);
  plot->legend->setBorderPen(Qt::NoPen);
  plot->legend->setBrush(Qt::NoBrush);
  plot->legend->setMargins(margins);
}

}  // namespace strata::ui
