#include "trace/Span.h"

namespace strata::trace {

std::optional<SpanKind> parse_span_kind(std::string_view name) {
  for (int k = 0; k < kSpanKinds; ++k)
    if (span_kind_name(static_cast<SpanKind>(k)) == name) return static_cast<SpanKind>(k);
  return std::nullopt;
}

int lane_sort_index(Lane lane) {
  switch (lane.kind) {
    case LaneKind::Replica: return 3 * lane.index;
    case LaneKind::Device: return 3 * lane.index + 1;
    case LaneKind::CommStream: return 3 * lane.index + 2;
    case LaneKind::Worker: return 1'000'000 + lane.index;
    case LaneKind::Server: return 2'000'000 + lane.index;
    case LaneKind::Run: return 3'000'000;
  }
  return 3'000'000;
}

namespace {
std::string lane_name_in_process(Lane lane) {
  const std::string i = std::to_string(lane.index);
  switch (lane.kind) {
    case LaneKind::Replica: return "replica " + i;
    case LaneKind::CommStream: return "replica " + i + " comm";
    case LaneKind::Device: return "replica " + i + " device";
    case LaneKind::Worker: return "worker " + i;
    case LaneKind::Server: return "server " + i;
    case LaneKind::Run: return "run";
  }
  return "lane " + i;
}
}  // namespace

std::string lane_name(Lane lane) {
  const std::string name = lane_name_in_process(lane);
  return lane.rank < 0 ? name : "rank " + std::to_string(lane.rank) + " \u00b7 " + name;
}

}  // namespace strata::trace
