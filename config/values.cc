#include "config/values.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <vector>

namespace neardup::config {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Reads leading digits of `text` into `value`; false on none or overflow.
bool take_unsigned(std::string_view& text, std::uint64_t& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return false;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return true;
}

bool checked_mul_add(std::uint64_t& total, std::uint64_t count, std::uint64_t unit) {
  constexpr std::uint64_t kMax =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (count != 0 && unit > kMax / count) return false;
  if (total > kMax - count * unit) return false;
  total += count * unit;
  return true;
}

struct Unit {
  std::string_view name;
  std::uint64_t factor;
};

}  // namespace

std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t min,
                                          std::int64_t max) {
  if (text.empty() || text.front() == '+') return std::nullopt;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  // Longest unit names first so "ms" is not read as "m" followed by "s".
  static constexpr std::array<Unit, 5> kUnits{
      {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}}};
  if (text.empty() || !is_digit(text.front())) return std::nullopt;
  std::uint64_t total = 0;
  std::uint64_t count = 0;
  std::string_view rest = text;
  if (!take_unsigned(rest, count)) return std::nullopt;
  if (rest.empty()) {  // a bare integer: seconds
    if (!checked_mul_add(total, count, 1000)) return std::nullopt;
    return std::chrono::milliseconds(static_cast<std::int64_t>(total));
  }
  std::size_t last_unit = kUnits.size();  // units must strictly decrease: "1h30m", not "30m1h"
  while (true) {
    const Unit* unit = nullptr;
    std::size_t index = 0;
    for (; index < kUnits.size(); ++index) {
      const auto& candidate = kUnits[index];
      if (rest.substr(0, candidate.name.size()) == candidate.name &&
          (rest.size() == candidate.name.size() || !is_alpha(rest[candidate.name.size()]))) {
        unit = &candidate;
        break;
      }
    }
    if (unit == nullptr) return std::nullopt;
    // kUnits is ordered by size except "ms"; rank by factor instead of index.
    std::size_t rank = 0;
    for (const auto& other : kUnits) rank += other.factor < unit->factor ? 1 : 0;
    if (rank >= last_unit) return std::nullopt;
    last_unit = rank;
    if (!checked_mul_add(total, count, unit->factor)) return std::nullopt;
    rest.remove_prefix(unit->name.size());
    if (rest.empty()) break;
    if (!take_unsigned(rest, count) || rest.empty()) return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(total));
}

std::string format_duration(std::chrono::milliseconds duration) {
  static constexpr std::array<Unit, 4> kUnits{
      {{"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}}};
  if (duration.count() <= 0) return "0s";
  auto left = static_cast<std::uint64_t>(duration.count());
  std::string out;
  for (const auto& unit : kUnits) {
    if (left >= unit.factor) {
      out += std::to_string(left / unit.factor);
      out += unit.name;
      left %= unit.factor;
    }
  }
  return out;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  static constexpr std::array<Unit, 8> kUnits{{{"B", 1},
                                               {"KiB", 1ULL << 10},
                                               {"MiB", 1ULL << 20},
                                               {"GiB", 1ULL << 30},
                                               {"kB", 1000},
                                               {"KB", 1000},
                                               {"MB", 1'000'000},
                                               {"GB", 1'000'000'000}}};
  std::string_view rest = text;
  std::uint64_t count = 0;
  if (rest.empty() || !is_digit(rest.front()) || !take_unsigned(rest, count)) return std::nullopt;
  if (rest.size() > 1 && rest.front() == ' ') rest.remove_prefix(1);  // "1 GiB", not "1 "
  std::uint64_t factor = rest.empty() ? 1 : 0;
  for (const auto& unit : kUnits) {
    if (rest == unit.name) factor = unit.factor;
  }
  if (factor == 0) return std::nullopt;
  std::uint64_t total = 0;
  if (!checked_mul_add(total, count, factor)) return std::nullopt;
  return total;
}

std::string format_size(std::uint64_t bytes) {
  static constexpr std::array<Unit, 3> kUnits{
      {{"GiB", 1ULL << 30}, {"MiB", 1ULL << 20}, {"KiB", 1ULL << 10}}};
  for (const auto& unit : kUnits) {
    if (bytes >= unit.factor && bytes % unit.factor == 0) {
      return std::to_string(bytes / unit.factor) + std::string(unit.name);
    }
  }
  return std::to_string(bytes);
}

bool is_topic_name(std::string_view name) {
  if (name.empty() || name.size() > 249 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return is_alpha(c) || is_digit(c) || c == '.' || c == '_' || c == '-';
  });
}

bool is_json_pointer(std::string_view pointer) {
  if (pointer.size() < 2 || pointer.front() != '/') return false;
  for (std::size_t i = 0; i < pointer.size(); ++i) {
    if (pointer[i] == '~' &&
        (i + 1 >= pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1'))) {
      return false;
    }
  }
  return true;
}

bool is_broker_list(std::string_view text) {
  std::size_t start = 0;
  while (true) {
    auto comma = text.find(',', start);
    auto item =
        text.substr(start, comma == std::string_view::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!is_host_port(item, 1, /*allow_scheme=*/true)) return false;
    if (comma == std::string_view::npos) return true;
    start = comma + 1;
  }
}

bool is_host_port(std::string_view address, int min_port, bool allow_scheme) {
  if (allow_scheme) {
    if (auto scheme = address.find("://"); scheme != std::string_view::npos) {
      auto name = address.substr(0, scheme);
      if (name.empty() ||
          !std::all_of(name.begin(), name.end(), [](char c) { return is_alpha(c) || c == '_'; })) {
        return false;
      }
      address.remove_prefix(scheme + 3);
    }
  }
  auto colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  auto host = address.substr(0, colon);
  auto port = parse_integer(address.substr(colon + 1), min_port, 65535);
  if (!port) return false;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    host = host.substr(1, host.size() - 2);
    return std::all_of(host.begin(), host.end(), [](char c) {
      return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
             c == '.';
    });
  }
  return std::all_of(host.begin(), host.end(), [](char c) {
    return is_alpha(c) || is_digit(c) || c == '.' || c == '-' || c == '_';
  });
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> nearest(std::string_view word, std::span<const std::string> candidates) {
  // Bound the work on hostile input: a key longer than any real one is no typo.
  if (word.size() > 256) return std::nullopt;
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    auto distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

}  // namespace neardup::config
