#include "ConvolutionChoices.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace strata::gpu_check {

std::string convolution_choices_table(const std::vector<ConvolutionChoice>& choices, const std::set<int64_t>& batches) {
  std::vector<const ConvolutionChoice*> rows;
  std::vector<std::string> ways;  // every way any row timed, in the order first met
  for (const ConvolutionChoice& c : choices) {
    if (!batches.empty() && !batches.count(c.window.batch)) continue;
    rows.push_back(&c);
    for (const auto& [way, ms] : c.timed_ms)
      if (std::find(ways.begin(), ways.end(), way) == ways.end()) ways.push_back(way);
  }
  if (rows.empty()) return "No convolution way was chosen by timing on this device.\n\n";
  std::string md = "### Convolution ways chosen\n\n| input (NHWC) | kernel | filters | direction | chosen |";
  for (const std::string& w : ways) md += " " + w + " |";
  md += "\n|---|---|---:|---|---|";
  for (size_t i = 0; i < ways.size(); ++i) md += "---:|";
  md += "\n";
  for (const ConvolutionChoice* c : rows) {
    const Window2D& w = c->window;
    char head[200];
    std::snprintf(head, sizeof head, "| %lldx%lldx%lldx%lld | %lldx%lld s%lld | %lld | %s | %s |",
                  static_cast<long long>(w.batch), static_cast<long long>(w.height), static_cast<long long>(w.width),
                  static_cast<long long>(w.channels), static_cast<long long>(w.kernel_h), static_cast<long long>(w.kernel_w),
                  static_cast<long long>(w.stride_h), static_cast<long long>(c->filters), c->direction.c_str(),
                  c->timed_ms.empty() ? (c->way + " (untimed)").c_str() : c->way.c_str());
    md += head;
    for (const std::string& way : ways) {
      const auto it = std::find_if(c->timed_ms.begin(), c->timed_ms.end(), [&](const auto& t) { return t.first == way; });
      char cell[48] = "";
      if (it != c->timed_ms.end()) {
        if (std::isfinite(it->second)) std::snprintf(cell, sizeof cell, "%.3f ms", it->second);
        else std::snprintf(cell, sizeof cell, "refused");
      }
      md += std::string(" ") + cell + " |";
    }
    md += "\n";
  }
  return md +
         "\nEach way's best of two timed runs after a first, at the shape's first call outside a graph "
         "capture (empty: the way is not offered for the shape).\n\n";
}

}  // namespace strata::gpu_check
