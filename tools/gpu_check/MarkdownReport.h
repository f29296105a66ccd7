#pragma once
// The report of a GPU check run as markdown: a header (date, device, seed,
// command line), one table per section and a summary line, so a run on a
// GPU machine can be committed beside the code it checked (docs/).
#include <cstdint>
#include <string>
#include <vector>

#include "CheckRecord.h"

namespace strata::gpu_check {

struct ReportHeader {
  std::string date;         // "2026-11-30 18:40 UTC"
  std::string device;       // "gpu:0"
  std::string device_name;  // from list_devices(), or a note why there is none
  uint64_t seed = 0;
  std::string command;  // how to run it again
};

struct SectionResult {
  std::string name, title;
  std::vector<CheckRecord> records;
  double seconds = 0;
  std::string appendix;  // markdown after the table (the benchmark's figures)
};

int failures(const SectionResult& section);
// "All 142 checks passed." or "3 of 142 checks failed (ops: 3)."
std::string summary_line(const std::vector<SectionResult>& sections);
// not_run: the sections chosen but not (yet) run; the report then says the
// run stopped before them, which is what a reader sees if it never went on.
std::string render_markdown_report(const ReportHeader& header, const std::vector<SectionResult>& sections,
                                   const std::vector<std::string>& not_run = {});
// Text for a markdown table cell: a '|' would end the cell, a newline the row.
std::string table_cell(const std::string& text);
// An error or tolerance as the console and the report print it ("0", "exact", "1.2e-06", "inf").
std::string format_error(double e);
std::string format_tolerance(double t);

}  // namespace strata::gpu_check
