#pragma once
#include <QColor>
#include <cstddef>

namespace strata::ui {

// Tableau-10 without grey: distinct colours for replicas, workers and
// servers. Black stays for the reduced loss so it reads as "the" loss, and
// grey for what is no longer there (a lost worker).
inline QColor series_color(size_t i) {
  // Tableau's palette without its red, which belongs to validation series
  // (a red replica or overlaid run would read as validation loss).
  static const QColor palette[] = {QColor(31, 119, 180),  QColor(255, 127, 14), QColor(44, 160, 44),
                                   QColor(148, 103, 189), QColor(140, 86, 75),  QColor(227, 119, 194),
                                   QColor(188, 189, 34),  QColor(23, 190, 207)};
  return palette[i % (sizeof palette / sizeof palette[0])];
}

// Validation series: red, dashed, with points (one per epoch).
inline QColor validation_color() { return QColor(214, 39, 40); }

}  // namespace strata::ui
