#include "PlotLegend.h"

#include <qcustomplot.h>

#include <algorithm>
#include <vector>

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

// The most columns, up to `most`, whose entries (filled columns first) fit
// the plot's width: a narrow chart wraps its legend onto more rows rather
// than clip every entry's text.
void fit_legend_columns(QCustomPlot* plot, int most) {
  QCPLegend* legend = plot->legend;
  // The entries' widths in order (the grid's cells, filled columns first,
  // end in empty ones).
  std::vector<int> entries;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (const QCPAbstractLegendItem* item = legend->item(i)) entries.push_back(item->minimumOuterSizeHint().width());
  const int n = static_cast<int>(entries.size());
  const int available = plot->viewport().width() - legend->margins().left() - legend->margins().right();
  if (n == 0 || available <= 0) return;
  int columns = std::clamp(n, 1, most);
  for (; columns > 1; --columns) {
    int width = (columns - 1) * legend->columnSpacing();
    for (int c = 0; c < columns; ++c) {
      int widest = 0;
      for (int i = c; i < n; i += columns) widest = std::max(widest, entries[static_cast<size_t>(i)]);
      width += widest;
    }
    if (width <= available) break;
  }
  if (legend->wrap() == columns) return;
  legend->setWrap(columns);
  legend->setFillOrder(QCPLegend::foColumnsFirst, true);  // the entries laid out again, in their order
}
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
  // Before each layout, so the plot's height follows the legend's rows.
  QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot, wrap] { fit_legend_columns(plot, wrap); });
}

void level_legends(const std::vector<QCustomPlot*>& row) {
  for (QCustomPlot* plot : row)
    // After the plot's own fit_legend_columns (connected first): its rows are
    // this replot's. Another plot whose legend must grow or shrink replots
    // once (queued); its own turn then finds every height settled.
    QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [row, plot] {
      int tallest = 0;
      for (const QCustomPlot* p : row)
        if (p->isVisible()) tallest = std::max(tallest, p->legend->minimumOuterSizeHint().height());
      for (QCustomPlot* p : row) {
        if (p->legend->minimumSize().height() == tallest) continue;
        p->legend->setMinimumSize(0, tallest);
        if (p != plot) p->replot(QCustomPlot::rpQueuedReplot);
      }
    });
}

}  // namespace strata::ui
