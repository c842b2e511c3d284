#include "stream/service.h"

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <pthread.h>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "stream/pipeline.h"
#include "metrics/log.h"
#include "metrics/progress.h"
#include "stream/changelog.h"
#include "stream/embedded_broker.h"
#include "stream/kafka.h"

namespace neardup::stream {

// ------------------------------------------------------------------ logging

void log(config::LogLevel level, std::string_view message) {
  metrics::log(static_cast<metrics::LogLevel>(static_cast<int>(level)), message);
}

void configure_logging(const config::LogOptions& options) {
  metrics::configure_logging(static_cast<metrics::LogFormat>(static_cast<int>(options.format)),
                             static_cast<metrics::LogLevel>(static_cast<int>(options.level)));
}

namespace {
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int) { g_stop_signal = 1; }
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

bool stop_signalled() { return g_stop_signal != 0; }

// ------------------------------------------------------------------ stats

void LatencyHistogram::observe_ms(std::int64_t ms) {
  ms = std::max<std::int64_t>(ms, 0);
  if (ms < static_cast<std::int64_t>(kBuckets)) {
    ++counts[static_cast<std::size_t>(ms)];
  } else {
    const std::int64_t seconds = (ms + 999) / 1000;  // (s - 1, s]
    if (seconds <= static_cast<std::int64_t>(kSlowSeconds)) ++slow[static_cast<std::size_t>(seconds) - kFirstSlowSecond];
    else ++beyond;
  }
  ++total;
  sum_ms += static_cast<double>(ms);
}

std::int64_t LatencyHistogram::quantile_ms(double q) const {
  if (total == 0) return 0;
  auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total - 1)) + 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (seen >= rank) return static_cast<std::int64_t>(i);
  }
  for (std::size_t i = 0; i < slow.size(); ++i) {
    seen += slow[i];
    if (seen >= rank) return static_cast<std::int64_t>(i + kFirstSlowSecond) * 1000;
  }
  return static_cast<std::int64_t>(kSlowSeconds) * 1000;
}

std::map<std::string, std::string> default_consumer_properties(const std::string& brokers, const std::string& group) {
  return {
      {"bootstrap.servers", brokers},
      {"group.id", group},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"auto.offset.reset", "earliest"},
      {"enable.partition.eof", "false"},
      // Throughput: large prefetch queue, fetches answered quickly.
      {"queued.min.messages", "200000"},
      {"fetch.wait.max.ms", "20"},
      {"fetch.max.bytes", "52428800"},
      {"max.partition.fetch.bytes", "4194304"},
      {"log_level", "3"},
  };
}

std::map<std::string, std::string> default_producer_properties(const std::string& brokers) {
  return {
      {"bootstrap.servers", brokers},
      {"enable.idempotence", "true"},  // retries without duplicates or reordering; acks=all
      {"linger.ms", "5"},
      {"batch.num.messages", "10000"},
      {"batch.size", "4194304"},
      {"queue.buffering.max.messages", "1000000"},
      {"queue.buffering.max.kbytes", "1048576"},
      {"message.timeout.ms", "300000"},
      {"log_level", "3"},
  };
}

// ------------------------------------------------------------------ service

namespace {

using Clock = std::chrono::steady_clock;
using kafka::KafkaError;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// One input message whose outputs are not all acknowledged yet.
struct Pending {
  std::int64_t offset = 0;
  std::uint32_t outstanding = 0;
  std::int64_t timestamp_ms = -1;  ///< the input's timestamp, for end-to-end latency
};

/// An input topic-partition: interned once, index stable for the process.
struct Source {
  std::string topic;
  std::int32_t partition = 0;
  bool assigned = false;
  std::deque<Pending> pending;     ///< ascending offsets
  std::int64_t next_commit = -1;   ///< the offset committed last (next to read)
  std::int64_t done_next = -1;     ///< after the acked prefix: next offset to commit
  std::int64_t position = -1;      ///< next offset to read (for lag)
};

/// The source index that marks a changelog batch record's opaque (its offset
/// field is then the batch number); real sources stay below it.
constexpr std::uint32_t kBatchSource = 0xffff;
/// A changelog batch is sent at the end of every poll loop iteration, or
/// earlier when it reaches this many entries or bytes (well below Kafka's
/// default 1 MB message.max.bytes).
constexpr std::size_t kBatchMaxEntries = 1000;
constexpr std::size_t kBatchMaxBytes = 512 * 1024;

/// Per output record: which input message it belongs to (pack_ref layout).
void* to_opaque(std::uint32_t source, std::int64_t offset) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(pack_ref(source, offset).value));
}
dedup::RecordRef from_opaque(void* opaque) {
  return dedup::RecordRef{static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(opaque))};
}

/// What the pipeline thread tells the worker about one polled message.
struct Job {
  std::uint32_t source = 0;  ///< index into Impl::sources
  bool judge = false;        ///< false: a consumer error, or a partition not assigned when polled
  dedup::EventTime time;     ///< event time (the message timestamp, else the time it was polled)
};

/// What the worker made of one message.
struct Outcome {
  dedup::Verdict verdict;
  std::string_view error;           ///< for invalid: views Slot::prepared or a static string
  dedup::SketchResult kept_sketch;  ///< a unique message's sketch (for the changelog); shingles 0 if none
  std::uint64_t spent_ns = 0;       ///< decoding, analysis and the window decision
};

/// A changelog entry of another instance, for the worker's window.
struct Remembered {
  dedup::Fingerprint fingerprint;
  dedup::EventTime time;
  dedup::RecordRef ref;
  dedup::SketchResult sketch;  ///< shingles 0: remembered by its fingerprint only
};

/// Polled messages and what the worker made of them (index by index).
struct Slot {
  std::vector<kafka::MessagePtr> messages;
  std::vector<Job> jobs;
  std::vector<Remembered> remember;  ///< applied to the window before the messages are judged
  std::vector<Prepared> prepared;
  std::vector<Outcome> outcomes;
  dedup::EngineStats engine_stats;   ///< the engine's counters after this slot
};

/// Decodes, analyzes and judges one batch of polled messages at a time on its
/// own thread, which owns the window (messages strictly in order, so a learned
/// IDF sees the same history as without it, and the window sees every message
/// in input order), while the pipeline thread produces, acknowledges and commits
/// the previous batch. submit() and wait() alternate, from one thread; the slot
/// is the worker's between them, and engine() is the pipeline thread's only
/// while no slot is submitted.
class DedupWorker {
 public:
  explicit DedupWorker(const config::Config& config)
      : analyzer_(config), classifier_(config), thread_([this] { loop(); }) {}
  ~DedupWorker() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  DedupWorker(const DedupWorker&) = delete;
  DedupWorker& operator=(const DedupWorker&) = delete;

