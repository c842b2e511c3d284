#include "stream/records/judge_record.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <span>

#include "stream/records/binary_record.h"

namespace neardup::stream {
namespace {

using binary::assemble;
using binary::intern;
using binary::put;
using binary::Reader;

constexpr const char* kNotThis = "not a neardup judge record of this version";

constexpr std::string_view kRequestMagic = "NDQ5";
constexpr std::string_view kRequestMagic4 = "NDQ4";  // exact sets without boilerplate marks
constexpr std::string_view kRequestMagic3 = "NDQ3";  // without exact shingle sets
constexpr std::string_view kRequestMagic2 = "NDQ2";  // without the schema either
constexpr std::string_view kVerdictMagic = "NDV2";

}  // namespace

std::string verdict_key(std::uint64_t instance) {
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i)
    key[static_cast<std::size_t>(i)] = static_cast<char>(instance >> (56 - 8 * i));
  return key;
}

// ------------------------------------------------------------------ requests

void JudgeRequestWriter::start(std::uint64_t instance, std::uint64_t batch) {
  instance_ = instance;
  batch_ = batch;
  entries_ = 0;
  topics_.clear();
  body_.clear();
}

std::uint16_t JudgeRequestWriter::topic_index(std::string_view topic) {
  return intern(topics_, topic);
}

void JudgeRequestWriter::add(std::string_view topic, std::int32_t partition, std::int64_t offset,
                             dedup::EventTime time, const dedup::Analysis& analysis) {
  put(body_, topic_index(topic));
  put(body_, partition);
  put(body_, offset);
  put(body_, time.ms);
  put(body_, analysis.scope.value);
  const dedup::TextSummary& s = analysis.summary;
  put(body_, s.fingerprint.bits);
  put(body_, s.features);
  put(body_, s.chars);
  put(body_, s.invalid_bytes);
  put(body_, static_cast<std::uint32_t>(analysis.text_bytes));
  put(body_, s.sketch.shingles);
  if (s.sketch.shingles > 0) {
    put(body_, s.sketch.sketch.words[0]);
    put(body_, s.sketch.sketch.words[1]);
    for (int b = 0; b < bands_; ++b) put(body_, s.sketch.band_keys[static_cast<std::size_t>(b)]);
  }
  // A short text's exact shingle set, for the judge's recent-text stage.
  const auto hashes = s.exact.hashes();
  put(body_, static_cast<std::uint8_t>(hashes.size()));
  if (!hashes.empty()) {
    const auto keys = s.exact.keys();
    put(body_, static_cast<std::uint8_t>(keys.size()));
    put(body_, static_cast<std::uint8_t>(s.exact.markers()));
    const std::string_view words = s.exact.words();
    put(body_, static_cast<std::uint8_t>(words.size()));
    for (int b = 0; b < dedup::kRecentBands; ++b) put(body_, s.exact.band_key(b));
    for (const std::uint32_t h : hashes) put(body_, h);
    for (const std::uint32_t k : keys) put(body_, k);
    body_ += words;
  }
  ++entries_;
}

std::string_view JudgeRequestWriter::finish() {
  std::string options;
  put(options, static_cast<std::uint8_t>(bits_));
  put(options, static_cast<std::uint8_t>(band_bins_));
  put(options, static_cast<std::uint8_t>(bands_));
  put(options, schema_);
  put(options, static_cast<std::uint8_t>(description_.size()));
  options += description_;
  assemble(value_, kRequestMagic, instance_, batch_, topics_, entries_, options);
  value_ += body_;
  return value_;
}

