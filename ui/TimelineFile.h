#pragma once
#include <QCoreApplication>
#include <QString>
#include <cstdint>
#include <map>
#include <vector>

#include "trace/ChromeTraceReader.h"
#include "trace/Span.h"

namespace strata::ui {

// A trace file shown in the Timeline tab: all its spans, by step (a file is
// read once and browsed, unlike a live run's last few steps), the line that
// names it, and which of its steps are drawn.
class TimelineFile {
  Q_DECLARE_TR_FUNCTIONS(TimelineFile)
public:
  // Drawn from its last `steps_shown` steps.
  TimelineFile(const trace::TraceContents& contents, int steps_shown);

  const QString& path() const { return path_; }
  // "trace.json: run “x” · ranks 0, 1 · host · 12 steps".
  const QString& description() const { return description_; }
  int stepCount() const { return static_cast<int>(steps_.size()); }
  // The file's first and last step numbers (0 when it has none).
  int64_t lowestStep() const { return steps_.empty() ? 0 : steps_.begin()->first; }
  int64_t highestStep() const { return steps_.empty() ? 0 : steps_.rbegin()->first; }

  int64_t firstStep() const { return first_; }
  // Draws from its first step at or after `step`; false when that was so already.
  bool setFirstStep(int64_t step);
  // Appends the spans of up to `n` steps from the first drawn to `spans`
  // and their numbers to `steps`.
  void window(int n, std::vector<trace::Span>& spans, std::vector<int64_t>& steps) const;

private:
  QString path_, description_;
  std::map<int64_t, std::vector<trace::Span>> steps_;  // every step of the file
  std::vector<trace::Span> unstepped_;
  int64_t first_ = 0;  // the first step drawn
};

}  // namespace strata::ui
