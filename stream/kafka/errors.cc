#include "stream/kafka/errors.h"

namespace neardup::stream::kafka {

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

std::string error_name(ErrorCode code) { return rd_kafka_err2name(code); }

std::string describe(ErrorCode code) { return rd_kafka_err2str(code); }

Severity classify(ErrorCode err, bool fatal_flag) {
  if (fatal_flag || err == RD_KAFKA_RESP_ERR__FATAL) return Severity::fatal;
  switch (err) {
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
