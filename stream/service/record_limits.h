#pragma once
// How large a republished record may be: the producer's message.max.bytes,
// or the topics' max.message.bytes when the brokers say it is smaller. A
// broker refuses a whole batch over its topic's limit, the valid records in
// it along with the one too large, so both records and batches are sized to it.

#include <cstddef>

#include "config/config.h"
#include "stream/kafka/properties.h"

namespace neardup::stream {

/// Asks the brokers (at most 3 s; not librdkafka's mock cluster, which does
/// not answer) for the max.message.bytes of the topics that take republished
/// records (output, duplicates, dead letters). When the smallest is below the
/// producer's message.max.bytes, sets batch.size under it in
/// `producer_properties` (unless kafka.producer sets it) and says so in the
/// log. Returns the bytes a record may take (OutputRouter's limit).
std::size_t size_records_to_topics(const config::Config& cfg,
                                   kafka::Properties& producer_properties);

}  // namespace neardup::stream
