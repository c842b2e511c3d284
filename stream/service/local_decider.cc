// The local way of deciding (decider.h): this instance's dedup worker owns the
// window; the changelog carries what it keeps to restarts and to the other
// instances. And the passthrough baseline, which keeps every message as it is.
#include <chrono>
#include <memory>
#include <vector>

#include "stream/changelog/changelog_writer.h"
#include "stream/changelog/window_restore.h"
#include "stream/core/process.h"
#include "stream/pipeline/story_writer.h"
#include "stream/service/decider.h"

namespace neardup::stream {

namespace {

class LocalDecider final : public Decider {
 public:
  explicit LocalDecider(const DeciderContext& context) : c_(context) {
    if (!c_.cfg.kafka.changelog_topic.empty())
      writer_ = std::make_unique<ChangelogWriter>(c_.cfg, c_.producer, c_.ledger, c_.instance_id);
    if (!c_.cfg.kafka.summary_topic.empty())
      stories_ = std::make_unique<StoryWriter>(c_.cfg, &c_.producer, summary_opaque());
    worker_ = std::make_unique<DedupWorker>(c_.cfg, /*decides=*/true);
  }

  /// Reads the whole changelog and replays it into the worker's engine. False
  /// if a stop was requested first. Throws KafkaError (missing topic, fatal errors).
  bool start(dedup::EngineStats& window_stats) override {
    if (!writer_) {
      c_.stats.window_ready = true;
      return true;
    }
    follower_ = std::make_unique<ChangelogFollower>(c_.cfg, c_.consumer_properties, c_.sources,
                                                    c_.stats, c_.instance_id);
    RestoreHooks hooks;
    hooks.progress = [this] { c_.sink.progress(); };
    hooks.progress_every = c_.progress_interval;
    hooks.stopped = [this] { return c_.sink.stopping(); };
    dedup::Engine& engine = worker_->engine();  // no slot is submitted yet
    if (!follower_->rebuild(engine, hooks)) return false;
    if (stories_) {
      stories_->restore(engine, c_.sources, c_.consumer_properties, std::chrono::seconds(30));
    }
    window_stats = engine.stats();
    c_.stats.window_ready = true;
    return true;
  }

  bool has_remembered() const override { return !followed_.empty(); }
  void analyze(Slot& slot) override {
    slot.remember.swap(followed_);
    followed_.clear();
    worker_->submit(slot);
  }
  void wait_analyzed() override { worker_->wait(); }

  void decide(Slot& slot) override {
    for (std::size_t i = 0; i < slot.messages.size(); ++i) {
      const std::optional<Ticket> ticket = c_.sink.arrive(slot, i);
      if (!ticket) continue;
      const kafka::Message m = slot.messages[i];
      const Job& job = slot.jobs[i];
      const Outcome& outcome = slot.outcomes[i];
      if (writer_ && outcome.verdict.kind == dedup::VerdictKind::unique) {
        writer_->append(c_.sources[job.source], *ticket, m.offset(), job.time,
                        outcome.verdict.fingerprint, outcome.kept_sketch,
                        slot.prepared[i].analysis.scope);
      }
      if (stories_ && job.decide) {
        const dedup::RecordRef ref = pack_ref(job.source, m.offset());
        if (outcome.verdict.kind == dedup::VerdictKind::unique) {
          std::optional<std::string_view> key;
          if (m.has_key()) key = m.key();
          stories_->note_kept(ref, key, slot.prepared[i].text());
        }
        stories_->note_verdict(outcome.verdict, ref, job.time);
      }
      c_.sink.decided(m, job.source, *ticket, slot.prepared[i], outcome);
    }
    // After the batch's outputs: under exactly-once, in their transaction.
    if (stories_)
      stories_->summarize(slot.oldest_live, c_.sources, std::chrono::steady_clock::now());
    slot.messages.clear();
  }

  /// Sends the changelog batch and remembers what other instances kept since.
  void step(std::chrono::milliseconds) override {
    flush();
    if (follower_) follower_->follow(followed_);
  }
  void flush() override {
    if (writer_) writer_->flush();
  }

  void publish(ServiceSnapshot& stats, dedup::EngineStats&) override {
    stats.summarizing = stories_ != nullptr;
    if (stories_) stats.stories = stories_->stats();
  }

  /// What the partitions' previous owners kept is in the changelog by now
  /// (their revoke waited for it): it is read before any message of those
  /// partitions is judged, so their near-copies are caught.
  void assigned() override {
    if (follower_) follower_->read_to_end(followed_);
  }

  /// The stories go with the transactions (exactly-once: an aborted one's
  /// messages, judged again, count once; the first checkpoint is what was restored).
  void committed() override {
    if (stories_) stories_->checkpoint();
  }
  void forget() override {
    if (stories_) stories_->rollback();
  }

  void on_delivery(Ticket ticket, bool delivered) override {
    if (is_summary_delivery(ticket)) return;  // (counted by the service)
    if (writer_) {
      c_.stats.changelog_written +=
          writer_->on_delivery(ticket.seq, delivered, [this](Ticket t) { c_.sink.acknowledge(t); });
    }
  }

 private:
  const DeciderContext c_;
  std::unique_ptr<ChangelogWriter> writer_;      // null when the changelog is off
  std::unique_ptr<ChangelogFollower> follower_;  // set once the changelog is read
  std::vector<Remembered> followed_;             // other instances' entries for the next slot
  std::unique_ptr<StoryWriter> stories_;         // null when kafka.summary_topic is ""
  /// The window's owner; last: its thread is joined before what it uses goes.
  std::unique_ptr<DedupWorker> worker_;
};

/// The passthrough baseline (ServiceOptions::bypass_dedup): every message is
/// kept as it is, undecided; no worker decodes or analyzes it.
class PassthroughDecider final : public Decider {
 public:
  explicit PassthroughDecider(const DeciderContext& context) : c_(context) {}
  bool start(dedup::EngineStats&) override {
    c_.stats.window_ready = true;
    return true;
  }
  void analyze(Slot&) override {}
  void wait_analyzed() override {}
  void decide(Slot& slot) override {
    for (std::size_t i = 0; i < slot.messages.size(); ++i) {
      if (const std::optional<Ticket> ticket = c_.sink.arrive(slot, i))
        c_.sink.passed(slot.messages[i], slot.jobs[i].source, *ticket);
    }
    slot.messages.clear();
  }

 private:
  const DeciderContext c_;
};

}  // namespace

std::unique_ptr<Decider> make_local_decider(const DeciderContext& context) {
  return std::make_unique<LocalDecider>(context);
}

std::unique_ptr<Decider> make_passthrough_decider(const DeciderContext& context) {
  return std::make_unique<PassthroughDecider>(context);
}

bool is_decider_record(Ticket ticket) { return ticket.source == ChangelogWriter::kBatchSource; }

namespace {
constexpr std::uint64_t kSummarySeq = std::uint64_t{1} << 46;  // (requests: bit 47)
}  // namespace

void* summary_opaque() {
  return reinterpret_cast<void*>(
      static_cast<std::uintptr_t>(Ticket{ChangelogWriter::kBatchSource, kSummarySeq}.pack()));
}

bool is_summary_delivery(Ticket ticket) {
  return ticket.source == ChangelogWriter::kBatchSource && ticket.seq == kSummarySeq;
}

}  // namespace neardup::stream
