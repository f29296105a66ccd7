#include "TimelineStyle.h"

namespace strata::ui {

QColor kind_color(trace::SpanKind k) {
  static const QColor colors[trace::kSpanKinds] = {
      QColor(228, 228, 228),  // step
      QColor(188, 189, 34),   // data_wait
      QColor(23, 190, 207),   // host_to_device
      QColor(31, 119, 180),   // forward
      QColor(255, 127, 14),   // backward
      QColor(44, 160, 44),    // all_reduce
      QColor(152, 223, 138),  // reduce_scatter
      QColor(0, 109, 44),     // all_gather
      QColor(148, 103, 189),  // optimizer
      QColor(127, 127, 127),  // collective_wait
      QColor(140, 86, 75),    // checkpoint
      QColor(227, 119, 194),  // evaluation
      QColor(174, 199, 232),  // pull
      QColor(255, 187, 120),  // push
      QColor(247, 129, 129),  // staleness_wait
  };
  return colors[static_cast<int>(k)];
}

QString kind_label(trace::SpanKind k) {
  return QString::fromLatin1(trace::span_kind_name(k).data(), static_cast<qsizetype>(trace::span_kind_name(k).size()))
      .replace('_', ' ');
}

QString lane_label(const trace::Lane& l) { return QString::fromStdString(trace::lane_name(l)); }

}  // namespace strata::ui