  /// The window. Only between wait() and the next submit() (or before the first).
  dedup::Engine& engine() { return classifier_.engine(); }

  void submit(Slot& slot) {
    {
      std::lock_guard lock(mutex_);
      job_ = &slot;
    }
    wake_.notify_all();
  }
  /// Until the submitted slot is prepared; rethrows what the worker threw (std::bad_alloc).
  void wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return job_ == nullptr; });
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }

 private:
  void loop() {
    pthread_setname_np(pthread_self(), "neardup-analyze");  // (15 characters at most)
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return quit_ || job_ != nullptr; });
      if (job_ == nullptr) return;  // quit with nothing to do
      Slot& slot = *job_;
      lock.unlock();
      try {
        prepare(slot);
      } catch (...) {
        lock.lock();
        failure_ = std::current_exception();
        lock.unlock();
      }
      lock.lock();
      job_ = nullptr;
      done_.notify_all();
    }
  }

  void prepare(Slot& slot) {
    dedup::Engine& engine = classifier_.engine();
    for (const Remembered& r : slot.remember) engine.remember(r.fingerprint, r.time, r.ref, r.sketch);
    slot.remember.clear();
    const std::size_t n = slot.messages.size();
    if (slot.prepared.size() < n) slot.prepared.resize(n);
    if (slot.outcomes.size() < n) slot.outcomes.resize(n);
    // Two messages ahead: a message to judge is decoded, analyzed and its
    // window accesses started (Classifier::prefetch) two judged messages before
    // its turn, and its second, dependent accesses (Classifier::prefetch_cells)
    // one before.
    std::size_t ahead = 0;  // the next message to analyze
    auto analyze_next = [&]() -> std::size_t {
      while (ahead < n && !slot.jobs[ahead].judge) ++ahead;  // skipped by the pipeline thread (consumer error, revoked partition)
      if (ahead == n) return n;
      const auto started = Clock::now();
      const rd_kafka_message_t& m = *slot.messages[ahead];
      analyzer_.prepare(std::string_view(static_cast<const char*>(m.payload), m.payload ? m.len : 0), slot.prepared[ahead]);
      classifier_.prefetch(slot.prepared[ahead]);
      slot.outcomes[ahead].spent_ns = static_cast<std::uint64_t>((Clock::now() - started).count());
      return ahead++;
    };
    // The next two messages to judge, analyzed (n: none).
    std::size_t next_up = analyze_next();
    std::size_t then = analyze_next();
    for (std::size_t i = 0; i < n; ++i) {
      const Job& job = slot.jobs[i];
      if (!job.judge) continue;
      // i == next_up: the queue moves on by one.
      next_up = then;
      then = analyze_next();
      const auto started = Clock::now();
      if (next_up < n) classifier_.prefetch_cells(slot.prepared[next_up]);
      Outcome& out = slot.outcomes[i];
      out.error = {};
      out.verdict = classifier_.judge(slot.prepared[i], job.time, pack_ref(job.source, slot.messages[i]->offset), &out.error);
      out.kept_sketch.shingles = 0;
      if (out.verdict.kind == dedup::VerdictKind::unique) out.kept_sketch = engine.last_kept_sketch();
      out.spent_ns += static_cast<std::uint64_t>((Clock::now() - started).count());
    }
    slot.engine_stats = engine.stats();
  }

  Analyzer analyzer_;
  Classifier classifier_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  Slot* job_ = nullptr;
  bool quit_ = false;
  std::exception_ptr failure_;
  std::thread thread_;  // last: starts after everything it uses
};

}  // namespace

struct Service::Impl {
  ServiceOptions options;
  const config::Config& cfg;
  std::atomic<bool>& stop;
  std::string fatal_error;
  ServiceSnapshot stats;

