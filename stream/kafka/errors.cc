#include "stream/kafka/errors.h"

#include <librdkafka/rdkafka.h>

#include <ostream>

namespace neardup::stream::kafka {

// errc's numbers are librdkafka's.
static_assert(errc::no_error.value() == RD_KAFKA_RESP_ERR_NO_ERROR);
static_assert(errc::fail.value() == RD_KAFKA_RESP_ERR__FAIL);
static_assert(errc::fatal.value() == RD_KAFKA_RESP_ERR__FATAL);
static_assert(errc::invalid_arg.value() == RD_KAFKA_RESP_ERR__INVALID_ARG);
static_assert(errc::timed_out.value() == RD_KAFKA_RESP_ERR__TIMED_OUT);
static_assert(errc::transport.value() == RD_KAFKA_RESP_ERR__TRANSPORT);
static_assert(errc::resolve.value() == RD_KAFKA_RESP_ERR__RESOLVE);
static_assert(errc::all_brokers_down.value() == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN);
static_assert(errc::message_timed_out.value() == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
static_assert(errc::partition_eof.value() == RD_KAFKA_RESP_ERR__PARTITION_EOF);
static_assert(errc::no_offset.value() == RD_KAFKA_RESP_ERR__NO_OFFSET);
static_assert(errc::unknown_topic_or_partition.value() == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
static_assert(errc::topic_already_exists.value() == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
static_assert(errc::message_too_large.value() == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
static_assert(errc::not_leader_for_partition.value() == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
static_assert(errc::request_timed_out.value() == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
static_assert(errc::not_enough_replicas.value() == RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS);
static_assert(errc::fenced_instance.value() == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID);

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::fatal:
      return "fatal";
    case Severity::retriable:
      return "retriable";
    case Severity::message:
      return "message";
  }
  return "unknown";
}

std::string error_name(ErrorCode code) {
  return rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(code.value()));
}

std::string describe(ErrorCode code) {
  return rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(code.value()));
}

std::ostream& operator<<(std::ostream& out, ErrorCode code) { return out << error_name(code); }

Severity classify(ErrorCode err, bool fatal_flag) {
  if (fatal_flag || err == errc::fatal) return Severity::fatal;
  switch (static_cast<rd_kafka_resp_err_t>(err.value())) {
    // The record itself cannot be written; the client and the rest of the stream are fine.
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR__BAD_MSG:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
      return Severity::message;
    // Configuration, authorization and missing topics: retrying cannot help.
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    case RD_KAFKA_RESP_ERR__SSL:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED:
    case RD_KAFKA_RESP_ERR_INVALID_CONFIG:
    case RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION:
    case RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE:
    case RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER:
    case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
    case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
    case RD_KAFKA_RESP_ERR__FENCED:
      return Severity::fatal;
    default:
      return Severity::retriable;
  }
}

}  // namespace neardup::stream::kafka
