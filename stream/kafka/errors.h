#pragma once
// Kafka error codes by name, and the one place where they are classified:
// fatal (stop the service), retriable (librdkafka or the caller tries again) or
// message-level (this record is bad, the client is fine).

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>

namespace neardup::stream::kafka {

/// A Kafka error code: librdkafka's number for it, so that any code passes
/// this boundary as it is (error_name(), describe() and classify() know them
/// all), in a type of neardup's own. `if (err)` tests for an error. Named
/// through kafka::errc; errors.cc checks each name's number against librdkafka.
class ErrorCode {
 public:
  constexpr ErrorCode() = default;
  /// librdkafka's number for the code (stream/kafka/'s .cc files convert).
  constexpr explicit ErrorCode(int code) : code_(code) {}
  constexpr int value() const { return code_; }
  /// Whether it is an error: every code but errc::no_error.
  constexpr explicit operator bool() const { return code_ != 0; }
  friend constexpr bool operator==(ErrorCode, ErrorCode) = default;

 private:
  int code_ = 0;
};

/// The codes neardup acts on, by name (std::errc's habit).
namespace errc {
inline constexpr ErrorCode no_error{0};
/// Raised by neardup itself for a failure without a librdkafka code.
inline constexpr ErrorCode fail{-196};
/// The client's fatal error (see fatal_reason()).
inline constexpr ErrorCode fatal{-150};
inline constexpr ErrorCode invalid_arg{-186};
inline constexpr ErrorCode timed_out{-185};
inline constexpr ErrorCode transport{-195};
/// A broker's name that did not resolve.
inline constexpr ErrorCode resolve{-193};
inline constexpr ErrorCode all_brokers_down{-187};
inline constexpr ErrorCode message_timed_out{-192};
/// A consumer event: the partition's end was reached (enable.partition.eof).
inline constexpr ErrorCode partition_eof{-191};
/// An offset commit with nothing to commit.
inline constexpr ErrorCode no_offset{-168};
inline constexpr ErrorCode unknown_topic_or_partition{3};
inline constexpr ErrorCode topic_already_exists{36};
inline constexpr ErrorCode message_too_large{10};
inline constexpr ErrorCode not_leader_for_partition{6};
inline constexpr ErrorCode request_timed_out{7};
inline constexpr ErrorCode not_enough_replicas{19};
/// A static group member (group.instance.id) replaced by a newer member with
/// the same id: the coordinator fences the older, and librdkafka makes that fatal.
inline constexpr ErrorCode fenced_instance{82};
}  // namespace errc

/// The code's name without its prefix, e.g. "_TIMED_OUT" (librdkafka's name:
/// a leading underscore marks a client-side code).
std::string error_name(ErrorCode code);
/// What the code means, for a person, e.g. "Local: Timed out".
std::string describe(ErrorCode code);
/// Prints error_name(code) (test failures).
std::ostream& operator<<(std::ostream& out, ErrorCode code);

enum class Severity { fatal, retriable, message };
std::string_view to_string(Severity severity);

/// Classifies a Kafka error code once, here. `fatal_flag` is what librdkafka
/// said of the error (a fatal error object or callback), when known.
Severity classify(ErrorCode err, bool fatal_flag = false);

/// A Kafka failure a person can act on: what() names the operation and
/// librdkafka's reason.
class KafkaError : public std::runtime_error {
 public:
  KafkaError(const std::string& what, ErrorCode code, Severity severity)
      : std::runtime_error(what), code_(code), severity_(severity) {}
  ErrorCode code() const { return code_; }
  Severity severity() const { return severity_; }

 private:
  ErrorCode code_;
  Severity severity_;
};

}  // namespace neardup::stream::kafka
