// strata-gpu-check: checks a device backend against the CPU backend, section
// by section, on the machine it runs on. Qt-free, so it builds and runs on a
// GPU server without the dashboard's dependencies (docs/architecture.md §7). Exit codes:
// 0 every check passed, 1 a check failed or the report could not be written,
// 2 bad arguments or no such device (nothing was checked).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "MarkdownReport.h"
#include "Sections.h"
#include "backend/Backend.h"
#include "core/Device.h"
#include "core/Error.h"

using namespace strata;
using namespace strata::gpu_check;

namespace {

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: strata-gpu-check --device DEVICE [options]\n\n"
               "Runs a device's backend beside the CPU backend on the same random inputs and\n"
               "compares the results, printing one line per check.\n\n"
               "options:\n"
               "  --device DEVICE     the device under test: gpu:N, or sim:N (the simulated accelerator)\n"
               "  --sections A,B      sections to run (default: all but bench-tf32 and bench-nondet;\n"
               "                      see --list-sections)\n"
               "  --report FILE.md    write a markdown report\n"
               "  --log FILE          write the printed lines to FILE too\n"
               "  --seed N            seed of the random inputs (default: a fresh one, printed)\n"
               "  --peer FILE         the PyTorch peer's figures (bench/pytorch_gpu_peer.py output) for the\n"
               "                      benchmark section's table\n"
               "  --list-sections     print the sections and exit\n\n"
               "exit codes: 0 all checks passed, 1 a check failed or the report could not be written,\n"
               "2 bad arguments or no such device (nothing checked)\n");
}

// Lines go to stdout and, with --log, to a file; flushed at once, so a crash
// in a kernel still leaves the lines before it.
class Printer {
public:
  void open_log(const std::string& path) {
    log_.open(path, std::ios::out | std::ios::trunc);
    if (!log_) throw bad_input("--log: cannot write " + path);
  }
  void line(const std::string& text) {
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
    if (log_.is_open()) log_ << text << std::endl;
  }

private:
  std::ofstream log_;
};

std::string check_line(const CheckRecord& r) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s  %-27s %-58s err %-9s tol %s", r.passed ? "PASS" : "FAIL", r.op.c_str(),
                r.shape.c_str(), format_error(r.max_error).c_str(), format_tolerance(r.tolerance).c_str());
  std::string s = buf;
  if (!r.passed) s += "\n      " + r.detail;
  return s;
}

