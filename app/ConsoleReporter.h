#pragma once
#include <cstdio>
#include <string>

#include "train/Events.h"

namespace strata {

// Human-readable progress for strata-run's text mode: a live bar per epoch
// (redrawn in place on a terminal, a line every ~10% otherwise) with the
// per-replica losses, and one summary line per epoch.
class ConsoleReporter final : public EventSink {
public:
  explicit ConsoleReporter(std::FILE* out);
  void emit(const Event& event) override;

private:
  void progress(const StepEvent& s, bool final_line);

  std::FILE* out_;
  bool tty_;
  RunStartedEvent run_;
  int64_t last_printed_step_ = -1;
  double last_draw_ = -1;
  bool bar_open_ = false;
  StepEvent last_step_;
};

}  // namespace strata
