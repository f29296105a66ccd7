#pragma once
#include <QString>

namespace strata::ui {

// "1 epoch", "3 epochs". Qt's tr("%n epoch(s)") prints "epoch(s)" unless a
// translation supplies the plural forms, and the dashboard ships none.
inline QString counted(qint64 n, const QString& one, const QString& many) {
  return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
}

}  // namespace strata::ui