uint64_t parse_seed(const std::string& v) {
  try {
    size_t pos = 0;
    const unsigned long long n = std::stoull(v, &pos);
    if (pos != v.size() || v.front() == '-') throw 0;
    return n;
  } catch (...) {
    throw bad_input("--seed: expected a non-negative integer, got '" + v + "'");
  }
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string part = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The device's name, and for a GPU its memory, compute capability and the
// driver's and runtime's versions, which a report must carry to be read later.
std::string device_name(const Device& device) {
  for (const auto& info : list_devices())
    if (info.device == device) {
      std::string s = info.name;
      if (info.memory_bytes > 0) {
        char mem[64];
        std::snprintf(mem, sizeof mem, ", %.1f GiB", static_cast<double>(info.memory_bytes) / (1 << 30));
        s += mem;
      }
      return info.detail.empty() ? s : s + ", " + info.detail;
    }
  if (device.kind == DeviceKind::Sim) return "simulated accelerator: the CPU kernels on a device thread";
  return "not listed by list_devices()";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_text, sections_text, report_path, log_path, peer_path;
  bool have_seed = false;
  uint64_t seed = 0;
  Printer out;
  auto sections = all_sections();
  std::vector<CheckSection*> chosen;
  Device device;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw bad_input(a + " needs a value");
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        usage(stdout);
        return 0;
      } else if (a == "--list-sections") {
        for (const auto& s : sections) std::printf("%-12s %s\n", s->name().c_str(), s->title().c_str());
        return 0;
      } else if (a == "--device") {
        device_text = value();
      } else if (a == "--sections") {
        sections_text = value();
      } else if (a == "--report") {
        report_path = value();
      } else if (a == "--log") {
        log_path = value();
      } else if (a == "--peer") {
        peer_path = value();
        if (!std::ifstream(peer_path)) throw bad_input("--peer: cannot read " + peer_path);
      } else if (a == "--seed") {
        seed = parse_seed(value());
        have_seed = true;
      } else {
        throw bad_input("unknown option '" + a + "'");
      }
    }
    if (device_text.empty()) throw bad_input("--device is required (e.g. --device gpu:0)");
    device = Device::parse(device_text);
    if (device.is_host()) throw bad_input("--device " + device.str() + " is the host: give the device to compare with it (gpu:N, sim:N)");
    // Any device error (no GPU, no CUDA in this build, sim index out of range) is the user's to fix.
    (void)backend_for(device);
    if (sections_text.empty()) {
      for (auto& s : sections)
        if (s->by_default()) chosen.push_back(s.get());
    } else {
      std::set<std::string> named;
      for (const auto& name : split(sections_text)) {
        bool known = false;
        for (auto& s : sections) known = known || s->name() == name;
        if (!known) {
          std::string all;
          for (auto& s : sections) all += (all.empty() ? "" : ", ") + s->name();
          throw bad_input("--sections: unknown section '" + name + "' (known: " + all + ")");
        }
        named.insert(name);
      }
      // In the sections' own order, whatever the order named: failures, which
      // may leave a hung run holding the device, stays last.
      for (auto& s : sections)
        if (named.count(s->name())) chosen.push_back(s.get());
      if (chosen.empty()) throw bad_input("--sections: no section named");
    }
    if (!log_path.empty()) out.open_log(log_path);
    if (!report_path.empty() && !std::ofstream(report_path, std::ios::app))
      throw bad_input("--report: cannot write " + report_path);
  } catch (const std::exception& e) {
    // Bad arguments, and a device this build or machine cannot open: nothing was checked.
    std::fprintf(stderr, "strata-gpu-check: %s\n(strata-gpu-check --help for usage)\n", e.what());
    return 2;
  }
  if (!have_seed) seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();

  ReportHeader header{utc_now(), device.str(), device_name(device), seed, ""};
  header.command = "strata-gpu-check --device " + device.str() + " --seed " + std::to_string(seed);
  if (!sections_text.empty()) header.command += " --sections " + sections_text;
  out.line("strata-gpu-check: " + header.device + " (" + header.device_name + ") against the CPU backend, seed " +
           std::to_string(seed) + ", " + header.date);

  std::vector<SectionResult> results;
  bool hung = false;  // a section left a hung run behind (CheckSection::left_work_running)
  // The report is rewritten after every section, so a run cut short (a crash
  // in a kernel, the GPU machine's time limit) still leaves one that says
  // which sections finished and which never ran.
  auto write_report = [&](size_t sections_done) {
    if (report_path.empty()) return true;
    std::vector<std::string> not_run;
    for (size_t i = sections_done; i < chosen.size(); ++i) not_run.push_back(chosen[i]->name());
    std::ofstream report(report_path, std::ios::out | std::ios::trunc);
    report << render_markdown_report(header, results, not_run);
    if (!report) std::fprintf(stderr, "strata-gpu-check: could not write the report to %s\n", report_path.c_str());
    return static_cast<bool>(report);
  };
  for (CheckSection* section : chosen) {
    if (!write_report(results.size())) return 1;
    out.line("== " + section->name() + ": " + section->title());
    SectionResult result{section->name(), section->title(), {}, 0, {}};
    const auto start = std::chrono::steady_clock::now();
    std::vector<CheckRecord> streamed;
    try {
      result.records = section->run({device, seed,
                                     [&](const CheckRecord& r) {
                                       out.line(check_line(r));
                                       streamed.push_back(r);
                                     },
                                     peer_path});
      result.appendix = section->appendix();
      if (!result.appendix.empty()) out.line(result.appendix);
      // Records a section returned without announcing them are printed now.
      for (size_t i = streamed.size(); i < result.records.size(); ++i) out.line(check_line(result.records[i]));
    } catch (const std::exception& e) {
      // The section itself broke (not one check): keep what it finished, add
      // the failure, and go on with the next section.
      result.records = std::move(streamed);
      CheckRecord r{section->name(), "(whole section)", std::numeric_limits<double>::infinity(), 0, false,
                    std::string("section stopped: ") + e.what()};
      out.line(check_line(r));
      result.records.push_back(r);
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char secs[64];
    std::snprintf(secs, sizeof secs, " in %.1f s", result.seconds);
    out.line("   " + std::to_string(result.records.size() - static_cast<size_t>(failures(result))) + " of " +
             std::to_string(result.records.size()) + " passed" + secs);
    results.push_back(std::move(result));
    // A hung run still holds the device: the sections after it are not
    // run (the report names them), and the process ends below without
    // tearing the device down, which would wait for that run.
    if (section->left_work_running()) {
      hung = true;
      break;
    }
  }
  const std::string summary = summary_line(results);
  out.line(summary);

  const bool reported = write_report(results.size());
  if (reported && !report_path.empty()) out.line("report: " + report_path);
  if (hung) {
    out.line("a section left a hung run behind: ending without tearing the device down");
    std::fflush(nullptr);
    std::_Exit(1);
  }
  if (!reported) return 1;
  for (const auto& r : results)
    if (failures(r) > 0) return 1;
  return 0;
}
