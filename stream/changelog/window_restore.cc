#include "stream/changelog/window_restore.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "config/values.h"
#include "stream/core/process.h"
#include "stream/pipeline/event_time.h"

namespace neardup::stream {

SchemaCompatibility::SchemaCompatibility(dedup::FingerprintSchema local, std::string prefix)
    : local_(std::move(local)), prefix_(std::move(prefix)) {}

bool SchemaCompatibility::accepts(const ChangelogRecord& r) {
  if (r.schema == 0 || r.schema == local_.id) return true;
  ++foreign_;
  if (std::find(logged_.begin(), logged_.end(), r.schema) == logged_.end()) {
    logged_.push_back(r.schema);
    const std::string theirs = r.schema_description ? *r.schema_description : std::string();
    const std::string differences = dedup::schema_differences(theirs, local_.description);
    log(config::LogLevel::warn,
        prefix_ + "window changelog: entries of fingerprint schema " + dedup::schema_hex(r.schema) +
            " are not used: this instance's schema is " + local_.hex() + " (" +
            (differences.empty() ? "their options: " + theirs : "options differ: " + differences) +
            "); their fingerprints and sketches mean something else here. Every such entry is "
            "counted in neardup_changelog_foreign_schema_total");
  }
  return false;
}

const dedup::SketchResult& SchemaCompatibility::usable(const ChangelogRecord& r) {
  static const dedup::SketchResult kNone{};
  const dedup::SketchOptions& options = local_.sketch;
  if (!r.has_sketch || !options.enabled) return kNone;
  if (r.bits != options.bits || r.band_bins != options.band_bins || r.bands != options.bands ||
      r.scheme != dedup::kSketchScheme) {
    if (!mismatch_logged_) {
      mismatch_logged_ = true;
      log(config::LogLevel::warn,
          prefix_ +
              "window changelog: records made with other dedup.sketch options (bits/bands/"
              "band_bins) or by a build with another sketch scheme are remembered by their "
              "fingerprint only");
    }
    return kNone;
  }
  return r.sketch;
}

std::optional<std::size_t> restore_window(ChangelogReader& reader, dedup::Engine& engine,
                                          const config::Config& cfg, Sources& sources,
                                          SchemaCompatibility& schemas, const RestoreHooks& hooks) {
  using Clock = std::chrono::steady_clock;
  WindowReplay replay(cfg, sources, schemas);
  auto last_progress = Clock::now(), last_log = Clock::now();
  std::uint64_t visited = 0;
  // Every 4096 entries: the progress hook, and a log line every 10 s.
  const auto tick = [&] {
    if ((++visited & 4095) == 0 && Clock::now() - last_progress >= hooks.progress_every) {
      last_progress = Clock::now();
      if (hooks.progress) hooks.progress();
      if (last_progress - last_log >= std::chrono::seconds(10)) {
        last_log = last_progress;
        log(config::LogLevel::info,
            "rebuilding the window: " + std::to_string(reader.records_read()) +
                " changelog records read");
      }
    }
  };
  const auto visit = [&](const ChangelogRecord& r) {
    replay.add(r);
    tick();
  };
  const std::function<bool()> stopped = hooks.stopped ? hooks.stopped : [] { return false; };
  const std::size_t n = static_cast<std::size_t>(reader.partitions());
  const std::vector<std::int64_t>& low = reader.low();
  const std::vector<std::int64_t>& high = reader.high();
  // Unreadable records hold offsets but no entries: the estimates leave them out.
  std::uint64_t unreadable = 0;
  const ChangelogReader::Corrupt corrupt = [&](std::int32_t partition, std::int64_t offset,
                                               const std::string& reason) {
    ++unreadable;
    if (hooks.corrupt) hooks.corrupt(partition, offset, reason);
  };
  // Per partition, [done, high) has been read; the rebuild reads backwards
  // from the end, a range at a time, until the window is covered.
  std::vector<std::int64_t> done = high;
  const auto read_down_to = [&](const std::vector<std::int64_t>& from) {
    std::vector<std::int64_t> start(n);
    bool any = false;
    for (std::size_t p = 0; p < n; ++p) {
      start[p] = std::clamp(from[p], low[p], done[p]);
      any = any || start[p] < done[p];
    }
    if (!any) return true;
    if (!reader.read_range(start, done, visit, corrupt, stopped)) return false;
    done = start;
    return true;
  };
  // Offsets by time; a partition left without an answer is read further than
  // the window needs, which the log says.
  const auto offsets_at = [&](std::int64_t time_ms) {
    const std::uint64_t before = reader.unanswered();
    auto offsets = reader.offsets_for_time(time_ms, stopped);
    if (offsets && reader.unanswered() > before) {
      log(config::LogLevel::warn, "rebuilding the window: the brokers gave no offset by time for " +
                                      std::to_string(reader.unanswered() - before) +
                                      " partition(s) of changelog '" + cfg.kafka.changelog_topic +
                                      "' in 3 requests (" + reader.unanswered_reason() +
                                      "); the rebuild reads more of them than the window needs");
    }
    return offsets;
  };
  // `whole`: record times do not bound their entries' (LogAppendTime), so the
  // second pass, if any, reads everything again in one slice.
  const auto finish = [&](bool whole = false) -> std::optional<std::size_t> {
    if (replay.collected_all()) {
      reader.follow_from_end();
      return replay.finish(engine);
    }
    // 5. The entries read outgrew window.rebuild_memory: read the chosen ones
    // again, a slice of records (by timestamp) at a time, oldest first.
    std::vector<std::int64_t> starts = replay.second_pass(engine);
    if (whole && !starts.empty()) starts.erase(starts.begin() + 1, starts.end());  // (only shrinks)
    log(config::LogLevel::info,
        "rebuilding the window: the entries read outgrow window.rebuild_memory (" +
            config::format_size(cfg.dedup.window.rebuild_memory) + "); reading the newest " +
            std::to_string(replay.chosen()) + " again in " + std::to_string(starts.size()) +
            " slice(s)");
    const ChangelogReader::Visit again = [&](const ChangelogRecord& r) {
      replay.add_again(r);
      tick();
    };
    // (an unreadable record was reported in the first pass)
    const ChangelogReader::Corrupt quiet = [](std::int32_t, std::int64_t, const std::string&) {};
    // Each slice within what the first pass read ([done, high): every chosen
    // entry is there) and after the one before, whatever a lookup answers:
    // no record is read twice, and none is skipped.
    std::vector<std::int64_t> from = done;
    for (std::size_t j = 0; j < starts.size(); ++j) {
      if (j == 0 && !whole) {
        const auto first = offsets_at(starts[0]);
        if (!first) return std::nullopt;
        for (std::size_t p = 0; p < n; ++p) from[p] = std::max(done[p], (*first)[p]);
      }
      std::optional<std::vector<std::int64_t>> to = high;
      if (j + 1 < starts.size()) to = offsets_at(starts[j + 1]);
      if (!to) return std::nullopt;
      // An end before the slice's start is no answer (a broker that failed
      // to answer gives low; ends only grow): that partition is read to its
      // end now, whatever the slice would have held.
      for (std::size_t p = 0; p < n; ++p)
        (*to)[p] = (*to)[p] < from[p] ? high[p] : std::min((*to)[p], high[p]);
      if (!reader.read_range(from, *to, again, quiet, stopped)) return std::nullopt;
      replay.remember_slice(engine);
      from = *to;
      if (hooks.progress) hooks.progress();
    }
    reader.follow_from_end();
    return replay.remembered();
  };

  // 1. The last records of each partition: how new the changelog is (transaction
  // markers hold offsets too, hence the widening), and a sample of entries per
  // offset for step 2's estimate: one record could be the few entries written
  // after a quiet spell. The sample (at most 256 entries, an eighth of the
  // window) is of the newest records, which the window needs unless they are
  // older than window.duration: the widening stops at those.
  const std::uint64_t sample =
      std::min<std::uint64_t>(256, std::max<std::size_t>(1, cfg.dedup.window.max_entries / 8));
  const auto duration_ms = static_cast<std::int64_t>(cfg.dedup.window.duration.count());
  std::vector<std::int64_t> last(n, 1);  // offsets from the end to read, per partition
  for (;;) {
    std::vector<std::int64_t> from(n);
    for (std::size_t p = 0; p < n; ++p) from[p] = high[p] - std::min(last[p], high[p] - low[p]);
    if (!read_down_to(from)) return std::nullopt;
    std::int64_t newest_now = -1;
    for (std::size_t p = 0; p < n; ++p) newest_now = std::max(newest_now, reader.newest_read()[p]);
    newest_now = replay.clamp(newest_now);  // (one record stamped far ahead)
    const bool sampled = reader.entries_read() >= sample;
    bool widen = false;
    for (std::size_t p = 0; p < n; ++p) {
      if (done[p] <= low[p]) continue;  // read to its start
      const bool known = reader.newest_read()[p] >= 0;
      const bool past_duration = known && reader.oldest_read()[p] < newest_now - duration_ms;
      if (!known || (!sampled && !past_duration)) {
        last[p] *= 2;
        widen = true;
      }
    }
    if (!widen) break;
  }
  std::int64_t newest = -1;
  for (const std::int64_t t : reader.newest_read()) newest = std::max(newest, t);
  if (newest < 0) return finish();  // empty
  if (reader.saw_log_append_time()) {
    // Record times say when the broker got a batch, not how old its entries
    // are: only reading everything is sure to cover the window.
    log(config::LogLevel::warn,
        "window changelog '" + cfg.kafka.changelog_topic +
            "': its records are stamped by the broker (message.timestamp.type=LogAppendTime), so "
            "the rebuild reads the whole topic; set message.timestamp.type=CreateTime on it to "
            "read about one window");
    if (!read_down_to(low)) return std::nullopt;
    return finish(true);
  }

  // 2. A record's timestamp is the newest event time of its entries, so records
  // stamped before `oldest` hold nothing the window keeps.
  const auto& window = cfg.dedup.window;
  newest = replay.clamp(newest);  // as the replay stamps entries
  const std::int64_t oldest = newest - static_cast<std::int64_t>(window.duration.count());
  const auto by_duration = offsets_at(oldest);
  if (!by_duration) return std::nullopt;
  const auto max_entries = static_cast<double>(window.max_entries);

  // 3. The newest records that should hold about 1.05 max_entries, each
  // partition its share of the offsets left within the duration, a stretch at a
  // time until max_entries were read or everything within the duration was. A
  // stretch's entries per offset (transaction markers take offsets too) are
  // those of the stretch before it, the deepest read so far: the newest records
  // can be a catch-up's small batches, and an estimate from them alone reads
  // many more records than the window needs. The first stretch reads at most as
  // many offsets as step 1 did, so an estimate from the newest records
  // overshoots by at most that; later ones, estimated from deeper records, at
  // most 8 times what was read before them (a few stretches for a window of
  // millions: each stretch costs the reader a seek and a first fetch).
  constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::min();
  const auto offsets_done = [&] {
    std::uint64_t read_offsets = 0;
    for (std::size_t p = 0; p < n; ++p)
      read_offsets += static_cast<std::uint64_t>(high[p] - done[p]);
    return read_offsets - std::min(read_offsets, unreadable);
  };
  std::uint64_t stretch_entries = replay.accepted(), stretch_offsets = offsets_done();
  bool first_stretch = true;
  while (replay.newest_time(window.max_entries) == kNoTime) {
    std::uint64_t left = 0;
    for (std::size_t p = 0; p < n; ++p)
      left += static_cast<std::uint64_t>(std::max<std::int64_t>(0, done[p] - (*by_duration)[p]));
    if (left == 0) break;
    const std::uint64_t read_offsets = offsets_done();
    // (entries of another schema are read but not kept: they do not count)
    const double entries = static_cast<double>(replay.accepted());
    const double per =
        stretch_entries != 0 && stretch_offsets != 0
            ? static_cast<double>(stretch_entries) / static_cast<double>(stretch_offsets)
            : std::max(entries, 1.0) /
                  static_cast<double>(std::max<std::uint64_t>(1, read_offsets));
    const double want = std::max(1.05 * max_entries - entries, 0.05 * max_entries);
    const double cap =
        (first_stretch ? 1.0 : 8.0) * static_cast<double>(std::max<std::uint64_t>(1, read_offsets));
    first_stretch = false;
    const double offsets = std::min(want / per, cap);
    const double share = std::min(1.0, offsets / static_cast<double>(left));
    std::vector<std::int64_t> from(n);
    for (std::size_t p = 0; p < n; ++p) {
      const std::int64_t rest = std::max<std::int64_t>(0, done[p] - (*by_duration)[p]);
      from[p] = done[p] - std::min(rest, static_cast<std::int64_t>(std::ceil(rest * share)));
    }
    const std::uint64_t entries_before = replay.accepted();
    if (!read_down_to(from)) return std::nullopt;
    stretch_entries = replay.accepted() - entries_before;
    stretch_offsets = offsets_done() - read_offsets;
  }
  // 4. Until nothing is missing: everything stamped at or after the
  // max_entries-th newest entry read so far. Each entry is in a record stamped
  // no earlier than itself, so once those are read, the newest max_entries
  // are complete.
  for (;;) {
    const std::int64_t since = std::max(oldest, replay.newest_time(window.max_entries));
    const auto needed = since <= oldest ? by_duration : offsets_at(since);
    if (!needed) return std::nullopt;
    bool complete = true;
    for (std::size_t p = 0; p < n; ++p) complete = complete && done[p] <= (*needed)[p];
    if (complete) break;
    if (!read_down_to(*needed)) return std::nullopt;
  }
  return finish();
}

ChangelogFollower::ChangelogFollower(const config::Config& config,
                                     const kafka::Properties& consumer_properties, Sources& sources,
                                     ServiceSnapshot& stats, std::uint64_t instance)
    : cfg_(config),
      sources_(sources),
      stats_(stats),
      instance_(instance),
      reader_(consumer_properties, config.kafka.changelog_topic, std::chrono::seconds(10)),
      schemas_(dedup::fingerprint_schema(config.dedup)) {}

bool ChangelogFollower::rebuild(dedup::Engine& engine, RestoreHooks hooks) {
  const auto started = std::chrono::steady_clock::now();
  log(config::LogLevel::info, "rebuilding the window from changelog '" +
                                  cfg_.kafka.changelog_topic + "' (" +
                                  std::to_string(reader_.partitions()) + " partition(s))");
  hooks.corrupt = corrupt_handler();
  const std::optional<std::size_t> replayed =
      restore_window(reader_, engine, cfg_, sources_, schemas_, hooks);
  stats_.changelog_foreign_schema = schemas_.foreign();
  if (!replayed) return false;
  reader_.skip_instance(instance_);  // following: this process's own batches need no parsing
  stats_.changelog_replayed = *replayed;
  stats_.changelog_rebuild_read = reader_.entries_read();
  stats_.changelog_rebuild_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f", stats_.changelog_rebuild_seconds);
  std::string line = "window rebuilt from changelog: " + std::to_string(stats_.changelog_replayed) +
                     " entries in " + seconds + " s (" + rebuild_reads(reader_) + ")";
  if (stats_.changelog_corrupt)
    line += " (" + std::to_string(stats_.changelog_corrupt) + " unreadable record(s) skipped)";
  if (stats_.changelog_foreign_schema)
    line += " (" + std::to_string(stats_.changelog_foreign_schema) +
            " entries of another fingerprint schema not used)";
  line += "; fingerprint schema " + schemas_.local().hex();
  log(config::LogLevel::info, line);
  return true;
}

void ChangelogFollower::follow(std::vector<Remembered>& out) {
  const std::int64_t now = wall_ms();
  reader_.poll([&](const ChangelogRecord& r) { remember(r, now, out); }, corrupt_handler(), 2000);
}

void ChangelogFollower::read_to_end(std::vector<Remembered>& out) {
  const std::int64_t now = wall_ms();
  const bool complete =
      reader_.read_to_end([&](const ChangelogRecord& r) { remember(r, now, out); },
                          corrupt_handler(), std::chrono::seconds(10));
  if (!complete) {
    log(config::LogLevel::warn,
        "window changelog: not read to its end within 10 s of an assignment; until it is, "
        "near-copies of what the previous owner kept last can pass as unique");
  }
}

void ChangelogFollower::remember(const ChangelogRecord& r, std::int64_t now,
                                 std::vector<Remembered>& out) {
  if (r.instance == instance_) return;
  if (!schemas_.accepts(r)) {
    stats_.changelog_foreign_schema = schemas_.foreign();
    return;
  }
  // (clamped: an instance of an earlier version may have written it)
  const dedup::EventTime time = event_time_of(r.time.ms, now, cfg_.dedup.window.max_future);
  out.push_back(Remembered{r.fingerprint, time,
                           pack_ref(sources_.intern(r.topic, r.partition), r.offset),
                           schemas_.usable(r), r.scope});
  ++stats_.changelog_followed;
}

std::string rebuild_reads(const ChangelogReader& reader) {
  std::string out = "read " + std::to_string(reader.entries_read()) + " entries in " +
                    std::to_string(reader.records_read()) + " of " +
                    std::to_string(reader.records_held()) + " records";
  if (reader.searched_by_reading() != 0) {
    out += "; " + std::to_string(reader.searched_by_reading()) +
           " offset(s) looked up by reading: the broker does not look offsets up by time";
  }
  return out;
}

void warn_unreadable_record(std::string_view prefix, const std::string& topic,
                            std::int32_t partition, std::int64_t offset, const std::string& reason,
                            std::uint64_t& logged) {
  if (++logged > 10) return;
  log(config::LogLevel::warn, std::string(prefix) + "window changelog '" + topic + "' partition " +
                                  std::to_string(partition) + " offset " + std::to_string(offset) +
                                  ": unreadable record skipped (" + reason + ")");
}

void ChangelogFollower::on_corrupt(std::int32_t partition, std::int64_t offset,
                                   const std::string& reason) {
  ++stats_.changelog_corrupt;
  warn_unreadable_record("", cfg_.kafka.changelog_topic, partition, offset, reason,
                         corrupt_logged_);
}

ChangelogReader::Corrupt ChangelogFollower::corrupt_handler() {
  return [this](std::int32_t p, std::int64_t o, const std::string& reason) {
    on_corrupt(p, o, reason);
  };
}

}  // namespace neardup::stream
