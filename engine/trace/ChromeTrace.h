#pragma once
// Trace files in the Chrome trace event format (JSON), which Perfetto and
// chrome://tracing open: one process per rank, one thread track per lane.
#include <cstdio>
#include <string>
#include <vector>

#include "trace/Span.h"

namespace strata::trace {

struct TraceMetadata {
  std::string run_name;
  int rank = 0;
  std::string host;
  // Added to this process's span times to put them on rank 0's clock
  // (measured at start-up under mpirun; 0 for rank 0 and single processes).
  double clock_offset_us = 0;
};

// Streams spans into a trace file as they come. The file is written under a
// temporary name and renamed on close(), so a crash never leaves a
// half-written file under the user's name. It holds one process, meta.rank:
// the spans' own Lane::rank is not written. read_chrome_trace
// (ChromeTraceReader.h) reads the files back.
//
// max_bytes (0: none) bounds the file: a long traced run would otherwise
// fill the disk its checkpoints need, and a browser cannot open a file of
// many GiB anyway. Spans that would take the file past it are left out and
// counted (otherData's spans_left_out); the file stays a complete trace of
// the run's beginning.
class ChromeTraceWriter {
public:
  ChromeTraceWriter(const std::string& path, TraceMetadata meta, int64_t max_bytes = 0);  // throws naming the path
  ~ChromeTraceWriter();  // closes (finishes the file) if close() was not called
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;
  void write(const std::vector<Span>& spans);
  void close();
  int64_t spans_written() const { return written_; }
  // Spans left out since the file reached max_bytes, and the earliest step
  // among them (-1: none, or only spans of no step, such as an evaluation).
  int64_t spans_left_out() const { return left_out_; }
  int64_t first_step_left_out() const { return first_step_left_out_; }

private:
  void leave_out(const Span& s);

  std::string path_, partial_;
  TraceMetadata meta_;
  int64_t max_bytes_;
  std::FILE* file_ = nullptr;
  int64_t bytes_ = 0;  // written so far
  int64_t written_ = 0;
  int64_t left_out_ = 0;
  int64_t first_step_left_out_ = -1;
  std::vector<Lane> named_lanes_;  // lanes whose thread_name metadata is written
};

// Merges per-rank trace files into one, each rank's times shifted by its
// clock offset so lanes of different machines line up; otherData lists
// the ranks and their hosts. Throws naming the file and the reason when an
// input is not a Strata trace (read_trace_document, ChromeTraceFile.h).
void merge_chrome_traces(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace strata::trace
