#pragma once
#include <QPlainTextEdit>

namespace strata::ui {

// The run's log lines (engine log events and the dashboard's own notes),
// with time and level. Capped so a long run cannot grow it without bound.
class LogPanel : public QPlainTextEdit {
  Q_OBJECT
public:
  explicit LogPanel(QWidget* parent = nullptr);
  void addLine(const QString& level, const QString& message, double time = -1);
};

}  // namespace strata::ui
