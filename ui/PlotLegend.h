#pragma once
#include <QFont>
#include <QMargins>
#include <vector>

class QCustomPlot;

namespace strata::ui {

// Gives the plot a legend in a row of its own at `row` of the plot layout
// (W&B's place for it) instead of the one inside the axis rect, which
// covered data and took clicks meant for the plot; as wide as the row even
// while it has no entries. Entries fill columns first, at most `wrap` of
// them a row and fewer where the plot is too narrow for their text, in a
// font a little smaller than `base`. Call it before any plottable joins
// the legend.
void place_legend_in_row(QCustomPlot* plot, int row, int wrap, const QFont& base, const QMargins& margins);

// Charts side by side whose legends (place_legend_in_row's) take the height
// of the tallest visible one, so their plots, and their x axes, stay level
// when one legend wraps onto more rows than the others. Call it after
// place_legend_in_row for each.
void level_legends(const std::vector<QCustomPlot*>& row);

}  // namespace strata::ui