namespace {

/// An entry's exact shingle set; false when malformed (more than
/// kMaxExactShingles hashes or kMaxMustMatch keys, not sorted and distinct).
/// `marked`: bit 0 of a hash is the boilerplate mark, and a markers count and the
/// words' length follow the keys count (NDQ5); NDQ4's sets have none of them, so the
/// bit is cleared (their texts are judged without the story and typo rules).
bool read_exact(Reader& r, dedup::ExactShingles& out, bool marked) {
  const auto count = r.get<std::uint8_t>();
  if (count == 0) return r.ok;
  const auto keys = r.get<std::uint8_t>();
  const std::uint8_t markers = marked ? r.get<std::uint8_t>() : 0;
  const std::uint8_t word_bytes = marked ? r.get<std::uint8_t>() : 0;
  if (!r.ok || count > dedup::kMaxExactShingles || keys > dedup::kMaxMustMatch ||
      word_bytes > dedup::kMaxWordBytes)
    return false;
  std::array<std::uint64_t, dedup::kRecentBands> band_keys{};
  for (auto& key : band_keys) key = r.get<std::uint64_t>();
  std::array<std::uint32_t, dedup::kMaxExactShingles + dedup::kMaxMustMatch> values{};
  for (std::size_t i = 0; i < std::size_t{count} + keys; ++i) values[i] = r.get<std::uint32_t>();
  if (!r.ok) return false;
  const auto increasing = [](std::span<const std::uint32_t> v) {
    return std::adjacent_find(v.begin(), v.end(), std::greater_equal<>()) == v.end();
  };
  const std::span<const std::uint32_t> hashes(values.data(), count);
  const std::span<const std::uint32_t> key_span(values.data() + count, keys);
  if (!increasing(hashes) || !increasing(key_span)) return false;
  // (NDQ5: distinct with the mark cleared, as a Fingerprinter makes them)
  for (std::size_t i = 1; marked && i < count; ++i)
    if ((values[i] & ~dedup::kBoilerplateShingle) == (values[i - 1] & ~dedup::kBoilerplateShingle))
      return false;
  std::size_t n = count;
  if (!marked) {
    n = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint32_t h = values[i] & ~dedup::kBoilerplateShingle;
      if (n == 0 || values[n - 1] != h) values[n++] = h;
    }
  }
  out.assign(std::span<const std::uint32_t>(values.data(), n), band_keys);
  out.set_markers(markers);
  if (keys != 0) out.set_keys(key_span);
  const std::string_view words = r.bytes(word_bytes);
  if (!r.ok) return false;
  out.set_words(words);
  return true;
}

}  // namespace

bool decode_judge_request(std::string_view value, JudgeRequest& out, std::string* error) {
  // All or nothing: every refusal leaves no entries. A request that is read
  // writes over the entries of the one before (their buffers kept: a topic
  // name longer than the short-string buffer is not allocated again).
  auto refuse = [&out]() {
    out.entries.clear();
    return false;
  };
  Reader r(value);
  std::vector<std::string> topics;
  std::uint32_t n = 0;
  const std::string_view magic = value.substr(0, kRequestMagic.size());
  const bool marked = magic == kRequestMagic;
  const bool with_exact = marked || magic == kRequestMagic4;
  const bool with_schema = with_exact || magic == kRequestMagic3;
  if (!binary::read_header(r,
                           marked        ? kRequestMagic
                           : with_exact  ? kRequestMagic4
                           : with_schema ? kRequestMagic3
                                         : kRequestMagic2,
                           kNotThis, out.instance, out.batch, topics, n, error))
    return refuse();
  out.bits = r.get<std::uint8_t>();
  out.band_bins = r.get<std::uint8_t>();
  out.bands = r.get<std::uint8_t>();
  out.schema = 0;
  out.schema_description.clear();
  if (with_schema) {
    out.schema = r.get<std::uint32_t>();
    out.schema_description = r.bytes(r.get<std::uint8_t>());
    if (r.ok && out.schema == 0) {
      *error = "the schema id is 0";
      return refuse();
    }
  }
  if (!r.ok || out.bands > dedup::kMaxSketchBands) {
    *error = "truncated header or more bands than a sketch has";
    return refuse();
  }
  // (every entry takes at least 48 bytes: a count beyond that is malformed, not a huge allocation)
  if (n > value.size() / 48 + 1) {
    *error = "entry count larger than the record";
    return refuse();
  }
  out.entries.resize(n);
  bool bad_exact = false;
  for (JudgeRequestEntry& e : out.entries) {
    const auto topic = r.get<std::uint16_t>();
    if (topic >= topics.size()) r.ok = false;
    if (!r.ok) break;
    e.source.topic = topics[topic];
    e.source.partition = r.get<std::int32_t>();
    e.source.offset = r.get<std::int64_t>();
    e.time.ms = r.get<std::int64_t>();
    e.analysis.scope.value = r.get<std::uint32_t>();
    dedup::TextSummary& s = e.analysis.summary;
    s.fingerprint.bits = r.get<std::uint64_t>();
    s.features = r.get<std::uint32_t>();
    s.chars = r.get<std::uint32_t>();
    s.invalid_bytes = r.get<std::uint32_t>();
    e.analysis.text_bytes = r.get<std::uint32_t>();
    s.sketch = {};
    s.sketch.shingles = r.get<std::uint32_t>();
    if (s.sketch.shingles > 0) {
      s.sketch.sketch.words[0] = r.get<std::uint64_t>();
      s.sketch.sketch.words[1] = r.get<std::uint64_t>();
      for (int b = 0; b < out.bands && r.ok; ++b)
        s.sketch.band_keys[static_cast<std::size_t>(b)] = r.get<std::uint64_t>();
    }
    s.exact.clear();
    if (with_exact && r.ok && !read_exact(r, s.exact, marked)) {
      bad_exact = r.ok;
      r.ok = false;
    }
  }
  if (!r.ok || !r.at_end()) {
    *error = bad_exact ? "an exact shingle set that is too long or not sorted"
             : r.ok    ? "bytes after the last entry"
                       : "truncated entry";
    return refuse();
  }
  return true;
}

