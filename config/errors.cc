// ConfigError and the text of errors.
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/internal.h"

namespace neardup::config {

ConfigError::ConfigError(const std::string& message)
    : std::runtime_error(message), errors_{message} {}

ConfigError::ConfigError(std::vector<std::string> messages)
    : std::runtime_error([&] {
        std::string lines;
        for (const auto& message : messages) lines += (lines.empty() ? "" : "\n") + message;
        return lines;
      }()),
      errors_(std::move(messages)) {}

namespace internal {

std::string printable(std::string_view value, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < value.size() && i < max; ++i) {
    auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += c == '\n' ? std::string("\\n") : std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (value.size() > max) out += "...";
  return out;
}

std::string quoted(std::string_view value) {
  // Appended, not `"'" + printable(value) + "'"`: GCC 12 warns (-Wrestrict) on
  // that operator+ in an optimized build, a false positive.
  std::string out(1, '\'');
  out += printable(value);
  out += '\'';
  return out;
}

std::string expected_message(const std::string& where, const std::string& expected,
                             const std::string& got) {
  return where + ": expected " + expected + ", got " + got;
}

[[noreturn]] void fail_expected(const std::string& where, const std::string& expected,
                                const std::string& got) {
  throw ConfigError(expected_message(where, expected, got));
}

}  // namespace internal

}  // namespace neardup::config
