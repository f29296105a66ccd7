#pragma once
// Strata trace files read back into spans (the dashboard's Timeline tab opens
// them): a run folder's trace.json, one rank's file, or a merged file of
// several ranks.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/Span.h"

namespace strata::trace {

struct TraceRank {
  int rank = 0;
  std::string host;  // "" when the file does not say
};

struct TraceContents {
  std::string path;
  std::string run_name;
  std::vector<TraceRank> ranks;  // ascending
  // By start time, on rank 0's clock (each file's clock_offset_us added).
  // When the file holds several ranks, or one other than 0, each span's
  // lane carries its rank (the event's pid), so replica 0 of rank 0 and
  // replica 0 of rank 1 are different lanes; a single rank 0 keeps rank -1
  // and reads exactly as it was recorded.
  std::vector<Span> spans;
  // Complete events of a kind or a thread id this version does not know (a
  // newer writer's): left out rather than refusing the whole file.
  int64_t skipped = 0;
  // Spans the writer left out when the file reached its size limit (the
  // file holds the run's beginning), and the first step they belong to (-1: none).
  int64_t spans_left_out = 0;
  int64_t first_step_left_out = -1;
};

// Throws bad_input naming the file and the reason, as merge_chrome_traces
// does for the same files (read_trace_document), and for a span event
// without its times or process.
TraceContents read_chrome_trace(const std::string& path);

}  // namespace strata::trace
