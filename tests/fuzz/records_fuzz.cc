// Fuzz target for the binary records instances read back from Kafka: window
// changelog values (every format version), judge requests and judge verdicts.
// The first byte picks the decoder (mod 3), the rest is the record value.
// Properties checked on every input:
// - no decoder crashes or throws (and, in builds with ASan/UBSan such as the
//   ci preset's replay, reads out of bounds or overflows);
// - all or nothing: a refused value sets a non-empty reason and adds no entry
//   (decode_changelog appends: the entry already in its output stays alone);
// - a reused output holds nothing of the previous value (the judge and the
//   instances decode into the same object again and again): decoding into an
//   output that just held another record gives what a fresh output gets;
// - an accepted changelog value re-encoded as a version 3 batch decodes to the
//   same entries.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "stream/records/changelog_record.h"
#include "stream/records/judge_record.h"

namespace {

using namespace neardup;

void require(bool ok) {
  if (!ok) std::abort();
}

bool same_entry(const stream::ChangelogRecord& a, const stream::ChangelogRecord& b) {
  if (a.fingerprint.bits != b.fingerprint.bits || a.time.ms != b.time.ms || a.topic != b.topic ||
      a.partition != b.partition || a.offset != b.offset || a.instance != b.instance ||
      a.has_sketch != b.has_sketch || a.scope.value != b.scope.value)
    return false;
  if (!a.has_sketch) return true;
  if (a.bits != b.bits || a.band_bins != b.band_bins || a.scheme != b.scheme ||
      a.bands != b.bands || a.sketch.sketch.words != b.sketch.sketch.words)
    return false;
  for (int i = 0; i < a.bands; ++i)
    if (a.sketch.band_keys[static_cast<std::size_t>(i)] !=
        b.sketch.band_keys[static_cast<std::size_t>(i)])
      return false;
  return true;
}

void changelog(std::string_view value) {
  std::vector<stream::ChangelogRecord> out(1);
  out[0].topic = "already-here";
  std::string error;
  const bool ok = stream::decode_changelog(value, out, &error);
  require(ok == error.empty());
  require(out[0].topic == "already-here");
  if (!ok) {
    require(out.size() == 1);
    return;
  }
  // Every entry of a value carries one instance: re-encoded as one batch, the
  // same entries come back (a version 1 value's instance is its own).
  const std::vector<stream::ChangelogRecord> entries(out.begin() + 1, out.end());
  if (entries.empty()) return;
  stream::ChangelogBatch batch(entries.front().instance);
  for (const stream::ChangelogRecord& e : entries) {
    require(e.instance == entries.front().instance);
    batch.add(e);
  }
  const auto encoded = batch.take();
  std::vector<stream::ChangelogRecord> again;
  require(stream::decode_changelog(encoded.value, again, &error));
  require(again.size() == entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) require(same_entry(entries[i], again[i]));
}

// A request and a verdict record with one entry each, decoded into the reused
// outputs before every fuzzed value.
std::string some_request() {
  stream::JudgeRequestWriter writer(dedup::fingerprint_schema({}));
  writer.start(7, 9);
  dedup::Analysis analysis;
  analysis.summary.fingerprint.bits = 0x1234;
  analysis.summary.features = 12;
  analysis.text_bytes = 40;
  writer.add("some-topic-name-longer-than-sso", 3, 44, dedup::EventTime{5}, analysis);
  // A short text's exact set, with a boilerplate shingle, markers and words.
  const std::vector<std::uint32_t> hashes = {2, 9, 40};
  analysis.summary.exact.assign(hashes, {});
  analysis.summary.exact.set_markers(3);
  const std::vector<std::uint32_t> keys = {5};
  analysis.summary.exact.set_keys(keys);
  analysis.summary.exact.set_words("dry clean only");
  writer.add("t", 0, 45, dedup::EventTime{6}, analysis);
  return std::string(writer.finish());
}

std::string some_verdicts() {
  stream::JudgeVerdictWriter writer;
  writer.start(7, 9);
  stream::JudgeVerdictEntry entry;
  entry.kind = dedup::VerdictKind::duplicate;
  entry.of = stream::SourceRef{"some-topic-name-longer-than-sso", 3, 44};
  entry.similarity = 0.5;
  writer.add(entry);
  return std::string(writer.finish());
}

bool same_request(const stream::JudgeRequest& a, const stream::JudgeRequest& b) {
  if (a.instance != b.instance || a.batch != b.batch || a.bits != b.bits ||
      a.band_bins != b.band_bins || a.bands != b.bands || a.entries.size() != b.entries.size())
    return false;
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const stream::JudgeRequestEntry &x = a.entries[i], &y = b.entries[i];
    const dedup::TextSummary &s = x.analysis.summary, &t = y.analysis.summary;
    if (x.source.topic != y.source.topic || x.source.partition != y.source.partition ||
        x.source.offset != y.source.offset || x.time.ms != y.time.ms ||
        x.analysis.scope.value != y.analysis.scope.value ||
        x.analysis.text_bytes != y.analysis.text_bytes ||
        s.fingerprint.bits != t.fingerprint.bits || s.features != t.features ||
        s.chars != t.chars || s.invalid_bytes != t.invalid_bytes ||
        s.sketch.shingles != t.sketch.shingles || s.sketch.sketch.words != t.sketch.sketch.words ||
        s.sketch.band_keys != t.sketch.band_keys ||
        !std::ranges::equal(s.exact.hashes(), t.exact.hashes()) ||
        !std::ranges::equal(s.exact.keys(), t.exact.keys()) || s.exact.words() != t.exact.words() ||
        s.exact.markers() != t.exact.markers() || s.exact.boilerplate() != t.exact.boilerplate())
      return false;
  }
  return true;
}