  std::vector<Source> sources;
  std::unordered_map<std::string, std::uint32_t> source_index;  // "topic\0partition"
  std::map<std::string, int> topic_partitions;                  // cached partition counts
  std::unique_ptr<kafka::Producer> producer;
  std::unique_ptr<kafka::Consumer> consumer;
  kafka::Properties consumer_properties;
  std::string delivery_fatal;  // set in the delivery handler, raised on the pipeline thread
  std::unique_ptr<ChangelogReader> changelog;  // set while the changelog is on and read
  std::uint64_t instance_id = 0;               // marks this process's changelog records
  std::uint64_t corrupt_logged = 0;
  std::unique_ptr<ChangelogBatch> changelog_batch;       // the changelog entries not yet produced
  std::vector<dedup::RecordRef> batch_refs;    // the input messages of those entries
  std::unordered_map<std::uint64_t, std::vector<dedup::RecordRef>> batches_in_flight;  // by batch number
  std::uint64_t next_batch = 0;
  Slot slots[2];                               // (their messages go before the consumer does)
  std::unique_ptr<DedupWorker> worker;         // null in bypass mode; after slots: joined before they go
  dedup::EngineStats engine_stats;             // the worker's, as of the last slot it finished
  std::vector<Remembered> followed;            // other instances' changelog entries for the next slot
  int inflight = -1;                           // the slot with the worker (polled, not yet handled), or -1
  std::string rebalance_fatal;                 // an error while finishing a batch inside a revoke
  std::exception_ptr rebalance_exception;      // any other exception there (std::bad_alloc)
  bool abandoning = false;                     // after a fatal error: a revoke only lets go
  // How long a revoke waits for the output of the partitions it takes away: a
  // rebalance can afford it; the shutdown's revoke comes after its own flush.
  std::chrono::milliseconds revoke_drain{60'000};

  ~Impl() {
    // The consumer's close serves a last revoke, which must find every member
    // alive: close it here, first (a no-op when run() closed it already).
    abandoning = true;
    try {
      if (consumer) consumer->close();
    } catch (...) {
    }
  }

  Impl(ServiceOptions opts, std::atomic<bool>& stop_flag)
      : options(std::move(opts)), cfg(options.config), stop(stop_flag) {
    stats.match_distance.assign(static_cast<std::size_t>(cfg.dedup.index.max_distance) + 1, 0);
    auto producer_props = default_producer_properties(options.brokers);
    for (const auto& [k, v] : cfg.kafka.producer) producer_props[k] = v;
    auto consumer_props = default_consumer_properties(options.brokers, cfg.kafka.group_id);
    for (const auto& [k, v] : cfg.kafka.consumer) consumer_props[k] = v;
    consumer_properties = consumer_props;
    std::random_device entropy;
    instance_id = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy() ^
                  static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    changelog_batch = std::make_unique<ChangelogBatch>(instance_id);
    if (!options.bypass_dedup) worker = std::make_unique<DedupWorker>(cfg);
    producer = std::make_unique<kafka::Producer>(producer_props,
                                                 [this](const rd_kafka_message_t& m) { on_delivery(m); });
    consumer = std::make_unique<kafka::Consumer>(
        consumer_props, [this](bool assigned, const rd_kafka_topic_partition_list_t& parts) {
          on_rebalance(assigned, parts);
        });
  }

  std::uint32_t intern(std::string_view topic, std::int32_t partition) {
    std::string key(topic);
    key.push_back('\0');
    key += std::to_string(partition);
    auto it = source_index.find(key);
    if (it != source_index.end()) return it->second;
    if (sources.size() >= kBatchSource) throw KafkaError("more than 65535 input partitions", RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
    auto index = static_cast<std::uint32_t>(sources.size());
    Source src;
    src.topic = std::string(topic);
    src.partition = partition;
    sources.push_back(std::move(src));
    source_index.emplace(std::move(key), index);
    return index;
  }

  int partitions_of(const std::string& topic) {
    auto it = topic_partitions.find(topic);
    if (it != topic_partitions.end()) return it->second;
    int n = 0;
    try {
      n = kafka::partition_count(producer->handle(), topic, std::chrono::seconds(10));
    } catch (const KafkaError& e) {
      log(config::LogLevel::warn, std::string("partition count unknown, choosing output partitions by key: ") + e.what());
      n = -1;
    }
    topic_partitions.emplace(topic, n);
    return n;
  }

  /// Preserve the input partition when the output topic has as many partitions.
  std::int32_t output_partition(const Source& src, const std::string& out_topic) {
    int in = partitions_of(src.topic);
    int out = partitions_of(out_topic);
    return (in > 0 && in == out) ? src.partition : RD_KAFKA_PARTITION_UA;
  }

  // ---------------------------------------------------------------- delivery

  void on_delivery(const rd_kafka_message_t& m) {
    dedup::RecordRef ref = from_opaque(m._private);
    std::uint32_t index = ref_source(ref);
    std::int64_t offset = ref_offset(ref);
    if (m.err) {
      ++stats.produce_errors;
      // librdkafka already retried (idempotent producer); what is left is final.
      // Never commit past it: stop, so a restart replays it.
      if (delivery_fatal.empty()) {
        delivery_fatal = std::string("cannot deliver to '") + rd_kafka_topic_name(m.rkt) + "': " +
                         rd_kafka_err2str(m.err) + " (" + std::string(kafka::to_string(kafka::classify(m.err))) +
                         " error after retries)";
      }
      if (index == kBatchSource) batches_in_flight.erase(static_cast<std::uint64_t>(offset));
      return;
    }
    if (index == kBatchSource) {
      // A changelog batch: one more output of every input message it carries.
      auto it = batches_in_flight.find(static_cast<std::uint64_t>(offset));
      if (it == batches_in_flight.end()) return;
      stats.changelog_written += it->second.size();
      for (dedup::RecordRef r : it->second) acknowledge(ref_source(r), ref_offset(r));
      batches_in_flight.erase(it);
      return;
    }
    const std::string_view topic = rd_kafka_topic_name(m.rkt);
    ++stats.produced;
    if (topic == cfg.kafka.dead_letter_topic) ++stats.dead_letters;
    acknowledge(index, offset);
  }

  /// One output record of input message (index, offset) is acknowledged.
  void acknowledge(std::uint32_t index, std::int64_t offset) {
    if (index >= sources.size()) return;
    auto& pending = sources[index].pending;
    auto it = std::lower_bound(pending.begin(), pending.end(), offset,
                               [](const Pending& p, std::int64_t o) { return p.offset < o; });
    if (it != pending.end() && it->offset == offset && it->outstanding > 0) {
      // The delivery report's own timestamp is the broker's (log append time
      // with some brokers), so the input's timestamp is kept with the entry.
      if (--it->outstanding == 0 && it->timestamp_ms > 0) stats.end_to_end.observe_ms(wall_ms() - it->timestamp_ms);
    }
  }

  // ---------------------------------------------------------------- commits

  /// Moves each source's acknowledged prefix out of its pending list.
  void advance(Source& src) {
    while (!src.pending.empty() && src.pending.front().outstanding == 0) {
      src.done_next = src.pending.front().offset + 1;
      src.pending.pop_front();
      ++stats.committed;  // counted now, committed by the next commit() call
    }
  }

  /// Commits what is acknowledged; false when the commit failed (logged; a later one carries the offsets).
  bool commit(bool sync, const rd_kafka_topic_partition_list_t* subset = nullptr) {
    kafka::PartitionListPtr list(rd_kafka_topic_partition_list_new(8));
    for (auto& src : sources) {
      if (!src.assigned) continue;
      if (subset && !rd_kafka_topic_partition_list_find(subset, src.topic.c_str(), src.partition)) continue;
      advance(src);
      if (src.done_next > src.next_commit) {
        rd_kafka_topic_partition_list_add(list.get(), src.topic.c_str(), src.partition)->offset = src.done_next;
        src.next_commit = src.done_next;
      }
    }
    if (list->cnt == 0) return true;
    rd_kafka_resp_err_t err = consumer->commit(*list, !sync);
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
      log(config::LogLevel::warn, std::string("offset commit failed (will retry with later offsets): ") +
                                      rd_kafka_err2str(err));
      // Let a later commit carry these offsets again.
      for (int i = 0; i < list->cnt; ++i) {
        for (auto& src : sources) {
          if (src.partition == list->elems[i].partition && src.topic == list->elems[i].topic) src.next_commit = -1;
        }
      }
      return false;
    }
    return true;
  }

  /// Waits until every produced record is acknowledged (or `limit` passes).
  bool drain(std::chrono::milliseconds limit) {
    flush_changelog();
    auto deadline = Clock::now() + limit;
    while (producer->in_flight() > 0 && Clock::now() < deadline) producer->poll(std::chrono::milliseconds(50));
    producer->poll(std::chrono::milliseconds(0));
    return producer->in_flight() == 0;
  }

  void on_rebalance(bool assigned, const rd_kafka_topic_partition_list_t& parts) {
    if (assigned) {
      for (int i = 0; i < parts.cnt; ++i) {
        auto& src = sources[intern(parts.elems[i].topic, parts.elems[i].partition)];
        src.assigned = true;
        src.pending.clear();
        src.next_commit = src.done_next = -1;
        src.position = -1;
      }
      stats.assigned = true;
      log(config::LogLevel::info, "assigned " + std::to_string(parts.cnt) + " partition(s)");
      if (abandoning) return;
      // Where each partition resumes, for the lag until its first message
      // arrives (else the lag would count the partition from its start).
      kafka::PartitionListPtr committed(rd_kafka_topic_partition_list_copy(&parts));
      const rd_kafka_resp_err_t err = rd_kafka_committed(consumer->handle(), committed.get(), 2000);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < committed->cnt; ++i) {
          const auto& e = committed->elems[i];
          if (e.err == RD_KAFKA_RESP_ERR_NO_ERROR && e.offset >= 0) sources[intern(e.topic, e.partition)].position = e.offset;
        }
      } else {
        log(config::LogLevel::debug, std::string("committed offsets unknown (the lag counts from the partitions' "
                                                 "start until their first message): ") + rd_kafka_err2str(err));
      }
      try {  // nothing may unwind through librdkafka's frames: raised after the poll
        read_changelog_to_end();
      } catch (const KafkaError& e) {
        if (rebalance_fatal.empty()) rebalance_fatal = e.what();
      } catch (...) {
        if (!rebalance_exception) rebalance_exception = std::current_exception();
      }
      return;
    }
    if (abandoning) {
      // Closing after a fatal error (or on destruction): nothing more is
      // produced or committed; the partitions just go.
      for (int i = 0; i < parts.cnt; ++i) sources[intern(parts.elems[i].topic, parts.elems[i].partition)].assigned = false;
      stats.assigned = false;
      return;
    }
    // Revoked: finish what was read, commit it, then let the partitions go.
    // Nothing may unwind through librdkafka's C frames: errors are kept and
    // raised on the pipeline thread after the poll.
    try {
      finish_inflight();
    } catch (const KafkaError& e) {
      if (rebalance_fatal.empty()) rebalance_fatal = e.what();
    } catch (...) {
      if (!rebalance_exception) rebalance_exception = std::current_exception();
    }
    const bool drained = drain(revoke_drain);
    if (!drained) {
      log(config::LogLevel::error, "revoke: " + std::to_string(producer->in_flight()) +
                                       " output record(s) still unacknowledged after " +
                                       std::to_string(revoke_drain.count()) + " ms; their offsets stay uncommitted");
    }
    bool committed = false;
    try {
      committed = commit(true, &parts);
    } catch (const KafkaError& e) {
      log(config::LogLevel::warn, std::string("revoke: ") + e.what());
    }
    for (int i = 0; i < parts.cnt; ++i) {
      auto& src = sources[intern(parts.elems[i].topic, parts.elems[i].partition)];
      src.assigned = false;
      src.pending.clear();
    }
    stats.assigned = std::any_of(sources.begin(), sources.end(), [](const Source& s) { return s.assigned; });
    log(config::LogLevel::info, "revoked " + std::to_string(parts.cnt) + " partition(s)" +
                                    (!committed ? "; the commit failed, so their messages since the last commit "
                                                  "will be read again"
                                     : drained ? ", progress committed"
                                               : ", progress committed up to the first unacknowledged output"));
  }

  // ---------------------------------------------------------------- per message

  void send(const std::string& topic, std::int32_t partition, const rd_kafka_message_t& in, rd_kafka_headers_t* headers,
            std::uint32_t index, Pending& entry) {
    kafka::Producer::Record rec;
    rec.topic = topic;
    rec.partition = partition;
    rec.has_key = in.key != nullptr;
    rec.key = std::string_view(static_cast<const char*>(in.key), in.key ? in.key_len : 0);
    rec.has_value = in.payload != nullptr;
    rec.value = std::string_view(static_cast<const char*>(in.payload), in.payload ? in.len : 0);
    rd_kafka_timestamp_type_t type;
    std::int64_t ts = rd_kafka_message_timestamp(&in, &type);
    rec.timestamp_ms = ts > 0 ? ts : 0;
    rec.headers = headers;
    rec.opaque = to_opaque(index, in.offset);
    ++entry.outstanding;
    rd_kafka_resp_err_t err = producer->produce(rec);
    if (err) {
      ++stats.produce_errors;
      if (topic == cfg.kafka.dead_letter_topic) {
        // entry.outstanding stays up: no later commit may pass this message.
        throw KafkaError("cannot dead-letter a record that '" + topic + "' refuses: " + rd_kafka_err2str(err), err,
                         kafka::Severity::fatal);
      }
      // The record itself cannot be written (e.g. too large for the output):
      // it goes to the dead-letter topic rather than vanishing.
      --entry.outstanding;  // (dead_letter() counts its own record)
      dead_letter(in, index, entry, std::string("output rejected: ") + rd_kafka_err2str(err), false);
    }
  }

  rd_kafka_headers_t* copy_headers(const rd_kafka_message_t& in) {
    rd_kafka_headers_t* hdrs = nullptr;
    if (rd_kafka_message_headers(&in, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR && hdrs) return rd_kafka_headers_copy(hdrs);
    return nullptr;
  }

  void dead_letter(const rd_kafka_message_t& in, std::uint32_t index, Pending& entry, const std::string& reason,
                   bool count_invalid) {
    rd_kafka_headers_t* hdrs = copy_headers(in);
    if (!hdrs) hdrs = rd_kafka_headers_new(2);
    rd_kafka_header_add(hdrs, "neardup-error", -1, reason.data(), static_cast<ssize_t>(reason.size()));
    const Source& src = sources[index];
    std::string from = src.topic + "/" + std::to_string(src.partition) + "/" + std::to_string(in.offset);
    rd_kafka_header_add(hdrs, "neardup-source", -1, from.data(), static_cast<ssize_t>(from.size()));
    if (count_invalid) ++stats.invalid;
    send(cfg.kafka.dead_letter_topic, output_partition(src, cfg.kafka.dead_letter_topic), in, hdrs, index, entry);
  }

  /// Waits for the worker's batch, if any, and produces it.
  void finish_inflight() {
    if (inflight < 0) return;
    Slot& slot = slots[inflight];
    inflight = -1;
    wait_worker(slot);
    handle_slot(slot);
  }

  void wait_worker(const Slot& slot) {
    worker->wait();
    engine_stats = slot.engine_stats;
  }

  /// Hands freshly polled messages (and the changelog entries followed since
  /// the last slot) to the worker. Sources are interned here, on this thread.
  void submit(Slot& slot) {
    const std::size_t n = slot.messages.size();
    slot.jobs.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const rd_kafka_message_t& m = *slot.messages[i];
      Job& job = slot.jobs[i];
      job.judge = false;
      if (m.err) continue;
      job.source = intern(rd_kafka_topic_name(m.rkt), m.partition);
      job.judge = sources[job.source].assigned;
      rd_kafka_timestamp_type_t type;
      const std::int64_t ts = rd_kafka_message_timestamp(&m, &type);
      job.time = dedup::EventTime{ts >= 0 ? ts : wall_ms()};
    }
    slot.remember.swap(followed);
    followed.clear();
    worker->submit(slot);
  }

  void handle_slot(Slot& slot) {
    for (std::size_t i = 0; i < slot.messages.size(); ++i) {
      const rd_kafka_message_t& m = *slot.messages[i];
      const Job& job = slot.jobs[i];
      if (m.err || job.judge) handle(m, job.source, &slot.prepared[i], &slot.outcomes[i], job.time);
    }
    slot.messages.clear();
  }

  /// `index`: the source of `in` (interned; unused when in.err). `prepared`,
  /// `outcome`: the worker's decode, analysis and verdict of `in` (null in
  /// bypass mode). `time`: its event time (bypass: unused).
  void handle(const rd_kafka_message_t& in, std::uint32_t index, const Prepared* prepared, const Outcome* outcome,
              dedup::EventTime time) {
    if (in.err) {
      auto severity = kafka::classify(in.err);
      std::string what = std::string("consumer: ") + rd_kafka_err2str(in.err);
      if (in.err == RD_KAFKA_RESP_ERR__FATAL) throw KafkaError(what + ": " + consumer->fatal_reason(), in.err, severity);
      log(config::LogLevel::warn, what);  // transient (broker down, topic not there yet): librdkafka retries
      return;
    }
    Source& src = sources[index];
    if (!src.assigned) return;  // a message fetched before a revoke; it will be read again
    src.position = in.offset + 1;
    ++stats.consumed;
    rd_kafka_timestamp_type_t type;
    const std::int64_t ts = rd_kafka_message_timestamp(&in, &type);
    src.pending.push_back(Pending{in.offset, 0, ts});
    Pending& entry = src.pending.back();

    if (options.bypass_dedup) {
      ++stats.passed;
      send(cfg.kafka.output_topic, output_partition(src, cfg.kafka.output_topic), in, copy_headers(in), index, entry);
      return;
    }

    const dedup::Verdict& verdict = outcome->verdict;
    const std::string_view error = outcome->error;
    const std::uint64_t spent = outcome->spent_ns;
    stats.processing_ns += spent;
    stats.processing_seconds.observe(static_cast<double>(spent) * 1e-9);
    if (verdict.kind != dedup::VerdictKind::invalid)  // an invalid text is never looked up
      stats.candidates_per_probe.observe(static_cast<double>(verdict.candidates));

    const Source* of = nullptr;
    if (verdict.kind == dedup::VerdictKind::duplicate && verdict.match) {
      std::uint32_t of_index = ref_source(verdict.match->of);
      if (of_index < sources.size()) of = &sources[of_index];
    }
    if (options.on_verdict) {
      VerdictEvent event{src.topic, src.partition, in.offset, prepared->text(), &verdict, {}, 0, 0};
      if (of) {
        event.of_topic = of->topic;
        event.of_partition = of->partition;
        event.of_offset = ref_offset(verdict.match->of);
      }
      options.on_verdict(event);
    }

    switch (verdict.kind) {
      case dedup::VerdictKind::invalid:
        dead_letter(in, index, entry, std::string(error), true);
        return;
      case dedup::VerdictKind::unique:
        ++stats.unique;
        send(cfg.kafka.output_topic, output_partition(src, cfg.kafka.output_topic), in, copy_headers(in), index, entry);
        if (changelog) append_changelog(src, index, in.offset, time, verdict.fingerprint, outcome->kept_sketch, entry);
        return;
      case dedup::VerdictKind::duplicate: break;
    }
    ++stats.duplicate;
    if (verdict.match) {
      auto d = static_cast<std::size_t>(verdict.match->distance);
      if (d < stats.match_distance.size()) ++stats.match_distance[d];
    }
    if (cfg.action == config::Action::drop) {
      ++stats.dropped;
      return;
    }
    rd_kafka_headers_t* hdrs = copy_headers(in);
    if (!hdrs) hdrs = rd_kafka_headers_new(4);
    auto add = [hdrs](const char* name, const std::string& value) {
      rd_kafka_header_add(hdrs, name, -1, value.data(), static_cast<ssize_t>(value.size()));
    };
    add("neardup-verdict", "duplicate");
    if (verdict.match) {
      std::string of_text = of ? of->topic + "/" + std::to_string(of->partition) + "/" +
                                     std::to_string(ref_offset(verdict.match->of))
                               : std::string("unknown");
      add("neardup-of", of_text);
      add("neardup-distance", std::to_string(verdict.match->distance));
    }
    add("neardup-fingerprint", verdict.fingerprint.hex());
    const std::string& topic = cfg.action == config::Action::tag ? cfg.kafka.output_topic : cfg.kafka.duplicates_topic;
    send(topic, output_partition(src, topic), in, hdrs, index, entry);
  }

  // ---------------------------------------------------------------- changelog

  /// The kept message's fingerprint entry: one more output of the input message,
  /// acknowledged when the batch record that carries it is.
  void append_changelog(const Source& src, std::uint32_t index, std::int64_t offset, dedup::EventTime time,
                        dedup::Fingerprint fingerprint, const dedup::SketchResult& sketch, Pending& entry) {
    ChangelogRecord r;
    r.fingerprint = fingerprint;
    r.time = time;
    r.topic = src.topic;
    r.partition = src.partition;
    r.offset = offset;
    r.instance = instance_id;
    if (cfg.dedup.sketch.enabled && sketch.shingles != 0) {
      r.has_sketch = true;
      r.bits = cfg.dedup.sketch.bits;
      r.band_bins = cfg.dedup.sketch.band_bins;
      r.bands = cfg.dedup.sketch.bands;
      r.sketch = sketch;
    }
    changelog_batch->add(r);
    batch_refs.push_back(pack_ref(index, offset));
    ++entry.outstanding;
    if (changelog_batch->entries() >= kBatchMaxEntries || changelog_batch->bytes() >= kBatchMaxBytes) flush_changelog();
  }

  /// Produces the pending changelog entries as one batch record.
  void flush_changelog() {
    if (changelog_batch->empty()) return;
    ChangelogBatch::Encoded encoded = changelog_batch->take();
    const std::uint64_t number = next_batch++;
    kafka::Producer::Record rec;
    rec.topic = cfg.kafka.changelog_topic;
    rec.key = encoded.key;
    rec.has_key = true;
    rec.value = encoded.value;
    rec.timestamp_ms = encoded.newest.ms > 0 ? encoded.newest.ms : 0;
    rec.opaque = to_opaque(kBatchSource, static_cast<std::int64_t>(number));
    batches_in_flight.emplace(number, std::move(batch_refs));
    batch_refs = {};
    if (rd_kafka_resp_err_t err = producer->produce(rec)) {
      // Its entries' outstanding counts stay up: none of those offsets commits.
      batches_in_flight.erase(number);
      ++stats.produce_errors;
      throw KafkaError("cannot append to the window changelog '" + cfg.kafka.changelog_topic + "': " +
                           rd_kafka_err2str(err),
                       err, kafka::Severity::fatal);
    }
  }

  /// The sketch of a changelog record, if this engine can use it (same sketch options).
  const dedup::SketchResult& usable_sketch(const ChangelogRecord& r) {
    static const dedup::SketchResult kNone{};
    const auto& so = cfg.dedup.sketch;
    if (!r.has_sketch || !so.enabled) return kNone;
    if (r.bits != so.bits || r.band_bins != so.band_bins || r.bands != so.bands) {
      if (!sketch_mismatch_logged) {
        sketch_mismatch_logged = true;
        log(config::LogLevel::warn, "window changelog: records made with other dedup.sketch options (bits/bands/"
                                    "band_bins) are remembered by their fingerprint only");
      }
      return kNone;
    }
    return r.sketch;
  }
  bool sketch_mismatch_logged = false;

  void on_corrupt_changelog(std::int32_t partition, std::int64_t offset, const std::string& reason) {
    ++stats.changelog_corrupt;
    // The first few are logged one by one; the rebuild's summary line gives the total.
    if (++corrupt_logged <= 10) {
      log(config::LogLevel::warn, "window changelog '" + cfg.kafka.changelog_topic + "' partition " +
                                      std::to_string(partition) + " offset " + std::to_string(offset) +
                                      ": unreadable record skipped (" + reason + ")");
    }
  }

  /// Reads the whole changelog and replays it into the engine. Returns false if
  /// a stop was requested first. Throws KafkaError (missing topic, fatal errors).
  bool rebuild_window() {
    const std::string& topic = cfg.kafka.changelog_topic;
    if (topic.empty() || options.bypass_dedup) {
      stats.window_ready = true;
      return true;
    }
    const auto started = Clock::now();
    changelog = std::make_unique<ChangelogReader>(consumer_properties, topic, std::chrono::seconds(10));
    log(config::LogLevel::info, "rebuilding the window from changelog '" + topic + "' (" +
                                    std::to_string(changelog->partitions()) + " partition(s))");
    struct Replayed {
      dedup::EventTime time;
      dedup::RecordRef ref;
      dedup::Fingerprint fingerprint;
      dedup::SketchResult sketch;
    };
    std::vector<Replayed> entries;
    auto last_progress = Clock::now(), last_log = Clock::now();
    const bool complete = changelog->catch_up(
        [&](const ChangelogRecord& r) {
          entries.push_back(Replayed{r.time, pack_ref(intern(r.topic, r.partition), r.offset), r.fingerprint,
                                     usable_sketch(r)});
          if ((entries.size() & 4095) == 0 && Clock::now() - last_progress >= options.progress_interval) {
            last_progress = Clock::now();
            publish();
            if (last_progress - last_log >= std::chrono::seconds(10)) {
              last_log = last_progress;
              log(config::LogLevel::info, "rebuilding the window: " + std::to_string(changelog->records_read()) +
                                              " changelog records read");
            }
          }
        },
        [this](std::int32_t p, std::int64_t o, const std::string& reason) { on_corrupt_changelog(p, o, reason); },
        [this] { return stop.load(std::memory_order_relaxed) || stop_signalled(); });
    if (!complete) return false;
    // Event-time order; the same message written twice (reprocessed after a
    // crash) is remembered once.
    std::stable_sort(entries.begin(), entries.end(), [](const Replayed& a, const Replayed& b) {
      return a.time != b.time ? a.time < b.time : a.ref.value < b.ref.value;
    });
    entries.erase(std::unique(entries.begin(), entries.end(),
                              [](const Replayed& a, const Replayed& b) {
                                return a.time == b.time && a.ref == b.ref && a.fingerprint == b.fingerprint;
                              }),
                  entries.end());
    std::size_t first = 0;
    if (!entries.empty()) {
      // Only what the window would still hold: the newest max_entries, within the duration.
      const std::int64_t horizon = entries.back().time.ms - cfg.dedup.window.duration.count();
      if (entries.size() > cfg.dedup.window.max_entries) first = entries.size() - cfg.dedup.window.max_entries;
      while (first < entries.size() && entries[first].time.ms < horizon) ++first;
    }
    dedup::Engine& engine = worker->engine();  // no slot is submitted yet
    for (std::size_t i = first; i < entries.size(); ++i) {
      const Replayed& e = entries[i];
      engine.remember(e.fingerprint, e.time, e.ref, e.sketch);
    }
    engine_stats = engine.stats();
    changelog->skip_instance(instance_id);  // following: this process's own batches need no parsing
    stats.changelog_replayed = entries.size() - first;
    stats.window_ready = true;
    stats.changelog_rebuild_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", stats.changelog_rebuild_seconds);
    std::string line = "window rebuilt from changelog: " + std::to_string(stats.changelog_replayed) + " entries in " +
                       seconds + " s";
    if (stats.changelog_corrupt) line += " (" + std::to_string(stats.changelog_corrupt) + " unreadable record(s) skipped)";
    log(config::LogLevel::info, line);
    return true;
  }

  /// Remembers what other instances kept since the last call (this process's own
  /// records are in the window already).
  void follow_changelog() {
    if (!changelog) return;
    changelog->poll([this](const ChangelogRecord& r) { remember_followed(r); },
                    [this](std::int32_t p, std::int64_t o, const std::string& reason) { on_corrupt_changelog(p, o, reason); },
                    2000);
  }

  /// Another instance's kept message, for the worker's window (before its next slot).
  void remember_followed(const ChangelogRecord& r) {
    if (r.instance == instance_id) return;
    followed.push_back(Remembered{r.fingerprint, r.time, pack_ref(intern(r.topic, r.partition), r.offset), usable_sketch(r)});
    ++stats.changelog_followed;
  }

  /// On an assignment: what the partitions' previous owners kept is in the
  /// changelog by now (their revoke waited for it); read it before judging
  /// any message of those partitions, so their near-copies are caught.
  void read_changelog_to_end() {
    if (!changelog) return;
    const bool complete = changelog->read_to_end(
        [this](const ChangelogRecord& r) { remember_followed(r); },
        [this](std::int32_t p, std::int64_t o, const std::string& reason) { on_corrupt_changelog(p, o, reason); },
        std::chrono::seconds(10));
    if (!complete) {
      log(config::LogLevel::warn, "window changelog: not read to its end within 10 s of an assignment; until it is, "
                                  "near-copies of what the previous owner kept last can pass as unique");
    }
  }

  void fill_lag() {
    stats.consumer_lag.clear();
    for (const auto& src : sources) {
      if (!src.assigned) continue;
      std::int64_t lo = 0, hi = 0;
      if (rd_kafka_get_watermark_offsets(consumer->handle(), src.topic.c_str(), src.partition, &lo, &hi) ==
              RD_KAFKA_RESP_ERR_NO_ERROR &&
          hi >= 0) {
        // A committed offset below the log start (trimmed by retention) resumes at the start.
        std::int64_t pos = std::max(lo, src.position >= 0 ? src.position : (src.next_commit >= 0 ? src.next_commit : lo));
        stats.consumer_lag[{src.topic, src.partition}] = std::max<std::int64_t>(0, hi - pos);
      }
    }
  }

  void publish() {
    if (!options.on_progress) return;
    stats.engine = engine_stats;
    fill_lag();
    options.on_progress(stats);
  }

  void raise_if_fatal() {
    if (producer->fatal()) throw KafkaError("producer: " + producer->fatal_reason(), RD_KAFKA_RESP_ERR__FATAL, kafka::Severity::fatal);
    if (consumer->fatal()) throw KafkaError("consumer: " + consumer->fatal_reason(), RD_KAFKA_RESP_ERR__FATAL, kafka::Severity::fatal);
    if (!delivery_fatal.empty()) throw KafkaError(delivery_fatal, RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
    if (!rebalance_fatal.empty()) throw KafkaError(rebalance_fatal, RD_KAFKA_RESP_ERR__FAIL, kafka::Severity::fatal);
    if (rebalance_exception) std::rethrow_exception(std::exchange(rebalance_exception, nullptr));
  }

  int run() {
    try {
      publish();
      if (!rebuild_window()) {
        log(config::LogLevel::info, "stopped while rebuilding the window; nothing was consumed");
        publish();
        return 0;
      }
      consumer->subscribe(cfg.kafka.input_topics);
      auto last_commit = Clock::now(), last_progress = Clock::now();
      while (!stop.load(std::memory_order_relaxed) && !stop_signalled()) {
        if (options.bypass_dedup) {
          Slot& slot = slots[0];
          consumer->poll_batch(slot.messages, 2000, std::chrono::milliseconds(50));
          for (const auto& m : slot.messages)
            handle(*m, m->err ? 0 : intern(rd_kafka_topic_name(m->rkt), m->partition), nullptr, nullptr, {});
          slot.messages.clear();
        } else {
          // Double buffering: the worker analyzes and judges the batch just
          // polled while this thread produces the one before it. With a batch in
          // flight the poll does not wait, so a lone message is not held back.
          const int next = inflight == 0 ? 1 : 0;
          Slot& polled = slots[next];
          polled.messages.clear();
          consumer->poll_batch(polled.messages, 2000, std::chrono::milliseconds(inflight >= 0 ? 0 : 50));
          // (a revoke inside the poll may have finished the in-flight batch already)
          const int previous = inflight;
          if (previous >= 0) wait_worker(slots[previous]);
          inflight = -1;
          if (!polled.messages.empty() || !followed.empty()) {
            submit(polled);
            inflight = next;
          }
          if (previous >= 0) handle_slot(slots[previous]);
        }
        flush_changelog();
        follow_changelog();
        producer->poll(std::chrono::milliseconds(0));
        raise_if_fatal();
        auto now = Clock::now();
        if (now - last_commit >= options.commit_interval) {
          commit(false);
          last_commit = now;
        }
        if (now - last_progress >= options.progress_interval) {
          publish();
          last_progress = now;
        }
      }
      log(config::LogLevel::info, "stopping: flushing output and committing offsets");
      finish_inflight();  // every polled message of a still assigned partition is handled
      bool drained = drain(options.shutdown_flush);
      raise_if_fatal();
      commit(true);
      if (!drained) {
        log(config::LogLevel::warn, std::to_string(producer->in_flight()) +
                                        " output record(s) unacknowledged at shutdown; their input offsets are not "
                                        "committed and will be read again");
      }
      // Leaving the group revokes the partitions; the flush above had the
      // shutdown's time, so that revoke only commits what is acknowledged by now.
      revoke_drain = std::chrono::milliseconds(500);
      consumer->close();
      publish();
      return 0;
    } catch (const KafkaError& e) {
      fatal_error = e.what();
      log(config::LogLevel::error, std::string("fatal Kafka error, stopping (offsets of undelivered messages are not "
                                               "committed): ") + e.what());
      try {
        // The worker's batch is dropped (its offsets are not committed); wait
        // for it only so that its counters are final.
        if (inflight >= 0) wait_worker(slots[std::exchange(inflight, -1)]);
      } catch (...) {
      }
      try {
        // Commit only what is fully acknowledged, then leave.
        producer->poll(std::chrono::milliseconds(0));
        commit(true);
      } catch (...) {
      }
      abandoning = true;
      try {
        consumer->close();  // leaves the group now (its revoke produces and commits nothing)
      } catch (...) {
      }
      publish();
      return 1;
    }
  }
};

