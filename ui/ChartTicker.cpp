#include "ChartTicker.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace strata::ui {

namespace {
constexpr double kMantissas[] = {1.0, 2.0, 2.5, 5.0};

// The nice step `i` places from 10^0 (i = 4: 10, i = -1: 0.5).
double nice(int i) {
  const int n = static_cast<int>(std::size(kMantissas));
  const int decade = i >= 0 ? i / n : -((-i + n - 1) / n);
  return kMantissas[i - decade * n] * std::pow(10.0, decade);
}

// Ticks a step puts inside the range.
double ticks_in(const QCPRange& range, double step) {
  return std::floor(range.upper / step + 1e-9) - std::ceil(range.lower / step - 1e-9) + 1;
}
}  // namespace

double ChartTicker::getTickStep(const QCPRange& range) {
  largest_ = std::max(std::abs(range.lower), std::abs(range.upper));
  const double raw = range.size() / std::max(1, tickCount());
  if (!(raw > 0) || !std::isfinite(raw)) return step_ = 1.0;
  // The smallest nice step at least the raw one (as many ticks as fit,
  // never more), but one with two ticks in the range at least: a lone "0"
  // says nothing of the scale.
  int i = static_cast<int>(std::floor(std::log10(raw))) * static_cast<int>(std::size(kMantissas));
  while (nice(i) < raw * (1 - 1e-9)) ++i;
  while (ticks_in(range, nice(i)) < 2 && nice(i) > range.size() * 1e-3) --i;
  // Whole steps: 1 at least, and 5 rather than 2.5.
  if (whole_)
    while (nice(i) < 1 || nice(i) != std::round(nice(i))) ++i;
  return step_ = nice(i);
}

QString ChartTicker::getTickLabel(double tick, const QLocale& locale, QChar, int) {
  if (std::abs(tick) < step_ * 1e-6) tick = 0;  // -0.0000 from rounding
  // Suffixes once the axis reaches five digits, each tick its own: 400k,
  // 800k, 1.2M.
  double unit = 1;
  const char* suffix = "";
  if (largest_ >= 1e4)
    for (const auto& [u, s] : {std::pair{1e9, "G"}, {1e6, "M"}, {1e3, "k"}})
      if (std::abs(tick) >= u) {
        unit = u;
        suffix = s;
        break;
      }
  // As many decimals as the step has in that unit (2.5 needs one more than
  // 2 or 5).
  const double scaled = step_ / unit;
  int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(scaled) + 1e-9)));
  const double mantissa = scaled * std::pow(10.0, decimals);
  if (std::abs(mantissa - std::round(mantissa)) > 1e-6) ++decimals;
  return locale.toString(tick / unit, 'f', std::min(decimals, 12)) + QString::fromLatin1(suffix);
}

}  // namespace strata::ui
