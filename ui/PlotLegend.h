#pragma once
#include <QFont>
#include <QMargins>

class QCustomPlot;

namespace strata::ui {

// Moves the plot's legend out of the axis rect into a row of its own at
// `row` of the plot layout (W&B's place for it): inside the plot it covered
// data and took clicks meant for the plot. Entries fill columns first and
// wrap after `wrap`, in a font a little smaller than `base`.
void place_legend_in_row(QCustomPlot* plot, int row, int wrap, const QFont& base, const QMargins& margins);

}  // namespace strata::ui
