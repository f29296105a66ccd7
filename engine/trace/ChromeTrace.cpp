#include "trace/ChromeTrace.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "trace/ChromeTraceFile.h"

namespace strata::trace {

namespace {

using Json = TraceJson;

// Times are written absolute (the process's monotonic clock, in
// microseconds) and with round-trip precision, so merging adds the clock
// offset to exactly the value recorded; Perfetto and chrome://tracing show
// times from the first event anyway.

std::string_view category(SpanKind k) {
  switch (k) {
    case SpanKind::Step:
    case SpanKind::Forward:
    case SpanKind::Backward:
    case SpanKind::Optimizer:
    case SpanKind::Evaluation: return "compute";
    case SpanKind::AllReduce:
    case SpanKind::ReduceScatter:
    case SpanKind::AllGather:
    case SpanKind::Pull:
    case SpanKind::Push: return "communication";
    case SpanKind::DataWait:
    case SpanKind::HostToDevice: return "data";
    case SpanKind::Checkpoint: return "io";
    case SpanKind::CollectiveWait:
    case SpanKind::StalenessWait: return "wait";
  }
  return "compute";
}

// Names come from the user (run, host): invalid UTF-8 is replaced rather than
// thrown on halfway through a file.
std::string dumps(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json metadata_event(const char* name, int pid, int tid, Json args) {
  return Json{{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

// The file is created under path + ".partial" and renamed over `path` only
// when complete, so a crash leaves no half-written file under the user's name.
std::FILE* open_partial(const std::string& path, const std::string& partial) {
  std::FILE* f = std::fopen(partial.c_str(), "wb");
  if (!f) throw bad_input("cannot write trace file '" + path + "': " + std::strerror(errno));
  return f;
}

void finish_partial(std::FILE* f, const std::string& path, const std::string& partial) {
  const bool write_failed = std::ferror(f) != 0;
  const int write_errno = errno;
  if (std::fclose(f) != 0 || write_failed) {
    const int err = write_failed ? write_errno : errno;
    std::remove(partial.c_str());
    throw runtime_error("writing trace file '" + path + "' failed: " + std::strerror(err));
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    // The trace is complete; leave it where it is rather than lose it.
    throw runtime_error("cannot rename trace file '" + partial + "' to '" + path + "': " + std::strerror(errno) +
                        " (the trace is left in '" + partial + "')");
  }
}

void put(std::FILE* f, const std::string& s) { std::fwrite(s.data(), 1, s.size(), f); }

// The earlier of two steps that lost spans, -1 standing for none (or only
// spans of no step).
int64_t earliest_step(int64_t a, int64_t b) {
  if (a < 0) return b;
  return b < 0 ? a : std::min(a, b);
}

Json other_data(const TraceMetadata& meta) {
  return Json{{"strata_trace", 1},
              {"run", meta.run_name},
              {"rank", meta.rank},
              {"host", meta.host},
              {"clock_offset_us", std::isfinite(meta.clock_offset_us) ? meta.clock_offset_us : 0.0}};
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(const std::string& path, TraceMetadata meta, int64_t max_bytes)
    : path_(path), partial_(path + ".partial"), meta_(std::move(meta)), max_bytes_(std::max<int64_t>(0, max_bytes)) {
  file_ = open_partial(path_, partial_);
  const std::string process = "rank " + std::to_string(meta_.rank) + (meta_.host.empty() ? "" : " (" + meta_.host + ")");
  const std::string head = "{\"traceEvents\":[\n" +
                           dumps(metadata_event("process_name", meta_.rank, 0, {{"name", process}})) + ",\n" +
                           dumps(metadata_event("process_sort_index", meta_.rank, 0, {{"sort_index", meta_.rank}}));
  put(file_, head);
  bytes_ = static_cast<int64_t>(head.size());
}

ChromeTraceWriter::~ChromeTraceWriter() {
  try {
    close();
  } catch (...) {
    // A destructor cannot report; close() explicitly to see the error.
  }
}

void ChromeTraceWriter::write(const std::vector<Span>& spans) {
  if (!file_) throw runtime_error("trace file '" + path_ + "' is already closed");
  std::string out;  // the whole batch, one write
  out.reserve(spans.size() * 160);
  for (const Span& s : spans) {
    // JSON has no NaN or infinity; such a span cannot be placed anyway.
    if (!std::isfinite(s.start_us) || !std::isfinite(s.duration_us)) continue;
    if (left_out_ > 0) {  // full: once a span is left out, every later one is, so the file has no holes
      leave_out(s);
      continue;
    }
    const size_t before = out.size();
    // The file is one process's (pid meta.rank): a lane's own rank is not written.
    const Lane lane{s.lane.kind, s.lane.index};
    const int tid = lane_tid(lane);
    if (std::find(named_lanes_.begin(), named_lanes_.end(), lane) == named_lanes_.end()) {
      named_lanes_.push_back(lane);
      out += ",\n" + dumps(metadata_event("thread_name", meta_.rank, tid, {{"name", lane_name(lane)}}));
      out += ",\n" + dumps(metadata_event("thread_sort_index", meta_.rank, tid, {{"sort_index", lane_sort_index(lane)}}));
    }
    // Formatted by hand, not through a JSON object: this runs for every span
    // of every step, and the names are fixed ASCII. Doubles are written
    // shortest-exact (to_chars), so a merge shifts exactly the recorded value.
    auto text = [&](std::string_view t) { out.append(t); };
    auto number = [&](auto v) {
      char digits[32];
      out.append(digits, std::to_chars(digits, digits + sizeof(digits), v).ptr);
    };
    text(",\n{\"name\":\"");
    text(span_kind_name(s.kind));
    text("\",\"cat\":\"");
    text(category(s.kind));
    text("\",\"ph\":\"X\",\"ts\":");
    number(s.start_us);
    text(",\"dur\":");
    number(std::max(0.0, s.duration_us));
    text(",\"pid\":");
    number(meta_.rank);
    text(",\"tid\":");
    number(tid);
    text(",\"args\":{\"step\":");
    number(s.step);
    if (s.bytes != 0) {
      text(",\"bytes\":");
      number(s.bytes);
    }
    text("}}");
    if (max_bytes_ > 0 && bytes_ + static_cast<int64_t>(out.size()) > max_bytes_) {
      out.resize(before);  // this span (and a new lane's names) would pass the limit
      leave_out(s);
      continue;
    }
    ++written_;
  }
  put(file_, out);
  bytes_ += static_cast<int64_t>(out.size());
}

void ChromeTraceWriter::leave_out(const Span& s) {
  ++left_out_;
  // The earliest step that lost a span: spans come by start time, and
  // another lane (a later replica, a worker a round behind) may still be in
  // an earlier step than the span that first did not fit.
  first_step_left_out_ = earliest_step(first_step_left_out_, s.step);
}

void ChromeTraceWriter::close() {
  if (!file_) return;
  std::FILE* f = file_;
  file_ = nullptr;
  Json tail{{"displayTimeUnit", "ms"}, {"otherData", other_data(meta_)}};
  if (left_out_ > 0) {
    tail["otherData"]["max_bytes"] = max_bytes_;
    tail["otherData"]["spans_left_out"] = left_out_;
    tail["otherData"]["first_step_left_out"] = first_step_left_out_;
  }
  std::string text = dumps(tail);  // {"displayTimeUnit":...}: its members continue the top-level object
  put(f, "\n],");
  put(f, text.substr(1));
  put(f, "\n");
  finish_partial(f, path_, partial_);
}

void merge_chrome_traces(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) throw bad_input("no trace files to merge");
  Json events = Json::array();
  struct RankSource {
    std::string file, host;
  };
  std::map<int64_t, RankSource> rank_files;  // which input holds each rank
  std::string run_name;
  int64_t left_out = 0, first_step_left_out = -1;  // of every input that reached its limit
  for (const std::string& input : inputs) {
    TraceDocument doc = read_trace_document(input);
    left_out += doc.spans_left_out;
    first_step_left_out = earliest_step(first_step_left_out, doc.first_step_left_out);
    for (size_t i = 0; i < doc.ranks.size(); ++i) {
      auto [it, inserted] = rank_files.emplace(doc.ranks[i], RankSource{input, doc.hosts[i]});
      if (!inserted)
        throw bad_input("trace files '" + it->second.file + "' and '" + input + "' both hold rank " +
                        std::to_string(doc.ranks[i]));
    }
    if (run_name.empty()) run_name = doc.run_name;
    for (Json& event : doc.events) {
      if (event.is_object() && event.contains("ts") && event["ts"].is_number())
        event["ts"] = event["ts"].get<double>() + doc.clock_offset_us;
      events.push_back(std::move(event));
    }
  }

  Json ranks = Json::array(), hosts = Json::array();
  for (const auto& [rank, source] : rank_files) {
    ranks.push_back(rank);
    hosts.push_back(source.host);
  }
  // Every time is on rank 0's clock now: the merged file's offset is 0.
  Json tail{{"displayTimeUnit", "ms"},
            {"otherData",
             {{"strata_trace", 1}, {"run", run_name}, {"ranks", ranks}, {"hosts", hosts}, {"clock_offset_us", 0.0}}}};
  if (left_out > 0) {
    tail["otherData"]["spans_left_out"] = left_out;
    tail["otherData"]["first_step_left_out"] = first_step_left_out;
  }
  const std::string partial = output + ".partial";
  std::FILE* f = open_partial(output, partial);
  // One event a line, like the per-rank files, rather than one huge line.
  put(f, "{\"traceEvents\":[");
  for (size_t i = 0; i < events.size(); ++i) put(f, (i ? ",\n" : "\n") + dumps(events[i]));
  put(f, "\n],");
  put(f, dumps(tail).substr(1));
  put(f, "\n");
  finish_partial(f, output, partial);
}

}  // namespace strata::trace
