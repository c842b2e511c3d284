#pragma once
// Story summaries on Kafka (kafka.summary_topic; the record format is
// stream/records/story_record.h): the thread that takes the window decisions
// (the service's pipeline thread deciding locally, or the group judge) counts
// each duplicate here, and after each batch closes the stories whose
// original left the window (final summaries) and, every
// window.summary_interval, reports the stories that grew (interim ones). The
// records go through the caller's producer, so under exactly-once they are in
// the transaction of the verdicts they count.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "dedup/engine/engine.h"
#include "dedup/engine/stories.h"
#include "stream/core/service_stats.h"
#include "stream/core/sources.h"
#include "stream/kafka/kafka.h"
#include "stream/records/story_record.h"

namespace neardup::stream {

/// Not thread-safe: the deciding thread's. Never throws from note_*(); the
/// summary calls throw kafka::KafkaError (fatal) when the producer refuses a record.
class StoryWriter {
 public:
  /// The topic is config.kafka.summary_topic (non-empty); `opaque` goes with
  /// every record to the producer's delivery reports. `producer` (not owned)
  /// must outlive it, or until reset() names another.
  StoryWriter(const config::Config& config, kafka::Producer* producer, void* opaque);

  /// A kept message (of the window's ref `ref`): its key and the start of its
  /// text are held for a while (the newest 4096), for the summaries of a story
  /// it may start. Skip it when no text is at hand (the judge).
  void note_kept(dedup::RecordRef ref, std::optional<std::string_view> key, std::string_view text);

  /// A verdict: a duplicate is counted towards its original's story. `ref`
  /// and `time`: the duplicate's. Anything else is ignored. O(log stories).
  void note_verdict(const dedup::Verdict& verdict, dedup::RecordRef ref, dedup::EventTime time);

  /// After a batch: final summaries of the stories whose original left the
  /// window (`oldest_live`: dedup::Engine::oldest_live()), then, when
  /// window.summary_interval has passed since the last report, interim ones
  /// of the stories that grew since. `sources` names the refs. Returns the records produced.
  std::size_t summarize(std::uint64_t oldest_live, const Sources& sources,
                        std::chrono::steady_clock::time_point now);

  /// Reads the summary topic to its end (read_committed, `timeout` at most)
  /// and takes, for every original live in `engine`'s window whose latest
  /// summary is not final, its counts from there: a restart's stories go on
  /// counting (exactly so when their last summary counts every duplicate
  /// judged before the restart, see docs/KAFKA.md). Call it on an empty
  /// story book, after the window's rebuild. Returns the stories taken.
  /// Throws kafka::KafkaError when the topic cannot be read.
  std::size_t restore(const dedup::Engine& engine, Sources& sources,
                      const kafka::Properties& consumer_properties,
                      std::chrono::milliseconds timeout);

  /// Forgets every story (a new window: a judge's takeover) and writes
  /// through `producer` from now on. stats() keep counting.
  void reset(kafka::Producer* producer);

  const StoryStats& stats() const { return stats_; }

 private:
  struct Held {  // a kept message's key and excerpt
    std::uint64_t ref = 0;
    bool has_key = false, used = false;
    std::string key, excerpt;
  };
  struct Extra {  // what a story's summaries say of its original besides the counts
    bool has_key = false, has_excerpt = false;
    std::string key, excerpt;
  };
  void write(const dedup::Story& story, const Sources& sources, bool final);

  const std::string topic_;
  const bool redact_;
  const std::chrono::milliseconds interval_;
  kafka::Producer* producer_;
  void* opaque_;
  dedup::StoryBook book_;
  std::vector<Held> held_;  // a ring of the newest kept messages
  std::size_t next_held_ = 0;
  std::unordered_map<std::uint64_t, std::size_t> held_index_;  // ref -> slot in held_
  std::unordered_map<std::uint64_t, Extra> extras_;            // original ref -> its story's
  std::optional<std::chrono::steady_clock::time_point> last_report_;
  StoryStats stats_;
  std::vector<StoryPosition> samples_;  // buffers reused by write()
  std::string key_, value_;
};

}  // namespace neardup::stream
