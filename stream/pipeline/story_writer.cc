#include "stream/pipeline/story_writer.h"

#include <algorithm>
#include <map>

#include "stream/core/process.h"

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

bool StoryWriter::first_judging(dedup::RecordRef ref) {
  const std::uint32_t source = ref_source(ref).value;
  const std::int64_t offset = ref_offset(ref);
  if (source >= judged_.size()) judged_.resize(source + 1);
  Judged& judged = judged_[source];
  if (offset <= judged.through) return false;
  if (transactional_ && judged.saved_in != epoch_) {
    judged.saved_in = epoch_;
    judged_journal_.emplace_back(source, judged.through);
  }
  judged.through = offset;
  return true;
}

void StoryWriter::save_extra(std::uint64_t ref) {
  if (!transactional_) return;
  const auto it = extras_.find(ref);
  if (it == extras_.end()) {
    extras_journal_.emplace_back(ref, std::nullopt);
  } else if (it->second.saved_in != epoch_) {  // once a transaction: its value at the checkpoint
    extras_journal_.emplace_back(ref, it->second);
    it->second.saved_in = epoch_;
  }
}

void StoryWriter::note_verdict(const dedup::Verdict& verdict, dedup::RecordRef ref,
                               dedup::EventTime time) {
  if (!first_judging(ref)) return;  // judged again: counted the first time, if at all
  if (verdict.kind != dedup::VerdictKind::duplicate || !verdict.match) return;
  std::optional<std::uint64_t> renewed;
  if (verdict.refreshed) renewed = verdict.sequence;
  const dedup::Story& story = book_.count(*verdict.match, ref, time, verdict.similarity, renewed);
  if (story.duplicates != 1) return;
  // A new story: what is held of its original goes with its summaries.
  auto it = held_index_.find(story.original.value);
  if (it == held_index_.end()) return;
  const Held& held = held_[it->second];
  save_extra(story.original.value);
  Extra& extra = extras_[story.original.value];
  extra.saved_in = epoch_;  // (journaled just above: created or saved)
  extra.has_key = held.has_key;
  extra.key = held.key;
  extra.has_excerpt = !redact_;
  extra.excerpt = held.excerpt;
}

std::size_t StoryWriter::summarize(std::uint64_t oldest_live, const Sources& sources,
                                   std::chrono::steady_clock::time_point now) {
  std::size_t written = book_.close(oldest_live, [&](const dedup::Story& story) {
    write(story, sources, true);
    if (transactional_) {
      pending_sizes_.push_back(story.duplicates);
    } else {
      stats_.sizes.observe(static_cast<double>(story.duplicates));
      ++stats_.finals;
    }
    save_extra(story.original.value);
    extras_.erase(story.original.value);
  });
  if (interval_.count() > 0) {
    if (!last_report_) last_report_ = now;
    if (now - *last_report_ >= interval_) {
      last_report_ = now;
      written += book_.report_changed([&](const dedup::Story& story) {
        write(story, sources, false);
        if (transactional_)
          ++pending_interim_;
        else
          ++stats_.interim;
      });
    }
  }
  stats_.stories = book_.size();
  return written;
}

