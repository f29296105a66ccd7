#pragma once
#include <QCoreApplication>
#include <QString>
#include <vector>

#include "trace/StepBreakdown.h"

class QLabel;
class QTableWidget;

namespace strata::ui {

// The figures under the Timeline tab's chart: each replica's or worker's
// mean step and share of step time per kind of work over the steps drawn,
// and how much communication hid behind compute. Owns no widget: it makes
// the table and the label, the panel lays them out (and so owns them).
class TimelineSummary {
  Q_DECLARE_TR_FUNCTIONS(TimelineSummary)
public:
  TimelineSummary();

  QTableWidget* table() const { return table_; }
  QLabel* hiddenComm() const { return comm_; }
  // Fills both from the drawn steps' breakdowns.
  void show(const std::vector<trace::StepBreakdown>& steps);

private:
  QTableWidget* table_;
  QLabel* comm_;
};

}  // namespace strata::ui