bool same_verdicts(const stream::JudgeVerdicts& a, const stream::JudgeVerdicts& b) {
  if (a.instance != b.instance || a.batch != b.batch || a.entries.size() != b.entries.size())
    return false;
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const stream::JudgeVerdictEntry &x = a.entries[i], &y = b.entries[i];
    if (x.kind != y.kind || x.fingerprint.bits != y.fingerprint.bits || x.features != y.features ||
        x.candidates != y.candidates || x.of.has_value() != y.of.has_value() ||
        x.of_time.ms != y.of_time.ms || x.of_fingerprint.bits != y.of_fingerprint.bits ||
        x.distance != y.distance || x.count != y.count ||
        x.similarity.has_value() != y.similarity.has_value())
      return false;
    if (x.of && (x.of->topic != y.of->topic || x.of->partition != y.of->partition ||
                 x.of->offset != y.of->offset))
      return false;
    // (similarities compared bit for bit: a NaN decodes the same way twice)
    if (x.similarity && std::string_view(reinterpret_cast<const char*>(&*x.similarity), 8) !=
                            std::string_view(reinterpret_cast<const char*>(&*y.similarity), 8))
      return false;
  }
  return true;
}

/// Decodes `value` into a fresh output and into one that just held `previous`:
/// the same answer, the same reason, and no entry when refused.
template <class Out, class Decode, class Same>
void reused_output(std::string_view value, const std::string& previous, Decode decode, Same same) {
  Out fresh, reused;
  std::string error, reused_error;
  require(decode(previous, reused, &reused_error));
  const bool ok = decode(value, fresh, &error);
  require(ok == error.empty());
  reused_error.clear();
  require(decode(value, reused, &reused_error) == ok);
  require(reused_error == error);
  if (ok) require(same(fresh, reused));
  if (!ok) require(fresh.entries.empty() && reused.entries.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view value(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      changelog(value);
      break;
    case 1: {
      static const std::string previous = some_request();
      reused_output<stream::JudgeRequest>(value, previous, stream::decode_judge_request,
                                          same_request);
      break;
    }
    default: {
      static const std::string previous = some_verdicts();
      reused_output<stream::JudgeVerdicts>(value, previous, stream::decode_judge_verdicts,
                                           same_verdicts);
      break;
    }
  }
  return 0;
}