// ------------------------------------------------------------------ verdicts

void JudgeVerdictWriter::start(std::uint64_t instance, std::uint64_t batch) {
  instance_ = instance;
  batch_ = batch;
  entries_ = 0;
  topics_.clear();
  body_.clear();
}

std::uint16_t JudgeVerdictWriter::topic_index(std::string_view topic) {
  return intern(topics_, topic);
}

void JudgeVerdictWriter::add(const JudgeVerdictEntry& e) {
  const SourceRef* of = e.of ? &*e.of : nullptr;
  put(body_, static_cast<std::uint8_t>(e.kind));
  put(body_, e.fingerprint.bits);
  put(body_, e.features);
  put(body_, e.candidates);
  const std::uint8_t flags =
      static_cast<std::uint8_t>((of ? 1 : 0) | (e.similarity ? 2 : 0) | (e.foreign_schema ? 4 : 0));
  put(body_, flags);
  if (of) {
    put(body_, topic_index(of->topic));
    put(body_, of->partition);
    put(body_, of->offset);
    put(body_, e.of_time.ms);
    put(body_, e.of_fingerprint.bits);
    put(body_, static_cast<std::uint8_t>(e.distance));
    put(body_, e.count);
  }
  if (e.similarity) put(body_, *e.similarity);
  ++entries_;
}

std::string_view JudgeVerdictWriter::finish() {
  return assemble(value_, kVerdictMagic, instance_, batch_, topics_, entries_, body_);
}

bool decode_judge_verdicts(std::string_view value, JudgeVerdicts& out, std::string* error) {
  out.entries.clear();  // all or nothing, also when the header is refused
  Reader r(value);
  std::uint32_t n = 0;
  std::vector<std::string>& topics = out.topics;
  if (!binary::read_header(r, kVerdictMagic, kNotThis, out.instance, out.batch, topics, n, error))
    return false;
  if (n > value.size() / 18 + 1) {
    *error = "entry count larger than the record";
    return false;
  }
  out.entries.resize(n);
  for (JudgeVerdictEntry& e : out.entries) {
    const auto kind = r.get<std::uint8_t>();
    if (kind > static_cast<std::uint8_t>(dedup::VerdictKind::invalid)) r.ok = false;
    e.kind = static_cast<dedup::VerdictKind>(kind);
    e.fingerprint.bits = r.get<std::uint64_t>();
    e.features = r.get<std::uint32_t>();
    e.candidates = r.get<std::uint32_t>();
    const auto flags = r.get<std::uint8_t>();
    if (flags > 7) r.ok = false;
    e.foreign_schema = (flags & 4) != 0;
    e.of.reset();
    e.similarity.reset();
    e.count = 0;
    if (!r.ok) break;
    if (flags & 1) {
      const auto topic = r.get<std::uint16_t>();
      if (topic >= topics.size()) {
        r.ok = false;
        break;
      }
      SourceRef& of = e.of.emplace();
      of.topic = topics[topic];
      of.partition = r.get<std::int32_t>();
      of.offset = r.get<std::int64_t>();
      e.of_time.ms = r.get<std::int64_t>();
      e.of_fingerprint.bits = r.get<std::uint64_t>();
      e.distance = r.get<std::uint8_t>();
      e.count = r.get<std::uint32_t>();
    }
    if (flags & 2) e.similarity = r.get<double>();
  }
  if (!r.ok || !r.at_end()) {
    *error = r.ok ? "bytes after the last entry" : "truncated entry";
    out.entries.clear();
    return false;
  }
  return true;
}

}  // namespace neardup::stream
