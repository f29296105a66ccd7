#pragma once
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace strata {

// The whole of `s` as an integer of type I (digits, a minus for signed
// types; no spaces, no plus), or nullopt: empty, anything else in it, or out
// of I's range.
template <typename I>
std::optional<I> parse_integer(std::string_view s) {
  I value{};
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace strata
