// The judge topic's and the verdict topic's records (stream/records/judge_record.h):
// what goes in comes out, and anything malformed is refused without throwing.
#include "stream/records/judge_record.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

namespace neardup::stream {
namespace {

dedup::Analysis analysis_of(std::uint64_t seed, bool with_sketch) {
  std::mt19937_64 rng(seed);
  dedup::Analysis a;
  a.summary.fingerprint.bits = rng();
  a.summary.features = static_cast<std::uint32_t>(rng() % 1000) + 1;
  a.summary.chars = static_cast<std::uint32_t>(rng() % 5000);
  a.summary.invalid_bytes = static_cast<std::uint32_t>(rng() % 3);
  a.text_bytes = rng() % 100000;
  a.scope.value = static_cast<std::uint32_t>(rng());
  if (with_sketch) {
    a.summary.sketch.shingles = static_cast<std::uint32_t>(rng() % 300) + 1;
    a.summary.sketch.sketch.words = {rng(), rng()};
    for (int b = 0; b < 3; ++b) a.summary.sketch.band_keys[static_cast<std::size_t>(b)] = rng();
  }
  return a;
}

TEST(JudgeRecord, ARequestComesBackEntryByEntryWithItsSketchOptions) {
  dedup::SketchOptions sketch;  // bits 2, band_bins 4, bands 3
  JudgeRequestWriter writer(dedup::fingerprint_schema({}));
  writer.start(0xfeedULL, 41);
  const std::string topics[] = {"news", "posts", "news"};
  for (int i = 0; i < 3; ++i) {
    writer.add(topics[i], i * 7, 1000 + i, dedup::EventTime{1'700'000'000'000 + i},
               analysis_of(static_cast<std::uint64_t>(i), i != 1));
  }
  const std::string value(writer.finish());
  JudgeRequest back;
  std::string error;
  ASSERT_TRUE(decode_judge_request(value, back, &error)) << error;
  EXPECT_EQ(back.instance, 0xfeedULL);
  EXPECT_EQ(back.batch, 41u);
  EXPECT_EQ(back.bits, 2);
  EXPECT_EQ(back.band_bins, 4);
  EXPECT_EQ(back.bands, 3);
  ASSERT_EQ(back.entries.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const JudgeRequestEntry& e = back.entries[static_cast<std::size_t>(i)];
    const dedup::Analysis want = analysis_of(static_cast<std::uint64_t>(i), i != 1);
    EXPECT_EQ(e.source.topic, topics[i]);
    EXPECT_EQ(e.source.partition, i * 7);
    EXPECT_EQ(e.source.offset, 1000 + i);
    EXPECT_EQ(e.time.ms, 1'700'000'000'000 + i);
    EXPECT_EQ(e.analysis.summary.fingerprint, want.summary.fingerprint);
    EXPECT_EQ(e.analysis.summary.features, want.summary.features);
    EXPECT_EQ(e.analysis.summary.chars, want.summary.chars);
    EXPECT_EQ(e.analysis.summary.invalid_bytes, want.summary.invalid_bytes);
    EXPECT_EQ(e.analysis.text_bytes, want.text_bytes);
    EXPECT_EQ(e.analysis.scope, want.scope);
    EXPECT_EQ(e.analysis.summary.sketch.shingles, want.summary.sketch.shingles);
    EXPECT_EQ(e.analysis.summary.sketch.sketch, want.summary.sketch.sketch);
    EXPECT_EQ(e.analysis.summary.sketch.band_keys, want.summary.sketch.band_keys);
  }
  const dedup::FingerprintSchema schema = dedup::fingerprint_schema({});
  EXPECT_EQ(back.schema, schema.id);
  EXPECT_EQ(back.schema_description, schema.description);
  // Two topics in the table, the schema, each entry 54 + (sketch: 16 + 3 * 8)
  // + 1 (no exact set) bytes.
  const std::size_t schema_bytes = 4 + 1 + schema.description.size();
  EXPECT_EQ(value.size(),
            4u + 8 + 8 + 2 + (2 + 4) + (2 + 5) + 4 + 3 + schema_bytes + 3 * 55 + 2 * 40);

  // Instances of earlier versions send "NDQ3" (no exact sets) and "NDQ2"
  // (no schema either, read as 0: unknown).
  const std::size_t schema_at = 4u + 8 + 8 + 2 + (2 + 4) + (2 + 5) + 4 + 3;
  std::string entries3;
  std::size_t at = schema_at + schema_bytes;
  for (const std::size_t size : {94u, 54u, 94u}) {
    ASSERT_EQ(value[at + size], '\0');  // the exact set's count
    entries3 += value.substr(at, size);
    at += size + 1;
  }
  const std::string ndq3 = "NDQ3" + value.substr(4, schema_at + schema_bytes - 4) + entries3;
  const std::string ndq2 = "NDQ2" + value.substr(4, schema_at - 4) + entries3;
  for (const std::string& older : {ndq3, ndq2}) {
    SCOPED_TRACE(older.substr(0, 4));
    JudgeRequest old_back;
    ASSERT_TRUE(decode_judge_request(older, old_back, &error)) << error;
    EXPECT_EQ(old_back.schema, older == ndq3 ? schema.id : 0u);
    EXPECT_EQ(old_back.schema_description, older == ndq3 ? schema.description : "");
    ASSERT_EQ(old_back.entries.size(), 3u);
    EXPECT_EQ(old_back.entries[2].analysis.summary.sketch.band_keys,
              back.entries[2].analysis.summary.sketch.band_keys);
    EXPECT_TRUE(old_back.entries[2].analysis.summary.exact.empty());
  }
}

// A short text's exact shingle set travels with it, so the judge's recent-text
// stage decides as an instance's own would; a set out of order is refused.
TEST(JudgeRecord, AShortTextsExactShingleSetComesBackWhole) {
  dedup::Analysis a = analysis_of(11, true);
  const std::vector<std::uint32_t> hashes = {3, 17, 400, 90'000, 4'000'000'000u};
  std::array<std::uint64_t, dedup::kRecentBands> band_keys{};
  for (int b = 0; b < dedup::kRecentBands; ++b)
    band_keys[static_cast<std::size_t>(b)] =
        0x0123456789abcdefULL * static_cast<std::uint64_t>(b + 1);
  a.summary.exact.assign(hashes, band_keys);  // 3 and 17: boilerplate shingles (bit 0)
  a.summary.exact.set_markers(6);
  const std::vector<std::uint32_t> keys = {7, 8};
  a.summary.exact.set_keys(keys);
  a.summary.exact.set_words("colors may fade");
  JudgeRequestWriter writer(dedup::fingerprint_schema({}));
  writer.start(1, 2);
  writer.add("t", 0, 5, dedup::EventTime{9}, a);
  writer.add("t", 0, 6, dedup::EventTime{10}, analysis_of(12, true));  // none
  const std::string value(writer.finish());
  JudgeRequest back;
  std::string error;
  ASSERT_TRUE(decode_judge_request(value, back, &error)) << error;
  ASSERT_EQ(back.entries.size(), 2u);
  const dedup::ExactShingles& exact = back.entries[0].analysis.summary.exact;
  EXPECT_EQ(std::vector<std::uint32_t>(exact.hashes().begin(), exact.hashes().end()), hashes);
  EXPECT_EQ(std::vector<std::uint32_t>(exact.keys().begin(), exact.keys().end()), keys);
  EXPECT_EQ(exact.boilerplate(), 2u);
  EXPECT_EQ(exact.markers(), 6u);
  EXPECT_EQ(exact.words(), "colors may fade");
  for (int b = 0; b < dedup::kRecentBands; ++b)
    EXPECT_EQ(exact.band_key(b), band_keys[static_cast<std::size_t>(b)]) << b;
  EXPECT_TRUE(back.entries[1].analysis.summary.exact.empty());
  // 1 + 1 + 1 + 1 + 8 * 8 + 5 * 4 + 2 * 4 + 15 bytes for the set.
  JudgeRequestWriter plain(dedup::fingerprint_schema({}));
  plain.start(1, 2);
  dedup::Analysis without = a;
  without.summary.exact.clear();
  plain.add("t", 0, 5, dedup::EventTime{9}, without);
  plain.add("t", 0, 6, dedup::EventTime{10}, analysis_of(12, true));
  EXPECT_EQ(value.size() - plain.finish().size(), 3u + 8 * 8 + 5 * 4 + 2 * 4 + 15);

  // An instance of an earlier build sends "NDQ4": no markers count, no words, and
  // no boilerplate marks (bit 0 is read as cleared; 3 and 17 become 2 and 16).
  const std::size_t second = value.size() - 55 - 40;
  const std::size_t set_at = second - 15 - 2 * 4 - 5 * 4 - 8 * 8 - 4;
  ASSERT_EQ(static_cast<unsigned char>(value[set_at]), 5u);  // the set's count
  const std::string ndq4 = "NDQ4" + value.substr(4, set_at + 2 - 4) +
                           value.substr(set_at + 4, second - 15 - (set_at + 4)) +
                           value.substr(second);
  ASSERT_TRUE(decode_judge_request(ndq4, back, &error)) << error;
  const dedup::ExactShingles& old_exact = back.entries[0].analysis.summary.exact;
  EXPECT_EQ(std::vector<std::uint32_t>(old_exact.hashes().begin(), old_exact.hashes().end()),
            (std::vector<std::uint32_t>{2, 16, 400, 90'000, 4'000'000'000u}));
  EXPECT_EQ(old_exact.boilerplate(), 0u);
  EXPECT_EQ(old_exact.markers(), 0u);
  EXPECT_EQ(old_exact.words(), "");
  EXPECT_EQ(std::vector<std::uint32_t>(old_exact.keys().begin(), old_exact.keys().end()), keys);

  // Words longer than any text has, or a hash marked and unmarked: refused.
  std::string long_words = value;
  long_words[set_at + 3] = static_cast<char>(200);
  EXPECT_FALSE(decode_judge_request(long_words, back, &error));
  std::string twice = value;  // 400 made 401: 400 and 401 are one shingle
  twice[second - 15 - 2 * 4 - 3 * 4] = static_cast<char>(401 & 0xff);
  twice[second - 15 - 2 * 4 - 3 * 4 - 4] = static_cast<char>(400 & 0xff);
  twice[second - 15 - 2 * 4 - 3 * 4 - 3] = static_cast<char>(400 >> 8);
  EXPECT_FALSE(decode_judge_request(twice, back, &error));
  EXPECT_EQ(error, "an exact shingle set that is too long or not sorted");

  // The third hash made smaller than the second: refused, with the reason.
  std::string swapped = value;
  const std::size_t third = value.size() - 55 - 40 - 15 - 2 * 4 - 3 * 4;
  swapped[third] = swapped[third + 1] = swapped[third + 2] = swapped[third + 3] = '\0';
  EXPECT_FALSE(decode_judge_request(swapped, back, &error));
  EXPECT_EQ(error, "an exact shingle set that is too long or not sorted");
  EXPECT_TRUE(back.entries.empty());
}

TEST(JudgeRecord, ARequestCarriesItsFingerprintSchema) {
  dedup::DedupOptions options;
  options.text.cjk_ngram = 3;
  const dedup::FingerprintSchema schema = dedup::fingerprint_schema(options);
  JudgeRequestWriter writer(schema);
  writer.start(1, 2);
  writer.add("t", 0, 5, dedup::EventTime{9}, analysis_of(3, true));
  JudgeRequest back;
  std::string error;
  ASSERT_TRUE(decode_judge_request(writer.finish(), back, &error)) << error;
  EXPECT_EQ(back.schema, schema.id);
  EXPECT_NE(back.schema, dedup::fingerprint_schema({}).id);
  EXPECT_EQ(back.schema_description, schema.description);
}

TEST(JudgeRecord, AVerdictSaysWhenTheRequestWasOfAnotherSchema) {
  JudgeVerdictWriter writer;
  writer.start(7, 9);
  JudgeVerdictEntry refused;
  refused.kind = dedup::VerdictKind::invalid;
  refused.foreign_schema = true;
  writer.add(refused);
  writer.add(JudgeVerdictEntry{});
  JudgeVerdicts back;
  std::string error;
  ASSERT_TRUE(decode_judge_verdicts(writer.finish(), back, &error)) << error;
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].kind, dedup::VerdictKind::invalid);
  EXPECT_TRUE(back.entries[0].foreign_schema);
  EXPECT_FALSE(back.entries[1].foreign_schema);
}