metrics::ServiceStats to_metrics(const ServiceSnapshot& s, int max_distance) {
  metrics::ServiceStats m = metrics::ServiceStats::with_buckets(max_distance);
  m.unique = s.unique + s.passed;
  m.duplicate = s.duplicate;
  m.invalid = s.invalid;
  for (std::size_t d = 0; d < s.match_distance.size(); ++d) {
    // Filled bucket by bucket: one observe() per duplicate would be O(duplicates).
    if (d < m.match_distance.counts.size()) m.match_distance.counts[d] += s.match_distance[d];
    m.match_distance.count += s.match_distance[d];
    m.match_distance.sum += static_cast<double>(d * s.match_distance[d]);
  }
  m.window_entries = s.engine.window.entries;
  m.window_bytes = s.engine.window.bytes;
  m.window_evictions = s.engine.window.evictions;
  m.processing_seconds = s.processing_seconds;
  m.candidates_per_probe = s.candidates_per_probe;
  auto& e2e = m.end_to_end_latency_seconds;
  // Each stored bucket goes whole into the first metric bucket at or above its
  // upper end (exact while the metric's bounds are whole ms, or whole seconds above 60 s).
  auto add = [&e2e](double upper_seconds, std::uint64_t n) {
    if (n == 0) return;
    const auto bucket = static_cast<std::size_t>(std::lower_bound(e2e.bounds.begin(), e2e.bounds.end(), upper_seconds) -
                                                 e2e.bounds.begin());
    e2e.counts[bucket] += n;
    e2e.count += n;
  };
  for (std::size_t ms = 0; ms < s.end_to_end.counts.size(); ++ms) add(static_cast<double>(ms) / 1000.0, s.end_to_end.counts[ms]);
  for (std::size_t i = 0; i < s.end_to_end.slow.size(); ++i) add(static_cast<double>(i + LatencyHistogram::kFirstSlowSecond), s.end_to_end.slow[i]);
  if (s.end_to_end.beyond != 0) {  // past every bound: +Inf
    e2e.counts.back() += s.end_to_end.beyond;
    e2e.count += s.end_to_end.beyond;
  }
  e2e.sum += s.end_to_end.sum_ms / 1000.0;
  m.consumer_lag = s.consumer_lag;
  m.produce_errors = s.produce_errors;
  m.dead_letters = s.dead_letters;
  m.changelog_written = s.changelog_written;
  m.changelog_replayed = s.changelog_replayed;
  m.changelog_followed = s.changelog_followed;
  m.changelog_corrupt = s.changelog_corrupt;
  m.window_rebuild_seconds = s.changelog_rebuild_seconds;
  return m;
}

