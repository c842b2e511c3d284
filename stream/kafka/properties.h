#pragma once
// librdkafka properties into a configuration, and librdkafka's log lines
// through neardup's logger.

#include <librdkafka/rdkafka.h>

#include <map>
#include <memory>
#include <string>

#include "base/log.h"

namespace neardup::stream::kafka {

using Properties = std::map<std::string, std::string>;

/// Builds an rd_kafka_conf_t; throws KafkaError naming the bad property.
/// Every handle made from it writes librdkafka's log lines through neardup's
/// logger (base/log.h: the configured format and level), with the fields
/// `client` (e.g. "rdkafka#consumer-3") and `facility` (e.g. "FAIL"); how much
/// librdkafka says is still its `log_level` property.
struct ConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
using ConfPtr = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;
ConfPtr make_conf(const Properties& properties);

/// librdkafka's syslog levels (0 emerg .. 7 debug) as neardup's: 0-3 error,
/// 4 warn, 5-6 info, 7 debug.
base::LogLevel log_level_of(int syslog_level);

}  // namespace neardup::stream::kafka