TEST(JudgeRecord, AVerdictComesBackWithItsOriginalAndSimilarity) {
  JudgeVerdictWriter writer;
  writer.start(7, 9);
  JudgeVerdictEntry unique;
  unique.fingerprint.bits = 0x1234;
  unique.features = 17;
  unique.candidates = 3;
  JudgeVerdictEntry duplicate;
  duplicate.kind = dedup::VerdictKind::duplicate;
  duplicate.fingerprint.bits = 0x1235;
  duplicate.features = 18;
  duplicate.candidates = 5;
  duplicate.of = SourceRef{"news", 3, 123456789012};
  duplicate.of_time.ms = 1'700'000'000'123;
  duplicate.of_fingerprint.bits = 0x1234;
  duplicate.distance = 1;
  duplicate.count = 70'000;
  duplicate.similarity = 0.8125;
  writer.add(unique);
  writer.add(duplicate);
  const std::string value(writer.finish());
  JudgeVerdicts back;
  std::string error;
  ASSERT_TRUE(decode_judge_verdicts(value, back, &error)) << error;
  EXPECT_EQ(back.instance, 7u);
  EXPECT_EQ(back.batch, 9u);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].kind, dedup::VerdictKind::unique);
  EXPECT_EQ(back.entries[0].fingerprint.bits, 0x1234u);
  EXPECT_EQ(back.entries[0].features, 17u);
  EXPECT_EQ(back.entries[0].candidates, 3u);
  EXPECT_FALSE(back.entries[0].of.has_value());
  EXPECT_FALSE(back.entries[0].similarity.has_value());
  const JudgeVerdictEntry& d = back.entries[1];
  EXPECT_EQ(d.kind, dedup::VerdictKind::duplicate);
  ASSERT_TRUE(d.of.has_value());
  EXPECT_EQ(d.of->topic, "news");
  EXPECT_EQ(d.of->partition, 3);
  EXPECT_EQ(d.of->offset, 123456789012);
  EXPECT_EQ(d.of_time.ms, 1'700'000'000'123);
  EXPECT_EQ(d.of_fingerprint.bits, 0x1234u);
  EXPECT_EQ(d.distance, 1);
  EXPECT_EQ(d.count, 70'000u);
  ASSERT_TRUE(d.similarity.has_value());
  EXPECT_EQ(*d.similarity, 0.8125);
}

