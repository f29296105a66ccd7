#include "PlotLegend.h"

#include <qcustomplot.h>

namespace strata::ui {

void place_legend_in_row(QCustomPlot* plot, int row, int wrap, const QFont& base, const QMargins& margins) {
  plot->legend->setVisible(true);
  QFont legend_font = base;
  legend_font.setPointSizeF(legend_font.pointSizeF() * 0.85);
  plot->legend->setFont(legend_font);
  plot->axisRect()->insetLayout()->take(plot->legend);
  plot->plotLayout()->insertRow(row);
  plot->plotLayout()->addElement(row, 0, plot->legend);
  plot->plotLayout()->setRowStretchFactor(row, 0.001);
  plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
  plot->legend->setWrap(wrap);
  plot->legend->setBorderPen(Qt::NoPen);
  plot->legend->setBrush(Qt::NoBrush);
  plot->legend->setMargins(margins);
}

}  // namespace strata::ui
