#pragma once
// Kafka error codes by name, and the one place where they are classified:
// fatal (stop the service), retriable (librdkafka or the caller tries again) or
// message-level (this record is bad, the client is fine).

#include <librdkafka/rdkafka.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace neardup::stream::kafka {

/// A Kafka error code: librdkafka's enum itself (rd_kafka_resp_err_t), no
/// copy of ours, so a code passes this boundary as it is and `if (err)` tests
/// for an error. Above stream/kafka/, codes are named through kafka::errc and
/// printed with error_name() and describe(); nothing there names librdkafka's
/// constants (deploy/check-kafka-boundary.sh).
using ErrorCode = rd_kafka_resp_err_t;

/// The codes neardup acts on, by name (std::errc's habit).
namespace errc {
inline constexpr ErrorCode no_error = RD_KAFKA_RESP_ERR_NO_ERROR;
/// Raised by neardup itself for a failure without a librdkafka code.
inline constexpr ErrorCode fail = RD_KAFKA_RESP_ERR__FAIL;
/// The client's fatal error (see fatal_reason()).
inline constexpr ErrorCode fatal = RD_KAFKA_RESP_ERR__FATAL;
inline constexpr ErrorCode invalid_arg = RD_KAFKA_RESP_ERR__INVALID_ARG;
inline constexpr ErrorCode timed_out = RD_KAFKA_RESP_ERR__TIMED_OUT;
inline constexpr ErrorCode transport = RD_KAFKA_RESP_ERR__TRANSPORT;
inline constexpr ErrorCode all_brokers_down = RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN;
inline constexpr ErrorCode message_timed_out = RD_KAFKA_RESP_ERR__MSG_TIMED_OUT;
/// A consumer event: the partition's end was reached (enable.partition.eof).
inline constexpr ErrorCode partition_eof = RD_KAFKA_RESP_ERR__PARTITION_EOF;
/// An offset commit with nothing to commit.
inline constexpr ErrorCode no_offset = RD_KAFKA_RESP_ERR__NO_OFFSET;
inline constexpr ErrorCode unknown_topic_or_partition = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
inline constexpr ErrorCode topic_already_exists = RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
inline constexpr ErrorCode message_too_large = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
inline constexpr ErrorCode not_leader_for_partition = RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
inline constexpr ErrorCode request_timed_out = RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT;
inline constexpr ErrorCode not_enough_replicas = RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS;
/// A static group member (group.instance.id) replaced by a newer member with
/// the same id: the coordinator fences the older, and librdkafka makes that fatal.
inline constexpr ErrorCode fenced_instance = RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID;
}  // namespace errc

/// The code's name without its prefix, e.g. "_TIMED_OUT" (librdkafka's
/// rd_kafka_err2name: a leading underscore marks a client-side code).
std::string error_name(ErrorCode code);
/// What the code means, for a person, e.g. "Local: Timed out".
std::string describe(ErrorCode code);

enum class Severity { fatal, retriable, message };
std::string_view to_string(Severity severity);

/// Classifies a librdkafka error code once, here. `fatal_flag` is what
/// rd_kafka_error_is_fatal() or a fatal error callback said, when known.
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
