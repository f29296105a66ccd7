#pragma once
#include <QColor>
#include <QString>

#include "trace/Span.h"

namespace strata::ui {

// How the Timeline tab names and colours what it draws, shared by its chart,
// its tooltips and its summary table so a kind reads the same in all three.

// Related kinds share a hue (compute blue/orange, collectives greens,
// parameter-server traffic pale), waits are greys and reds so idle time
// stands out; fixed, so a kind keeps its colour from run to run.
QColor kind_color(trace::SpanKind k);
// The kind's name as the trace files spell it, with spaces: "all reduce".
QString kind_label(trace::SpanKind k);
// "replica 0", "rank 1 · replica 0" (trace::lane_name).
QString lane_label(const trace::Lane& l);

}  // namespace strata::ui
