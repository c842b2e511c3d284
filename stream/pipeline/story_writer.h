#pragma once
// Story summaries on Kafka (kafka.summary_topic; the record format is
// stream/records/story_record.h): the thread that takes the window decisions
// (the service's pipeline thread deciding locally, or the group judge) counts
// each duplicate here, and after each batch closes the stories whose
// original left the window (final summaries) and, every
// window.summary_interval, reports the stories that grew (interim ones). The
// records go through the caller's producer, so under exactly-once they are in
// the transaction of the verdicts they count, and the caller checkpoints the
// stories at each commit and rolls them back at an abort.
//
// Each duplicate counts once: a message's position (its source partition and
// offset) counts the first time it is judged, and a message judged again (a
// judge request sent again, an input read again after a rewind) does not
// count, however it is judged. What "first" means is per source partition:
// the highest offset judged so far (its messages are judged in offset order
// but for such repeats, which only ever go back).

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

  /// A verdict (every one the deciding thread takes, whatever its kind): a
  /// duplicate is counted towards its original's story, unless its source
  /// partition had a message at or after its offset judged already (since the
  /// last reset()). `ref` and `time`: the message's. O(log stories).
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

  /// Forgets every story and every offset judged (a new window: a judge's
  /// takeover) and writes through `producer` from now on. stats() keep counting.
  void reset(kafka::Producer* producer);

  /// Exactly-once, at every commit (and once after restore(), which starts
  /// the journal): what was counted and summarized so far is for good. From
  /// the first call on, stats() count the summaries of committed
  /// transactions only (here). O(finals since).
  void checkpoint();
  /// Exactly-once, after an abort: the stories and the offsets judged go
  /// back to the last checkpoint() (its messages, judged again, count
  /// again; its summaries are written again). O(changes since).
  void rollback();

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
    std::uint64_t saved_in = 0;  // the checkpoint whose journal holds its earlier value
  };
  void write(const dedup::Story& story, const Sources& sources, bool final);
  /// Whether `ref`'s source partition has no message at or after its offset
  /// judged yet; it has from now on.
  bool first_judging(dedup::RecordRef ref);
  /// extras_[ref] is about to change: its value at the checkpoint is kept.
  void save_extra(std::uint64_t ref);

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
  struct Judged {                // per source partition (SourceIndex)
    std::int64_t through = -1;   // the highest offset judged
    std::uint64_t saved_in = 0;  // the checkpoint whose journal holds its earlier value
  };
  std::vector<Judged> judged_;
  // Since the last checkpoint (transactional only): earlier values to roll back to.
  bool transactional_ = false;
  std::uint64_t epoch_ = 1;
  std::vector<std::pair<std::uint32_t, std::int64_t>> judged_journal_;
  std::vector<std::pair<std::uint64_t, std::optional<Extra>>> extras_journal_;
  // Transactional: what stats_ gets at the next checkpoint (counters never go back).
  std::vector<std::uint64_t> pending_sizes_;  // the finals' duplicates
  std::uint64_t pending_interim_ = 0;
  std::vector<StoryPosition> samples_;  // buffers reused by write()
  std::string key_, value_;
};

}  // namespace neardup::stream
