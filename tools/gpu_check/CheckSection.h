#pragma once
// A named part of the GPU check: the operations against the CPU, the error
// messages, training steps, several devices, Fashion-MNIST runs, benchmarks,
// failures. Each lives in its own file and is listed in Sections.cpp; the
// program runs the ones asked for in that list's order, prints every record
// as it comes and reports them per section.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "CheckRecord.h"
#include "core/Device.h"

namespace strata::gpu_check {

struct SectionContext {
  Device device;  // the device under test (never the host)
  uint64_t seed;  // for every random input, so a failure can be replayed
  std::function<void(const CheckRecord&)> on_record;  // called as each check finishes
  std::string peer_results;  // --peer: the PyTorch peer's JSON lines, for the benchmark
};

// Appends `more` to `out`, announcing each record as it goes (on_record), for
// sections made of several checks that return their records together.
inline void announce(std::vector<CheckRecord>& out, std::vector<CheckRecord> more, const SectionContext& context) {
  for (auto& r : more) {
    if (context.on_record) context.on_record(r);
    out.push_back(std::move(r));
  }
}

class CheckSection {
public:
  virtual ~CheckSection() = default;
  // The name --sections takes ("ops").
  virtual std::string name() const = 0;
  // A heading for the report.
  virtual std::string title() const = 0;
  // Runs the section's checks. Engine errors inside a check are that check's
  // failure; an exception escaping here fails the whole section.
  virtual std::vector<CheckRecord> run(const SectionContext& context) = 0;
  // Markdown printed and reported after the records (figures that are not
  // pass/fail checks); empty for most sections. Valid after run().
  virtual std::string appendix() const { return {}; }
  // Whether a run that names no sections runs this one (else only when named).
  virtual bool by_default() const { return true; }
  // Whether run() left engine work behind on a thread of its own (a run
  // that hung): the check then ends without tearing the device down, which
  // would wait for that work.
  virtual bool left_work_running() const { return false; }
};

}  // namespace strata::gpu_check