TEST(JudgeRecord, TheVerdictKeyIsTheInstanceBigEndian) {
  EXPECT_EQ(verdict_key(0x0102030405060708ULL), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
}

TEST(JudgeRecord, ARequestDecodedOverAnotherKeepsNothingOfIt) {
  // The judge decodes every request into one JudgeRequest, whose entries keep
  // their buffers: an entry written over one with a sketch, an exact set and
  // a long topic must read exactly as if decoded into a fresh one.
  dedup::Analysis with_all = analysis_of(21, true);
  const std::vector<std::uint32_t> hashes = {4, 6, 9};  // 9: a boilerplate shingle
  with_all.summary.exact.assign(hashes, {});
  JudgeRequestWriter first(dedup::fingerprint_schema({}));
  first.start(1, 1);
  for (int i = 0; i < 3; ++i)
    first.add("a-topic-name-longer-than-the-short-string-buffer", 3, 100 + i,
              dedup::EventTime{50 + i}, with_all);
  JudgeRequestWriter second(dedup::fingerprint_schema({}));
  second.start(2, 9);
  second.add("t", 1, 7, dedup::EventTime{8}, analysis_of(22, false));
  second.add("u", 2, 9, dedup::EventTime{10}, analysis_of(23, false));
  const std::string value(second.finish());
  JudgeRequest reused, fresh;
  std::string error;
  ASSERT_TRUE(decode_judge_request(first.finish(), reused, &error)) << error;
  ASSERT_TRUE(decode_judge_request(value, reused, &error)) << error;
  ASSERT_TRUE(decode_judge_request(value, fresh, &error)) << error;
  ASSERT_EQ(reused.entries.size(), 2u);
  EXPECT_EQ(reused.instance, 2u);
  EXPECT_EQ(reused.batch, 9u);
  for (std::size_t i = 0; i < 2; ++i) {
    const JudgeRequestEntry& r = reused.entries[i];
    const JudgeRequestEntry& f = fresh.entries[i];
    EXPECT_EQ(r.source.topic, f.source.topic) << i;
    EXPECT_EQ(r.source.partition, f.source.partition) << i;
    EXPECT_EQ(r.source.offset, f.source.offset) << i;
    EXPECT_EQ(r.time.ms, f.time.ms) << i;
    EXPECT_EQ(r.analysis.scope, f.analysis.scope) << i;
    EXPECT_EQ(r.analysis.text_bytes, f.analysis.text_bytes) << i;
    EXPECT_EQ(r.analysis.summary.fingerprint, f.analysis.summary.fingerprint) << i;
    EXPECT_EQ(r.analysis.summary.features, f.analysis.summary.features) << i;
    EXPECT_EQ(r.analysis.summary.chars, f.analysis.summary.chars) << i;
    EXPECT_EQ(r.analysis.summary.invalid_bytes, f.analysis.summary.invalid_bytes) << i;
    EXPECT_EQ(r.analysis.summary.sketch.shingles, 0u) << i;
    EXPECT_EQ(r.analysis.summary.sketch.sketch, f.analysis.summary.sketch.sketch) << i;
    EXPECT_EQ(r.analysis.summary.sketch.band_keys, f.analysis.summary.sketch.band_keys) << i;
    EXPECT_TRUE(r.analysis.summary.exact.empty()) << i;
  }
}

TEST(JudgeRecord, EveryTruncationAndEveryOtherMagicIsRefusedWithAReason) {
  JudgeRequestWriter requests{dedup::fingerprint_schema({})};
  requests.start(1, 2);
  requests.add("t", 0, 5, dedup::EventTime{9}, analysis_of(3, true));
  dedup::Analysis with_set = analysis_of(4, true);  // a short text's set, marks and words
  const std::vector<std::uint32_t> hashes = {2, 9, 40};
  with_set.summary.exact.assign(hashes, {});
  with_set.summary.exact.set_markers(3);
  with_set.summary.exact.set_words("dry clean only");
  requests.add("t", 0, 6, dedup::EventTime{9}, with_set);
  const std::string request(requests.finish());
  JudgeVerdictWriter verdicts;
  verdicts.start(1, 2);
  JudgeVerdictEntry d;
  d.kind = dedup::VerdictKind::duplicate;
  d.of = SourceRef{"t", 0, 4};
  d.similarity = 0.9;
  verdicts.add(d);
  const std::string verdict(verdicts.finish());
  JudgeRequest r;
  JudgeVerdicts v;
  std::string error;
  // The outputs are reused, as the judge and the instances reuse theirs: each
  // refusal leaves no entry of the record decoded before it.
  for (std::size_t n = 0; n < request.size(); ++n) {
    error.clear();
    ASSERT_TRUE(decode_judge_request(request, r, &error)) << error;
    ASSERT_EQ(r.entries.size(), 2u);
    EXPECT_FALSE(decode_judge_request(request.substr(0, n), r, &error)) << n;
    EXPECT_FALSE(error.empty()) << n;
    EXPECT_EQ(r.entries.size(), 0u) << n;
  }
  for (std::size_t n = 0; n < verdict.size(); ++n) {
    error.clear();
    ASSERT_TRUE(decode_judge_verdicts(verdict, v, &error)) << error;
    ASSERT_EQ(v.entries.size(), 1u);
    EXPECT_FALSE(decode_judge_verdicts(verdict.substr(0, n), v, &error)) << n;
    EXPECT_FALSE(error.empty()) << n;
    EXPECT_EQ(v.entries.size(), 0u) << n;
  }
  EXPECT_FALSE(decode_judge_request(request + "x", r, &error));
  EXPECT_EQ(error, "bytes after the last entry");
  EXPECT_FALSE(decode_judge_request(verdict, r, &error));  // the other record's magic
  EXPECT_FALSE(decode_judge_verdicts(request, v, &error));
  EXPECT_EQ(error, "not a neardup judge record of this version");
}

TEST(JudgeRecord, RandomBytesNeverThrowAndAreAlmostAlwaysRefused) {
  std::mt19937_64 rng(5);
  JudgeRequest r;
  JudgeVerdicts v;
  std::string error;
  int accepted = 0;
  // 2,000 records, half of them with a magic: a header with a magic sizes its
  // topic list from the random count (up to 65,535 names) before it finds the
  // names missing, a few milliseconds a record under ASan.
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 200, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    if (i % 2)
      bytes.replace(0, std::min<std::size_t>(4, bytes.size()), i % 4 == 1 ? "NDQ2" : "NDV2");
    accepted += decode_judge_request(bytes, r, &error) ? 1 : 0;
    accepted += decode_judge_verdicts(bytes, v, &error) ? 1 : 0;
  }
  EXPECT_EQ(accepted, 0);
}

}  // namespace
}  // namespace neardup::stream
