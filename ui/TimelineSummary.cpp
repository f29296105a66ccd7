#include "TimelineSummary.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <array>
#include <map>

#include "TimelineStyle.h"

namespace strata::ui {

using trace::Lane;
using trace::LaneKind;
using trace::SpanKind;

namespace {

bool computes(const Lane& l) { return l.kind == LaneKind::Replica || l.kind == LaneKind::Worker; }

QString percent(double part, double whole) {
  return QStringLiteral("%1%").arg(whole > 0 ? 100 * part / whole : 0.0, 0, 'f', 1);
}

}  // namespace

TimelineSummary::TimelineSummary() : table_(new QTableWidget), comm_(new QLabel) {
  table_->setObjectName("timelineSummary");
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionMode(QAbstractItemView::NoSelection);
  table_->setFocusPolicy(Qt::NoFocus);  // figures to read, not cells to visit
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setToolTip(tr("Share of each replica's or worker's step time per kind of work, over the steps shown"));
  comm_->setObjectName("timelineHiddenComm");
}

void TimelineSummary::show(const std::vector<trace::StepBreakdown>& steps) {
  // Per replica/worker over the shown steps: summed step time and time per
  // kind. A lane without Step spans is measured against its summed work.
  struct Totals {
    double step_us = 0;
    int steps = 0;
    std::array<double, trace::kSpanKinds> kind_us{};
  };
  struct LaneOrder {
    bool operator()(const Lane& a, const Lane& b) const { return trace::lane_before(a, b); }
  };
  std::map<Lane, Totals, LaneOrder> rows;
  std::array<bool, trace::kSpanKinds> present{};
  double comm_us = 0, hidden_us = 0;
  for (const trace::StepBreakdown& b : steps) {
    comm_us += b.comm_us;
    hidden_us += b.comm_hidden_us;
    for (const trace::LaneBreakdown& l : b.lanes) {
      if (!computes(l.lane)) continue;
      Totals& t = rows[l.lane];
      t.step_us += l.step_us;
      t.steps += l.step_us > 0;
      for (size_t k = 1; k < l.kind_us.size(); ++k) {
        t.kind_us[k] += l.kind_us[k];
        present[k] = present[k] || l.kind_us[k] > 0;
      }
    }
  }
  std::vector<SpanKind> kinds;
  QStringList headers{tr("mean step")};
  for (size_t k = 1; k < present.size(); ++k) {
    if (!present[k]) continue;
    kinds.push_back(static_cast<SpanKind>(k));
    headers << kind_label(kinds.back());
  }
  table_->clear();
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(static_cast<int>(rows.size()));
  int r = 0;
  for (const auto& [lane, t] : rows) {
    table_->setVerticalHeaderItem(r, new QTableWidgetItem(lane_label(lane)));
    const QString mean = t.steps > 0 ? tr("%1 ms").arg(t.step_us / t.steps / 1000, 0, 'f', 3) : tr("—");
    table_->setItem(r, 0, new QTableWidgetItem(mean));
    double whole = t.step_us;
    if (whole <= 0)
      for (double v : t.kind_us) whole += v;
    for (size_t c = 0; c < kinds.size(); ++c) {
      auto* item = new QTableWidgetItem(percent(t.kind_us[static_cast<size_t>(kinds[c])], whole));
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(r, static_cast<int>(c) + 1, item);
    }
    ++r;
  }
  // Milliseconds to a tenth, or microseconds where that would read "0.0 ms".
  const QString comm_time = comm_us >= 100 ? tr("%1 ms").arg(comm_us / 1000, 0, 'f', 1)
                                           : tr("%1 µs").arg(comm_us, 0, 'f', comm_us < 10 ? 1 : 0);
  comm_->setText(comm_us > 0 ? tr("communication hidden behind compute: %1 of %2").arg(percent(hidden_us, comm_us), comm_time)
                             : QString());
  comm_->setVisible(comm_us > 0);
}

}  // namespace strata::ui
