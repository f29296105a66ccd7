#pragma once
#include <QString>

namespace strata::ui {

// "1 setting", "3 settings": a count with its noun in the right number,
// where "setting(s)" would do (English only; the dashboard is not
// translated).
inline QString counted(qint64 n, const char* one, const char* many) {
  return QString::number(n) + ' ' + QString::fromUtf8(n == 1 ? one : many);
}

}  // namespace strata::ui
