#include "stream/pipeline/story_writer.h"

#include <algorithm>

namespace neardup::stream {
namespace {

constexpr std::size_t kHeldTexts = 4096;

StoryPosition position_of(const Sources& sources, dedup::RecordRef ref) {
  const Source& src = sources[ref_source(ref)];
  return StoryPosition{src.topic, src.partition, ref_offset(ref)};
}

}  // namespace

StoryWriter::StoryWriter(const config::Config& config, kafka::Producer* producer, void* opaque)
    : topic_(config.kafka.summary_topic),
      redact_(config.metrics.redact_texts),
      interval_(config.dedup.window.summary_interval),
      producer_(producer),
      opaque_(opaque),
      held_(kHeldTexts) {}

void StoryWriter::note_kept(dedup::RecordRef ref, std::optional<std::string_view> key,
                            std::string_view text) {
  Held& slot = held_[next_held_];
  if (slot.used) {
    auto it = held_index_.find(slot.ref);
    if (it != held_index_.end() && it->second == next_held_) held_index_.erase(it);
  }
  slot.used = true;
  slot.ref = ref.value;
  slot.has_key = key.has_value();
  slot.key.assign(key.value_or(std::string_view()));
  if (redact_)
    slot.excerpt.clear();
  else
    slot.excerpt.assign(text.substr(0, std::min(text.size(), kStoryExcerptBytes + 4)));
  held_index_[ref.value] = next_held_;
  next_held_ = (next_held_ + 1) % held_.size();
}

void StoryWriter::note_verdict(const dedup::Verdict& verdict, dedup::RecordRef ref,
                               dedup::EventTime time) {
  if (verdict.kind != dedup::VerdictKind::duplicate || !verdict.match) return;
  std::optional<std::uint64_t> renewed;
  if (verdict.refreshed) renewed = verdict.sequence;
  const dedup::Story& story = book_.count(*verdict.match, ref, time, verdict.similarity, renewed);
  if (story.duplicates != 1) return;
  // A new story: what is held of its original goes with its summaries.
  auto it = held_index_.find(story.original.value);
  if (it == held_index_.end()) return;
  const Held& held = held_[it->second];
  Extra& extra = extras_[story.original.value];
  extra.has_key = held.has_key;
  extra.key = held.key;
  extra.has_excerpt = !redact_;
  extra.excerpt = held.excerpt;
}

std::size_t StoryWriter::summarize(std::uint64_t oldest_live, const Sources& sources,
                                   std::chrono::steady_clock::time_point now) {
  std::size_t written = book_.close(oldest_live, [&](const dedup::Story& story) {
    write(story, sources, true);
    stats_.sizes.observe(static_cast<double>(story.duplicates));
    ++stats_.finals;
    extras_.erase(story.original.value);
  });
  if (interval_.count() > 0) {
    if (!last_report_) last_report_ = now;
    if (now - *last_report_ >= interval_) {
      last_report_ = now;
      written += book_.report_changed([&](const dedup::Story& story) {
        write(story, sources, false);
        ++stats_.interim;
      });
    }
  }
  stats_.stories = book_.size();
  return written;
}

void StoryWriter::reset(kafka::Producer* producer) {
  producer_ = producer;
  book_ = dedup::StoryBook();
  extras_.clear();
  stats_.stories = 0;
}

void StoryWriter::write(const dedup::Story& story, const Sources& sources, bool final) {
  samples_.clear();
  for (std::size_t i = 0; i < story.sampled; ++i)
    samples_.push_back(position_of(sources, story.samples[i]));
  StoryContext context;
  context.original = position_of(sources, story.original);
  context.samples = samples_;
  context.final = final;
  if (auto it = extras_.find(story.original.value); it != extras_.end()) {
    if (it->second.has_key) context.key = it->second.key;
    if (it->second.has_excerpt) context.excerpt = it->second.excerpt;
  }
  story_key(context.original, key_);
  encode_story(story, context, value_);
  kafka::Producer::Record rec;
  rec.topic = topic_;
  rec.key = key_;
  rec.has_key = true;
  rec.value = value_;
  rec.timestamp_ms = story.last_seen.ms > 0 ? story.last_seen.ms : 0;
  rec.opaque = opaque_;
  if (const kafka::ErrorCode err = producer_->produce(rec)) {
    throw kafka::KafkaError(
        "cannot write a story summary to '" + topic_ + "': " + kafka::describe(err), err,
        kafka::Severity::fatal);
  }
}

}  // namespace neardup::stream
