#include "LogPanel.h"

#include <QFontDatabase>

namespace strata::ui {

LogPanel::LogPanel(QWidget* parent) : QPlainTextEdit(parent) {
  setObjectName("logPanel");
  setReadOnly(true);
  setMaximumBlockCount(5000);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
}

void LogPanel::addLine(const QString& level, const QString& message, double time) {
  const QString color = level == "error" ? "#b00" : level == "warning" ? "#a60" : "#333";
  const QString stamp = time >= 0 ? QString("[%1 s] ").arg(time, 7, 'f', 1) : QString();
  appendHtml(QString("<span style='color:%1'>%2%3 %4</span>")
                 .arg(color, stamp.toHtmlEscaped(), level.toUpper().leftJustified(7, ' ').toHtmlEscaped(), message.toHtmlEscaped()));
}

}  // namespace strata::ui
