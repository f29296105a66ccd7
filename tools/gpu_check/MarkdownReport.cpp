#include "MarkdownReport.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace strata::gpu_check {

std::string table_cell(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n') out += ' ';
    else out += ch;
  }
  return out;
}

std::string format_error(double e) {
  if (std::isinf(e)) return "inf";
  if (e == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", e);
  return buf;
}

std::string format_tolerance(double t) {
  if (t == 0) return "exact";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", t);
  return buf;
}

int failures(const SectionResult& section) {
  int n = 0;
  for (const auto& r : section.records) n += !r.passed;
  return n;
}

std::string summary_line(const std::vector<SectionResult>& sections) {
  size_t total = 0;
  int failed = 0;
  std::string where;
  for (const auto& s : sections) {
    total += s.records.size();
    const int f = failures(s);
    failed += f;
    if (f) where += (where.empty() ? "" : ", ") + s.name + ": " + std::to_string(f);
  }
  if (failed == 0) return "All " + std::to_string(total) + " checks passed.";
  return std::to_string(failed) + " of " + std::to_string(total) + " checks failed (" + where + ").";
}

std::string render_markdown_report(const ReportHeader& header, const std::vector<SectionResult>& sections,
                                   const std::vector<std::string>& not_run) {
  std::ostringstream md;
  md << "# Strata GPU check: " << header.device << "\n\n";
  md << "- date: " << header.date << "\n";
  md << "- device: " << header.device << " (" << header.device_name << ")\n";
  md << "- seed: " << header.seed << "\n";
  md << "- command: `" << header.command << "`\n\n";
  md << "Errors are max |device - cpu| / max(1, |cpu|) over each output; \"exact\" tolerances require equal values "
        "(bits for memory operations). Device outputs start as NaN, so an element a kernel never writes fails.\n\n";
  for (const auto& s : sections) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", s.seconds);
    md << "## " << s.name << ": " << s.title << "\n\n";
    md << s.records.size() - static_cast<size_t>(failures(s)) << " of " << s.records.size() << " passed in " << secs
       << " s.\n\n";
    if (!s.records.empty()) {
      md << "| result | op | shape | max error | tolerance | detail |\n";
      md << "|---|---|---|---:|---:|---|\n";
      for (const auto& r : s.records)
        md << "| " << (r.passed ? "pass" : "**FAIL**") << " | " << table_cell(r.op) << " | " << table_cell(r.shape) << " | "
           << format_error(r.max_error) << " | " << format_tolerance(r.tolerance) << " | " << table_cell(r.detail) << " |\n";
      md << "\n";
    }
    if (!s.appendix.empty()) md << s.appendix << "\n";
  }
  if (!not_run.empty()) {
    std::string names;
    for (const auto& n : not_run) names += (names.empty() ? "" : ", ") + n;
    md << "**The run stopped before these sections: " << names << ".** (The report is rewritten after each "
       << "section; this line stays if the program was killed or crashed before the next.)\n\n";
  }
  md << "**" << summary_line(sections) << "**\n";
  return md.str();
}

}  // namespace strata::gpu_check
