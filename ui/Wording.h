#pragma once
#include <QRegularExpression>
#include <QString>

namespace strata::ui {

// "1 epoch", "3 epochs". Qt's tr("%n epoch(s)") prints "epoch(s)" unless a
// translation supplies the plural forms, and the dashboard ships none.
inline QString counted(qint64 n, const QString& one, const QString& many) {
  return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
}

// "model.layers[0].units: must be positive" -> "Layer 1 — model.layers[0].units:
// must be positive": the model table numbers its rows from 1, the project
// file's paths count from 0; the message names both.
inline QString with_layer_number(const QString& problem) {
  static const QRegularExpression path(QStringLiteral("^model\\.layers\\[(\\d+)\\]"));
  const auto m = path.match(problem);
  if (!m.hasMatch()) return problem;
  return QStringLiteral("Layer %1 — %2").arg(m.captured(1).toLongLong() + 1).arg(problem);
}

}  // namespace strata::ui
