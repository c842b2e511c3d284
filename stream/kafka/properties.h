#pragma once
// librdkafka properties into a configuration, and librdkafka's log lines
// through neardup's logger.

#include <map>
#include <memory>
#include <string>

#include "base/log.h"

namespace neardup::stream::kafka {

using Properties = std::map<std::string, std::string>;

/// librdkafka's client configuration, opaque (properties.cc and the clients
/// convert it), owned by a ConfPtr until a client is made from it.
struct ConfHandle;
struct ConfDeleter {
  void operator()(ConfHandle* conf) const;
};
using ConfPtr = std::unique_ptr<ConfHandle, ConfDeleter>;

/// Builds a client configuration; throws KafkaError naming the bad property.
/// Every handle made from it writes librdkafka's log lines through neardup's
/// logger (base/log.h: the configured format and level), with the fields
/// `client` (e.g. "rdkafka#consumer-3") and `facility` (e.g. "FAIL"); how much
/// librdkafka says is still its `log_level` property.
ConfPtr make_conf(const Properties& properties);

/// librdkafka's syslog levels (0 emerg .. 7 debug) as neardup's: 0-3 error,
/// 4 warn, 5-6 info, 7 debug.
base::LogLevel log_level_of(int syslog_level);

}  // namespace neardup::stream::kafka