Service::Service(ServiceOptions options) {
  if (options.brokers.empty() && options.config.kafka.brokers) options.brokers = *options.config.kafka.brokers;
  if (options.brokers.empty()) throw std::invalid_argument("no Kafka brokers given (kafka.brokers or --brokers)");
  if (options.config.kafka.input_topics.empty()) throw std::invalid_argument("kafka.input_topics is empty");
  impl_ = std::make_unique<Impl>(std::move(options), stop_);
}

Service::~Service() = default;

int Service::run() { return impl_->run(); }
const std::string& Service::fatal_error() const { return impl_->fatal_error; }
ServiceSnapshot Service::snapshot() const {
  ServiceSnapshot s = impl_->stats;
  s.engine = impl_->engine_stats;
  return s;
}

int host_service(const config::Config& config, const HostOptions& host, ServiceSnapshot* final) {
  install_stop_signal_handlers();
  std::unique_ptr<EmbeddedBroker> broker;
  std::string brokers;
  if (config.kafka.brokers && !config.kafka.brokers->empty()) {
    brokers = *config.kafka.brokers;
  } else {
    broker = std::make_unique<EmbeddedBroker>();
    for (const auto& topic : service_topics(config.kafka)) broker->create_topic(topic, config.kafka.embedded_partitions);
    brokers = broker->bootstrap();
    log(config::LogLevel::info, "embedded broker at " + brokers);
    if (!host.bootstrap_file.empty()) write_bootstrap_file(host.bootstrap_file, brokers);
  }

  std::unique_ptr<metrics::Exporter> exporter;
  if (!config.metrics.listen.empty()) {
    metrics::BuildInfo build;
#ifdef NEARDUP_VERSION
    build.version = NEARDUP_VERSION;
#endif
    build.labels = {{"k", std::to_string(config.dedup.index.max_distance)},
                    {"action", config.action == config::Action::drop  ? "drop"
                               : config.action == config::Action::tag ? "tag"
                                                                      : "route"}};
    exporter = std::make_unique<metrics::Exporter>(config.metrics.listen, build);
    log(config::LogLevel::info, "metrics at http://" + exporter->address() + "/metrics");
  }
  metrics::ProgressLine progress(stderr, host.progress_every, host.force_progress);

  ServiceOptions options;
  options.config = config;
  options.brokers = brokers;
  options.on_verdict = host.on_verdict;
  Service* self = nullptr;
  const int k = config.dedup.index.max_distance;
  options.on_progress = [&](const ServiceSnapshot& snapshot) {
    metrics::ServiceStats m = to_metrics(snapshot, k);
    if (exporter) {
      exporter->publish(m);
      exporter->set_ready(snapshot.assigned && snapshot.window_ready);
    }
    progress.update(m, std::chrono::steady_clock::now());
    if (host.done && self && host.done(snapshot)) self->request_stop();
  };
  Service service(std::move(options));
  self = &service;
  if (host.on_brokers) host.on_brokers(brokers);
  log(config::LogLevel::info, "consuming " + std::to_string(config.kafka.input_topics.size()) +
                                  " topic(s) from " + brokers + " as group '" + config.kafka.group_id + "'");
  int status = service.run();
  progress.finish();
  ServiceSnapshot last = service.snapshot();
  if (exporter) exporter->publish(to_metrics(last, k));
  if (final) *final = std::move(last);
  return status;
}

}  // namespace neardup::stream
