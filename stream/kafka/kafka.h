#pragma once
// The Kafka boundary's vocabulary in one include: RAII owners of librdkafka
// handles (C API) and the one place where Kafka errors are classified: fatal
// (stop the service), retriable (librdkafka or the caller tries again) or
// message-level (this record is bad, the client is fine). Everything above
// stream/kafka/ speaks in these types, never in raw handles: no header here
// names a librdkafka type (the handles are opaque types of stream/kafka/'s
// own, converted in its .cc files). Each piece has its own header; this one
// includes them all.

#include "stream/kafka/clients/admin.h"
#include "stream/kafka/clients/consumer.h"
#include "stream/kafka/clients/producer.h"
#include "stream/kafka/errors.h"
#include "stream/kafka/handle.h"
#include "stream/kafka/headers.h"
#include "stream/kafka/message.h"
#include "stream/kafka/properties.h"
#include "stream/kafka/topic_partitions.h"