std::size_t StoryWriter::restore(const dedup::Engine& engine, Sources& sources,
                                 const kafka::Properties& consumer_properties,
                                 std::chrono::milliseconds timeout) {
  kafka::Properties props = consumer_properties;
  props["group.id"] = props["group.id"] + ".summary-reader";  // never joined nor committed to
  props.erase("group.instance.id");
  props["enable.auto.commit"] = "false";
  props["enable.partition.eof"] = "true";
  props["auto.offset.reset"] = "earliest";
  props["allow.auto.create.topics"] = "false";
  kafka::Consumer consumer(props, nullptr);
  const int n = consumer.partition_count(topic_, timeout);
  if (n <= 0) {
    throw kafka::KafkaError("story summary topic '" + topic_ +
                                "' does not exist: create it (`neardup topics create`) or set "
                                "kafka.summary_topic: \"\"",
                            kafka::errc::unknown_topic_or_partition, kafka::Severity::fatal);
  }
  kafka::TopicPartitions parts(static_cast<std::size_t>(n));
  std::vector<bool> done(static_cast<std::size_t>(n), false);
  int remaining = n;
  for (int p = 0; p < n; ++p) {
    const auto w = consumer.query_watermarks(topic_, p, timeout);
    if (w.error) {
      throw kafka::KafkaError("story summary topic '" + topic_ + "' partition " +
                                  std::to_string(p) + ": " + kafka::describe(w.error),
                              w.error, kafka::Severity::fatal);
    }
    if (w.high <= w.low) {
      done[static_cast<std::size_t>(p)] = true;
      --remaining;
    }
    parts.add(topic_, p, kafka::kOffsetBeginning);
  }
  if (const kafka::ErrorCode err = consumer.assign(parts)) {
    throw kafka::KafkaError(
        "cannot read the story summary topic '" + topic_ + "': " + kafka::describe(err), err,
        kafka::Severity::fatal);
  }
  // The latest summary of each story (one story's summaries share a key, so a partition).
  std::map<std::string, DecodedStory, std::less<>> latest;
  std::uint64_t unreadable = 0;
  std::vector<kafka::MessagePtr> batch;
  DecodedStory decoded;
  std::string error;
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (remaining > 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      throw kafka::KafkaError("story summary topic '" + topic_ + "': not read to its end within " +
                                  std::to_string(timeout.count() / 1000) + " s",
                              kafka::errc::fail, kafka::Severity::fatal);
    }
    batch.clear();
    consumer.poll_batch(batch, 1000, std::chrono::milliseconds(100));
    for (const kafka::Message m : batch) {
      const auto p = static_cast<std::size_t>(m.partition());
      if (m.error() == kafka::errc::partition_eof) {
        if (p < done.size() && !done[p]) {
          done[p] = true;
          --remaining;
        }
        continue;
      }
      if (m.error()) {
        if (m.error() == kafka::errc::fatal || kafka::classify(m.error()) == kafka::Severity::fatal)
          throw kafka::KafkaError(
              "story summary topic '" + topic_ + "': " + kafka::describe(m.error()), m.error(),
              kafka::Severity::fatal);
        continue;
      }
      if (!decode_story(m.payload(), decoded, &error)) {
        ++unreadable;
        continue;
      }
      latest.insert_or_assign(std::string(m.key()), std::move(decoded));
    }
  }
  // The live originals: ref -> window sequence.
  std::unordered_map<std::uint64_t, std::uint64_t> live;
  for (std::uint64_t seq = engine.oldest_live(); seq < engine.next_sequence(); ++seq) {
    if (const auto e = engine.entry(seq)) live.emplace(e->of.value, seq);
  }
  std::size_t taken = 0;
  for (auto& [key, d] : latest) {
    if (d.final) continue;
    const dedup::RecordRef ref =
        pack_ref(sources.intern(d.original.topic, d.original.partition), d.original.offset);
    const auto it = live.find(ref.value);
    if (it == live.end()) continue;  // (left the window while no summary was written)
    dedup::Story story;
    story.original = ref;
    story.first_seen = dedup::EventTime{d.first_seen};
    story.last_seen = dedup::EventTime{std::max(d.first_seen, d.last_seen)};
    story.duplicates = d.duplicates;
    story.has_similarity = d.min_similarity.has_value();
    story.min_similarity = d.min_similarity.value_or(1.0);
    story.max_similarity = d.max_similarity.value_or(0.0);
    story.min_distance = d.min_distance;
    story.max_distance = d.max_distance;
    for (const StoryPositionName& sample : d.samples) {
      if (story.sampled == dedup::Story::kSamples) break;
      story.samples[story.sampled++] =
          pack_ref(sources.intern(sample.topic, sample.partition), sample.offset);
    }
    if (!book_.seed(it->second, story)) continue;
    Extra& extra = extras_[ref.value];
    extra.has_key = d.key.has_value();
    extra.key = d.key.value_or("");
    extra.has_excerpt = d.excerpt.has_value() && !redact_;
    extra.excerpt = d.excerpt.value_or("");
    ++taken;
  }
  stats_.stories = book_.size();
  log(config::LogLevel::info,
      "story summaries: " + std::to_string(taken) + " open stories go on from '" + topic_ + "' (" +
          std::to_string(latest.size()) + " stories read" +
          (unreadable ? ", " + std::to_string(unreadable) + " unreadable records skipped" : "") +
          ")");
  return taken;
}

void StoryWriter::reset(kafka::Producer* producer) {
  producer_ = producer;
  book_ = dedup::StoryBook();
  extras_.clear();
  judged_.clear();
  transactional_ = false;
  judged_journal_.clear();
  extras_journal_.clear();
  pending_sizes_.clear();
  pending_interim_ = 0;
  stats_.stories = 0;
}

void StoryWriter::checkpoint() {
  book_.checkpoint();
  transactional_ = true;
  ++epoch_;
  judged_journal_.clear();
  extras_journal_.clear();
  for (const std::uint64_t duplicates : pending_sizes_)
    stats_.sizes.observe(static_cast<double>(duplicates));
  stats_.finals += pending_sizes_.size();
  stats_.interim += pending_interim_;
  pending_sizes_.clear();
  pending_interim_ = 0;
}

void StoryWriter::rollback() {
  if (!transactional_) return;
  book_.rollback();
  for (auto it = judged_journal_.rbegin(); it != judged_journal_.rend(); ++it)
    judged_[it->first] = Judged{it->second, 0};
  for (auto it = extras_journal_.rbegin(); it != extras_journal_.rend(); ++it) {
    if (it->second)
      extras_.insert_or_assign(it->first, std::move(*it->second));
    else
      extras_.erase(it->first);
  }
  ++epoch_;
  judged_journal_.clear();
  extras_journal_.clear();
  pending_sizes_.clear();
  pending_interim_ = 0;
  stats_.stories = book_.size();
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
