#pragma once
// Parsers and validators for the scalar values of a neardup configuration:
// durations, byte sizes, bounded integers, topic names, JSON pointers and
// host:port addresses, plus the edit distance behind "did you mean ...?".
//
// Pure functions of their arguments, thread-safe, no exceptions: a parser
// returns nullopt (or false) and the caller words the error, because only the
// caller knows the key and where it was written.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace neardup::config {

/// A decimal integer ("42", "-3"), nothing else (no spaces, signs only '-',
/// no "0x", no fractions). nullopt when malformed or outside [min, max].
std::optional<std::int64_t> parse_integer(std::string_view text, std::int64_t min,
                                          std::int64_t max);

/// "24h", "10m", "90s", "500ms", "2d", compounds like "1h30m", or a bare
/// integer meaning seconds ("90"; command-line flags accept it, configuration
/// keys refuse it). Units: ms, s, m, h, d. nullopt when malformed, negative or
/// beyond ~292 years (int64 milliseconds).
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

/// The shortest compound form parse_duration reads back exactly: "24h", "1h30m", "500ms", "0s".
std::string format_duration(std::chrono::milliseconds duration);

/// "1048576", "64KiB", "1MiB", "1 GiB", "512B", "10kB"/"10KB" (x1000), "5MB", "1GB".
/// nullopt when malformed or beyond 2^63-1 bytes.
std::optional<std::uint64_t> parse_size(std::string_view text);

/// "1MiB" / "64KiB" when exact, else the plain number of bytes ("1000").
std::string format_size(std::uint64_t bytes);

/// A Kafka topic name: 1..249 characters of [a-zA-Z0-9._-], not "." or "..".
bool is_topic_name(std::string_view name);

/// An RFC 6901 JSON pointer to a member: "/text", "/a/b", "/a~1b" ('~' only as ~0 or ~1).
/// The empty pointer (the whole document) is rejected: it never names a text field.
bool is_json_pointer(std::string_view pointer);

/// A bootstrap list: is_host_port() items (schemes allowed) separated by
/// commas, spaces around an item ignored: "kafka-1:9092, kafka-2:9092".
bool is_broker_list(std::string_view text);

/// "host:port" or "[v6]:port"; port in [min_port, 65535]; host of
/// [A-Za-z0-9.-_] (or hex/':' inside brackets). With `allow_scheme`, a leading
/// "name://" is accepted (librdkafka's "SASL_SSL://host:9093").
bool is_host_port(std::string_view address, int min_port, bool allow_scheme = false);

/// Levenshtein distance, O(|a| * |b|) time, O(|b|) space.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` if it is plausibly a typo of it (distance
/// at most max(2, |word| / 3)); nullopt otherwise. Ties go to the first candidate.
std::optional<std::string> nearest(std::string_view word, std::span<const std::string> candidates);

}  // namespace neardup::config
