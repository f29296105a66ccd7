#include "trace/ChromeTraceReader.h"

#include <algorithm>

#include "core/Error.h"
#include "trace/ChromeTraceFile.h"

namespace strata::trace {

TraceContents read_chrome_trace(const std::string& path) {
  TraceDocument doc = read_trace_document(path);
  TraceContents out;
  out.path = path;
  out.run_name = doc.run_name;
  out.spans_left_out = doc.spans_left_out;
  out.first_step_left_out = doc.first_step_left_out;
  for (size_t i = 0; i < doc.ranks.size(); ++i) out.ranks.push_back({static_cast<int>(doc.ranks[i]), doc.hosts[i]});
  std::sort(out.ranks.begin(), out.ranks.end(), [](const TraceRank& a, const TraceRank& b) { return a.rank < b.rank; });
  // Lanes are told apart by rank only where a rank other than 0 is present:
  // a single process's trace reads as it was recorded.
  const bool ranked = out.ranks.size() > 1 || (out.ranks.size() == 1 && out.ranks[0].rank != 0);

  auto fail = [&](size_t event, const std::string& why) {
    return bad_input("'" + path + "' is not a Strata trace file (event " + std::to_string(event) + " " + why + ")");
  };
  for (size_t i = 0; i < doc.events.size(); ++i) {
    const TraceJson& e = doc.events[i];
    if (!e.is_object()) throw fail(i, "is not an object");
    const auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || ph->get<std::string>() != "X") continue;  // metadata
    const auto name = e.find("name"), ts = e.find("ts"), dur = e.find("dur"), pid = e.find("pid"), tid = e.find("tid");
    if (ts == e.end() || !ts->is_number() || dur == e.end() || !dur->is_number())
      throw fail(i, "is a span without numeric ts and dur");
    if (pid == e.end() || !pid->is_number_integer() || tid == e.end() || !tid->is_number_integer())
      throw fail(i, "is a span without an integer pid and tid");
    const std::optional<SpanKind> kind = name != e.end() && name->is_string() ? parse_span_kind(name->get<std::string>())
                                                                              : std::nullopt;
    std::optional<Lane> lane = lane_of_tid(tid->get<int64_t>());
    if (!kind || !lane) {
      ++out.skipped;
      continue;
    }
    if (ranked) lane->rank = static_cast<int>(pid->get<int64_t>());
    Span s;
    s.kind = *kind;
    s.lane = *lane;
    s.start_us = ts->get<double>() + doc.clock_offset_us;
    s.duration_us = dur->get<double>();
    if (const auto args = e.find("args"); args != e.end() && args->is_object()) {
      if (const auto step = args->find("step"); step != args->end() && step->is_number_integer())
        s.step = step->get<int64_t>();
      if (const auto bytes = args->find("bytes"); bytes != args->end() && bytes->is_number_integer())
        s.bytes = bytes->get<int64_t>();
    }
    out.spans.push_back(s);
  }
  // Stable: spans starting together keep the file's order (a step's frame
  // before the work it holds).
  std::stable_sort(out.spans.begin(), out.spans.end(), [](const Span& a, const Span& b) { return a.start_us < b.start_us; });
  return out;
}

}  // namespace strata::trace
