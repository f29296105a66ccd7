#pragma once
// What writing, merging and reading Strata's Chrome trace files share: the
// fixed thread id of each lane, and one trace file read and checked, so the
// merge and the reader accept and refuse exactly the same files.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trace/Span.h"

namespace strata::trace {

// Objects keep their keys in the order written, so the files read naturally
// (name, category, times, then where).
using TraceJson = nlohmann::ordered_json;

// The lane's thread id in a trace file: stable across runs and ranks, so the
// same lane lines up under every process (docs/timeline.md lists them). The
// rank is the event's pid, not part of the id.
int lane_tid(Lane lane);
// The lane a thread id stands for (rank -1); nullopt for an id no Strata
// lane has.
std::optional<Lane> lane_of_tid(int64_t tid);

// One Strata trace file as written, per rank or merged.
struct TraceDocument {
  TraceJson events;  // the traceEvents array, times as in the file
  std::string run_name;
  std::vector<int64_t> ranks;      // a per-rank file's rank; every rank of a merged file
  std::vector<std::string> hosts;  // beside ranks ("" where the file does not say)
  double clock_offset_us = 0;      // what puts the events' ts on rank 0's clock
  // Spans left out when the file reached its size limit (ChromeTraceWriter),
  // and the step of the first of them (-1: none).
  int64_t spans_left_out = 0;
  int64_t first_step_left_out = -1;
};

// Reads and checks `path`. Throws bad_input naming the file and the reason
// when it cannot be read, is empty, ends early (a `.partial` file a run left
// when it stopped before finishing its trace), is not JSON, or is not a
// Strata trace (no otherData.strata_trace, no traceEvents array).
TraceDocument read_trace_document(const std::string& path);

}  // namespace strata::trace
