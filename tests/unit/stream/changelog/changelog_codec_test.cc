// The window changelog without a broker: the record format (binary batches,
// the JSON batches and version 1 records written before them, malformed values
// refused with a reason) round-trips every field,
// and an engine rebuilt from decoded records judges exactly like the original.
// The changelog against the embedded broker: tests/integration/changelog_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dedup/engine/engine.h"
#include "dedup/engine/schema.h"
#include "stream/changelog/window_restore.h"
#include "stream/records/binary_record.h"
#include "stream/records/changelog_record.h"

namespace neardup::stream {
namespace {

ChangelogRecord sample_record(std::uint64_t fp, std::int64_t offset, bool with_sketch) {
  ChangelogRecord r;
  r.fingerprint.bits = fp;
  r.time.ms = 1'700'000'000'000 + offset;
  r.topic = "in\"put";
  r.partition = static_cast<std::int32_t>(offset % 3);
  r.offset = offset;
  if (with_sketch) {
    r.has_sketch = true;
    r.bits = 2;
    r.band_bins = 4;
    r.scheme = dedup::kSketchScheme;
    r.bands = 3;
    r.sketch.sketch.words = {fp * 3, fp * 5};
    r.sketch.band_keys = {fp, fp + 1, fp + 2};
  }
  return r;
}

/// `back`, decoded from a batch of `instance`, carries every field `written` had.
void expect_same_entry(const ChangelogRecord& back, const ChangelogRecord& written,
                       std::uint64_t instance) {
  EXPECT_EQ(back.fingerprint, written.fingerprint);
  EXPECT_EQ(back.time, written.time);
  EXPECT_EQ(back.topic, written.topic);
  EXPECT_EQ(back.partition, written.partition);
  EXPECT_EQ(back.offset, written.offset);
  EXPECT_EQ(back.scope, written.scope);
  EXPECT_EQ(back.instance, instance);
  EXPECT_EQ(back.has_sketch, written.has_sketch);
  EXPECT_EQ(back.sketch.shingles, written.has_sketch ? 1u : 0u);
  if (!written.has_sketch) return;
  EXPECT_EQ(back.bits, written.bits);
  EXPECT_EQ(back.band_bins, written.band_bins);
  EXPECT_EQ(back.scheme, written.scheme);
  EXPECT_EQ(back.bands, written.bands);
  EXPECT_EQ(back.sketch.sketch, written.sketch.sketch);
  EXPECT_EQ(back.sketch.band_keys, written.sketch.band_keys);
}

/// `value`, a batch of `instance`, decodes to exactly the `written` entries.
void expect_round_trip(std::string_view value, const std::vector<ChangelogRecord>& written,
                       std::uint64_t instance) {
  std::vector<ChangelogRecord> back;
  std::string error;
  ASSERT_TRUE(decode_changelog(value, back, &error)) << error;
  ASSERT_EQ(back.size(), written.size());
  for (std::size_t i = 0; i < back.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same_entry(back[i], written[i], instance);
  }
}

TEST(ChangelogFormat, ABatchRoundTripsEveryEntryWithTheBatchInstance) {
  ChangelogBatch batch(0x00000000deadbeefULL);
  std::vector<ChangelogRecord> written;
  for (int i = 0; i < 5; ++i) {
    written.push_back(sample_record(0x1000 + static_cast<std::uint64_t>(i), i, i % 2 == 0));
    batch.add(written.back());
  }
  EXPECT_EQ(batch.entries(), 5u);
  auto encoded = batch.take();
  const std::string key(encoded.key);
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(encoded.value.substr(0, ChangelogBatch::value_prefix(0xdeadbeef).size()),
            ChangelogBatch::value_prefix(0xdeadbeef));  // what a following reader skips as its own
  EXPECT_EQ(encoded.entries, 5u);
  EXPECT_EQ(encoded.newest.ms, written.back().time.ms);
  expect_round_trip(encoded.value, written, 0x00000000deadbeefULL);
  // The next batch of the same instance has another key (a compacted topic keeps both).
  batch.add(written[0]);
  const auto next = batch.take();
  EXPECT_NE(next.key, key);
  // It holds an older entry than the first batch's newest, and is stamped no
  // earlier than the first: a writer's records are stamped in order.
  EXPECT_EQ(next.newest.ms, written[0].time.ms);
  EXPECT_LT(next.newest.ms, encoded.stamp.ms);
  EXPECT_EQ(encoded.stamp.ms, written.back().time.ms);
  EXPECT_EQ(next.stamp.ms, encoded.stamp.ms);
}

TEST(ChangelogFormat, ABatchIsBinaryAndRoundTripsScopesTopicsAndEveryBand) {
  ChangelogBatch batch(7);
  std::vector<ChangelogRecord> written;
  for (int i = 0; i < 6; ++i) {
    ChangelogRecord r = sample_record(0xf000 + static_cast<std::uint64_t>(i), 1000 + i, i != 3);
    r.topic = i % 2 ? "news.raw-1" : "posts";  // two topics in one batch
    r.scope.value = i == 4 ? 0 : 0x80000000u + static_cast<std::uint32_t>(i);
    if (i == 5) {  // sketch options other than the batch's: carried by the entry
      r.bands = dedup::kMaxSketchBands;
      for (int b = 0; b < r.bands; ++b)
        r.sketch.band_keys[static_cast<std::size_t>(b)] = ~static_cast<std::uint64_t>(b);
      r.scheme = 1;
      r.bits = 8;
      r.band_bins = dedup::kSketchBits;
    }
    if (i == 2) r.time.ms -= 5000;  // times and offsets need not grow
    if (i == 3) r.offset = 0;
    written.push_back(r);
    batch.add(r);
  }
  const auto encoded = batch.take();
  EXPECT_EQ(encoded.value.substr(0, 4), "NDC4");
  expect_round_trip(encoded.value, written, 7);
  const dedup::FingerprintSchema schema = dedup::fingerprint_schema({});
  std::vector<ChangelogRecord> back;
  std::string error;
  ASSERT_TRUE(decode_changelog(encoded.value, back, &error)) << error;
  for (const ChangelogRecord& r : back) {
    EXPECT_EQ(r.schema, schema.id);
    ASSERT_TRUE(r.schema_description);
    EXPECT_EQ(*r.schema_description, schema.description);
  }
}

/// A batch of format version 3 (written before version 4), as those builds wrote it.
std::string version3_batch(std::uint64_t instance, const std::vector<ChangelogRecord>& entries) {
  std::vector<std::string> topics;
  std::string body;
  for (const ChangelogRecord& r : entries) {
    binary::put<std::uint8_t>(
        body, static_cast<std::uint8_t>((r.has_sketch ? 1 : 0) | (r.scope.value ? 2 : 0)));
    binary::put(body, r.fingerprint.bits);
    binary::put(body, r.time.ms);
    binary::put(body, binary::intern(topics, r.topic));
    binary::put(body, r.partition);
    binary::put(body, r.offset);
    if (r.scope.value) binary::put(body, r.scope.value);
    if (r.has_sketch) {
      binary::put(body, static_cast<std::uint8_t>(r.bits));
      binary::put(body, static_cast<std::uint8_t>(r.band_bins));
      binary::put(body, static_cast<std::uint8_t>(r.scheme));
      binary::put(body, static_cast<std::uint8_t>(r.bands));
      binary::put(body, r.sketch.sketch.words[0]);
      binary::put(body, r.sketch.sketch.words[1]);
      for (int b = 0; b < r.bands; ++b)
        binary::put(body, r.sketch.band_keys[static_cast<std::size_t>(b)]);
    }
  }
  std::string value;
  binary::assemble(value, "NDC3", instance, 0, topics, static_cast<std::uint32_t>(entries.size()),
                   body);
  return value;
}

TEST(ChangelogFormat, VersionThreeBatchesAreStillReadWithNoSchema) {
  std::vector<ChangelogRecord> written;
  for (int i = 0; i < 4; ++i) {
    written.push_back(sample_record(0x70 + static_cast<std::uint64_t>(i), 10 + i, i != 1));
    written.back().scope.value = i == 2 ? 9 : 0;
  }
  const std::string value = version3_batch(0x33, written);
  expect_round_trip(value, written, 0x33);
  std::vector<ChangelogRecord> back;
  std::string error;
  ASSERT_TRUE(decode_changelog(value, back, &error)) << error;
  for (const ChangelogRecord& r : back) {
    EXPECT_EQ(r.schema, 0u);
    EXPECT_FALSE(r.schema_description);
  }
  // Still used: an entry without a schema is taken by its fingerprint and sketch options.
  SchemaCompatibility compatibility(dedup::fingerprint_schema({}));
  EXPECT_TRUE(compatibility.accepts(back[0]));
  EXPECT_NE(compatibility.usable(back[0]).shingles, 0u);
  EXPECT_EQ(compatibility.foreign(), 0u);
}

// What an operator's changelog holds: one partition, kept messages a few
// offsets and milliseconds apart, the default sketch (3 bands).
TEST(ChangelogFormat, ATypicalEntryTakesAtMost64Bytes) {
  ChangelogBatch batch(0x55);
  std::mt19937_64 rng(11);
  const int n = 200;
  std::int64_t offset = 123'456'789, time = 1'764'000'000'000;
  std::size_t one_entry = 0;
  for (int i = 0; i < n; ++i) {
    ChangelogRecord r = sample_record(rng(), 0, true);
    r.topic = "events.raw";
    r.partition = 5;
    offset += 1 + static_cast<std::int64_t>(rng() % 3);
    time += static_cast<std::int64_t>(rng() % 200);
    r.offset = offset;
    r.time.ms = time;
    r.sketch.sketch.words = {rng(), rng()};
    r.sketch.band_keys = {rng(), rng(), rng()};
    const std::size_t before = batch.bytes();
    batch.add(r);
    if (i > 0) one_entry = std::max(one_entry, batch.bytes() - before);
  }
  const auto encoded = batch.take();
  EXPECT_LE(one_entry, 64u);
  EXPECT_EQ(one_entry, 1u + 8 + 2 + 1 + 1 + 1 + 16 + 3 * 8);  // 54
  EXPECT_LE(encoded.value.size(), static_cast<std::size_t>(n) * 64);
}

TEST(ChangelogFormat, EntriesOfAnotherFingerprintSchemaAreNotUsedAndCounted) {
  dedup::DedupOptions before;
  before.text.cjk_ngram = 2;
  dedup::DedupOptions after = before;
  after.text.cjk_ngram = 3;
  const dedup::FingerprintSchema old_schema = dedup::fingerprint_schema(before);
  const dedup::FingerprintSchema new_schema = dedup::fingerprint_schema(after);
  ASSERT_NE(old_schema.id, new_schema.id);
  EXPECT_EQ(dedup::schema_differences(old_schema.description, new_schema.description),
            "cjk_ngram 2 -> 3");

  ChangelogBatch batch(0x44, old_schema);
  batch.add(sample_record(1, 0, true));
  batch.add(sample_record(2, 1, false));
  std::vector<ChangelogRecord> back;
  std::string error;
  ASSERT_TRUE(decode_changelog(batch.take().value, back, &error)) << error;
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].schema, old_schema.id);

  SchemaCompatibility mine(new_schema);
  EXPECT_FALSE(mine.accepts(back[0]));
  EXPECT_FALSE(mine.accepts(back[1]));
  EXPECT_EQ(mine.foreign(), 2u);
  SchemaCompatibility same(old_schema);
  EXPECT_TRUE(same.accepts(back[0]));
  EXPECT_EQ(same.foreign(), 0u);
}

TEST(ChangelogFormat, ABinaryBatchThatIsNotExactlyItsShapeIsRefusedWhole) {
  ChangelogBatch batch(1);
  batch.add(sample_record(1, 0, true));
  batch.add(sample_record(2, 1, false));
  const std::string good(batch.take().value);
  std::vector<ChangelogRecord> out;
  std::string error;
  ASSERT_TRUE(decode_changelog(good, out, &error)) << error;
  ASSERT_EQ(out.size(), 2u);
  // header: magic 4, instance 8, batch 8, topics 2 + (2 + 6 "in\"put"), entries 4 = 34,
  // schema 4 + 1 + description, sketch options 4
  const std::size_t params = 34;
  const std::size_t sketch_options = params + 5 + dedup::fingerprint_schema({}).description.size();
  const std::size_t first_entry = sketch_options + 4;
  // the first entry: flags 1, fingerprint 8, time 6 (varint), topic 1, partition 1, offset 1
  auto with = [&](std::size_t at, std::string_view bytes) {
    std::string v = good;
    v.replace(at, bytes.size(), bytes);
    return v;
  };
  const std::pair<std::string, const char*> bad[] = {
      {good.substr(0, good.size() - 1), "truncated entry"},
      {good + "x", "bytes after the last entry"},
      {good.substr(0, 20), "truncated header"},
      {good.substr(0, first_entry - 1), "truncated header"},
      {with(params - 4, std::string("\0\0\0\0", 4)), "no entries"},
      {with(params - 4, std::string("\x03\0\0\0", 4)), "truncated entry"},
      {with(params - 4, std::string("\xff\xff\0\0", 4)), "entry count larger than the record"},
      {with(params, std::string("\0\0\0\0", 4)), "the schema id is 0"},
      {with(first_entry, "\x08"), "an entry has unknown flags"},
      {with(first_entry + 15, "\x01"), "an entry names no topic of the record"},
      {with(first_entry + 16, "\xff\xff\xff\xff\x0f"), "an entry's partition is negative"},
      {with(first_entry + 17, "\xff\xff\xff\xff\xff\xff\xff\x7f"),
       "an entry's offset is out of range"},
      {with(sketch_options, "\x03"), "a sketch's bits is not 1, 2, 4 or 8"},
      {with(sketch_options + 1, std::string("\0", 1)), "a sketch's band_bins is out of range"},
      {with(sketch_options + 2, std::string("\0", 1)), "a sketch's scheme is out of range"},
      {with(sketch_options + 3, "\x09"), "a sketch has more than 8 band keys"},
      {good.substr(0, 22) + std::string("\0\0", 2) + good.substr(22 + 2 + 6),
       "a topic is not a topic name"},  // ("" instead of "in\"put")
  };
  for (const auto& [value, reason] : bad) {
    std::vector<ChangelogRecord> kept(1);  // what was there before stays, nothing is appended
    EXPECT_FALSE(decode_changelog(value, kept, &error)) << reason;
    EXPECT_EQ(kept.size(), 1u) << reason;
    EXPECT_EQ(error, reason);
  }
}

// Every truncation and every single-byte change of a batch: decoded whole or
// refused whole, never read past its end (ASan in the ci preset).
TEST(ChangelogFormat, EveryTruncationAndByteChangeOfABinaryBatchIsAllOrNothing) {
  ChangelogBatch batch(5);
  ChangelogRecord scoped = sample_record(3, 2, true);
  scoped.scope.value = 77;
  batch.add(sample_record(1, 0, true));
  batch.add(sample_record(2, 1, false));
  batch.add(scoped);
  const std::string good(batch.take().value);
  std::string error;
  int refused = 0, decoded = 0;
  auto check = [&](const std::string& value) {
    std::vector<ChangelogRecord> out(1);
    if (decode_changelog(value, out, &error)) {
      ++decoded;
      EXPECT_EQ(out.size(), 4u);
    } else {
      ++refused;
      EXPECT_EQ(out.size(), 1u);
      EXPECT_FALSE(error.empty());
    }
  };
  for (std::size_t n = 0; n < good.size(); ++n) check(good.substr(0, n));
  EXPECT_EQ(refused, static_cast<int>(good.size()));  // every truncation is refused
  for (std::size_t at = 0; at < good.size(); ++at)
    for (const char to : {'\0', '\x01', '\x7f', '\x80', '\xff'}) {
      std::string value = good;
      value[at] = to;
      check(value);
    }
  EXPECT_EQ(refused + decoded, static_cast<int>(good.size() * 6));
  EXPECT_GT(decoded, 0);  // a fingerprint or a time may be any value
}

TEST(ChangelogFormat, VersionOneRecordsAreStillRead) {
  const ChangelogRecord r = sample_record(0xabc, 42, true);
  std::vector<ChangelogRecord> back;
  std::string error;
  ASSERT_TRUE(decode_changelog(encode_changelog_value(r), back, &error)) << error;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].fingerprint, r.fingerprint);
  EXPECT_EQ(back[0].offset, 42);
  EXPECT_EQ(back[0].sketch.band_keys, r.sketch.band_keys);
}

// Version 2 batches (JSON), written before version 3, are still read.
TEST(ChangelogFormat, AJsonBatchWithOneBadEntryIsRefusedWhole) {
  const std::string good =
      "{\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0}";
  const std::string instance = "\"instance\":\"0000000000000000\"";
  const std::string bad[] = {
      "{\"v\":2," + instance + ",\"entries\":[" + good +
          ",{\"fp\":\"xyz\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":1}]}",
      "{\"v\":2," + instance + ",\"entries\":[" + good + ",7]}",
      "{\"v\":2," + instance + ",\"entries\":[]}",
      "{\"v\":2," + instance + ",\"entries\":{}}",
      "{\"v\":2,\"entries\":[" + good + "]}",
      "{\"v\":3," + instance + ",\"entries\":[" + good + "]}",
  };
  for (const auto& value : bad) {
    std::vector<ChangelogRecord> out(1);  // what was there before stays, nothing is appended
    std::string error;
    EXPECT_FALSE(decode_changelog(value, out, &error)) << value;
    EXPECT_EQ(out.size(), 1u) << value;
    EXPECT_FALSE(error.empty()) << value;
  }
  std::vector<ChangelogRecord> out;
  std::string error;
  EXPECT_TRUE(decode_changelog("{\"v\":2," + instance + ",\"entries\":[" + good + "," + good + "]}",
                               out, &error))
      << error;
  EXPECT_EQ(out.size(), 2u);
}

TEST(ChangelogFormat, RoundTripsEveryField) {
  ChangelogRecord r;
  r.fingerprint.bits = 0x0123456789abcdefULL;
  r.time.ms = 1'700'000'000'123;
  r.topic = "news.raw-1";
  r.partition = 7;
  r.offset = (std::int64_t{1} << 48) - 1;
  r.instance = 0xfedcba9876543210ULL;
  r.has_sketch = true;
  r.bits = 2;
  r.band_bins = 4;
  r.scheme = 7;
  r.bands = 3;
  r.sketch.sketch.words = {0x1111222233334444ULL, 0xaaaabbbbccccddddULL};
  r.sketch.band_keys = {1, 2, 0xffffffffffffffffULL};
  r.scope.value = 0xffffffffu;
  std::string error;
  auto back = decode_changelog_value(encode_changelog_value(r), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->scope, r.scope);
  EXPECT_EQ(back->fingerprint, r.fingerprint);
  EXPECT_EQ(back->time, r.time);
  EXPECT_EQ(back->topic, r.topic);
  EXPECT_EQ(back->partition, r.partition);
  EXPECT_EQ(back->offset, r.offset);
  EXPECT_EQ(back->instance, r.instance);
  EXPECT_TRUE(back->has_sketch);
  EXPECT_EQ(back->bits, 2);
  EXPECT_EQ(back->band_bins, 4);
  EXPECT_EQ(back->scheme, 7);
  EXPECT_EQ(back->bands, 3);
  EXPECT_EQ(back->sketch.sketch, r.sketch.sketch);
  EXPECT_EQ(back->sketch.band_keys, r.sketch.band_keys);
  EXPECT_NE(back->sketch.shingles, 0u);  // the engine indexes it
  EXPECT_EQ(changelog_key(r.fingerprint), "0123456789abcdef");

  r.has_sketch = false;
  r.scope = {};
  const std::string unscoped = encode_changelog_value(r);
  EXPECT_EQ(unscoped.find("scope"), std::string::npos) << "the zero scope is not written";
  back = decode_changelog_value(unscoped, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->scope, dedup::ScopeId{});
  EXPECT_FALSE(back->has_sketch);
  EXPECT_EQ(back->sketch.shingles, 0u);
}

// Sketches written before "scheme" existed filled empty bins by rotation: they
// read as scheme 1, and an engine of another scheme indexes them by their
// fingerprint alone rather than compare sketches of two definitions.
TEST(ChangelogFormat, ASketchWithoutASchemeIsOfTheRotationSchemeAndNotUsedByThisBuild) {
  const ChangelogRecord r = sample_record(0xabc, 42, true);
  std::string value = encode_changelog_value(r);
  const std::string member = "\"scheme\":" + std::to_string(dedup::kSketchScheme) + ",";
  const auto at = value.find(member);
  ASSERT_NE(at, std::string::npos) << value;
  const std::string old_value = std::string(value).erase(at, member.size());
  std::string error;
  const auto now = decode_changelog_value(value, &error);
  const auto old = decode_changelog_value(old_value, &error);
  ASSERT_TRUE(now && old) << error;
  EXPECT_EQ(now->scheme, dedup::kSketchScheme);
  EXPECT_EQ(old->scheme, 1);

  const dedup::SketchOptions options;
  SchemaCompatibility compatibility(dedup::fingerprint_schema({}));
  EXPECT_NE(compatibility.usable(*now).shingles, 0u);
  EXPECT_EQ(compatibility.usable(*old).shingles, 0u);
  EXPECT_EQ(compatibility.usable(*now).band_keys, r.sketch.band_keys);
}

TEST(ChangelogFormat, RefusesMalformedValuesWithAReason) {
  const char* bad[] = {
      "",
      "[]",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,"
      "\"scope\":4294967296,\"instance\":\"0000000000000000\"}",
      "{\"v\":2,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,"
      "\"instance\":\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"xyz\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,\"instance\":"
      "\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"\",\"partition\":0,\"offset\":0,"
      "\"instance\":\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":-1,\"offset\":0,"
      "\"instance\":\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":"
      "281474976710656,\"instance\":\"0000000000000000\"}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,"
      "\"instance\":\"0000000000000000\",\"sketch\":{\"bits\":3,\"band_bins\":4,\"minhash\":"
      "\"00000000000000000000000000000000\",\"bands\":[]}}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,"
      "\"instance\":\"0000000000000000\",\"sketch\":{\"bits\":2,\"band_bins\":4,\"minhash\":\"00\","
      "\"bands\":[]}}",
      "{\"v\":1,\"fp\":\"0000000000000001\",\"t\":1,\"topic\":\"in\",\"partition\":0,\"offset\":0,"
      "\"instance\":\"0000000000000000\",\"sketch\":{\"bits\":2,\"band_bins\":4,\"minhash\":"
      "\"00000000000000000000000000000000\",\"bands\":[1]}}",
  };
  for (const char* value : bad) {
    std::string error;
    EXPECT_FALSE(decode_changelog_value(value, &error)) << value;
    EXPECT_FALSE(error.empty()) << value;
  }
}

/// Texts that share most words with a base text, so some are near-duplicates
/// by SimHash, some only by their sketch, some not at all.
std::vector<std::string> variants(const std::string& base, std::mt19937_64& rng, int count) {
  std::vector<std::string> words;
  for (std::size_t at = 0, next; at < base.size(); at = next + 1) {
    next = base.find(' ', at);
    if (next == std::string::npos) next = base.size();
    words.push_back(base.substr(at, next - at));
  }
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    auto w = words;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % w.size();
      switch (rng() % 3) {
        case 0:
          w.erase(w.begin() + static_cast<std::ptrdiff_t>(at));
          break;
        case 1:
          w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), "extra");
          break;
        default:
          w[at] = "changed";
          break;
      }
      if (w.empty()) w.push_back("word");
    }
    std::string text;
    for (const auto& x : w) text += (text.empty() ? "" : " ") + x;
    out.push_back(text);
  }
  return out;
}

TEST(ChangelogEngine, AWindowRebuiltFromRecordsJudgesExactlyLikeTheOriginal) {
  const std::vector<std::string> bases = {
      "The city council approved a new budget for public schools on Tuesday after a long debate "
      "about housing costs "
      "and the future of the old harbour district",
      "Heavy rain flooded several roads in the northern valley overnight and emergency crews "
      "rescued drivers trapped "
      "near the river crossing",
      "A small technology company announced record profits this quarter thanks to strong demand "
      "for its cloud "
      "storage products in Europe and Asia",
  };
  dedup::DedupOptions options;  // the default: SimHash and the sketch stage
  // `fingerprints_only` is what a changelog without sketches would rebuild.
  dedup::Engine original(options), rebuilt(options), fingerprints_only(options);
  std::int64_t t = 1'700'000'000'000;
  std::uint64_t ref = 1;
  for (const auto& text : bases) {
    const dedup::RecordRef r{ref++};
    const auto verdict = original.process(text, dedup::EventTime{t++}, r);
    ASSERT_EQ(verdict.kind, dedup::VerdictKind::unique);
    ChangelogRecord record;
    record.fingerprint = verdict.fingerprint;
    record.time = dedup::EventTime{t - 1};
    record.topic = "input";
    record.has_sketch = true;
    record.bits = options.sketch.bits;
    record.band_bins = options.sketch.band_bins;
    record.bands = options.sketch.bands;
    record.sketch = original.last_kept_sketch();
    std::string error;
    auto back = decode_changelog_value(encode_changelog_value(record), &error);
    ASSERT_TRUE(back) << error;
    rebuilt.remember(back->fingerprint, back->time, r, back->sketch);
    fingerprints_only.remember(back->fingerprint, back->time, r);
  }
  std::mt19937_64 rng(11);
  int duplicates = 0, differs_without_sketch = 0;
  for (const auto& base : bases) {
    for (const auto& text : variants(base, rng, 40)) {
      const dedup::RecordRef r{ref++};
      const dedup::EventTime time{t++};
      const auto a = original.process(text, time, r);
      const auto b = rebuilt.process(text, time, r);
      const auto c = fingerprints_only.process(text, time, r);
      differs_without_sketch += c.kind != a.kind || c.similarity != a.similarity;
      ASSERT_EQ(a.kind, b.kind) << text;
      ASSERT_EQ(a.match.has_value(), b.match.has_value()) << text;
      if (a.match) {
        ++duplicates;
        EXPECT_EQ(a.match->of, b.match->of) << text;
        EXPECT_EQ(a.match->distance, b.match->distance) << text;
      }
      EXPECT_EQ(a.similarity, b.similarity) << text;
    }
  }
  EXPECT_GT(duplicates, 0);
  // The sketch stage found some of them, and without the records' sketches a
  // rebuilt window would have judged some differently: the sketch data matters.
  EXPECT_GT(original.stats().sketch_matches, 0u);
  EXPECT_GT(differs_without_sketch, 0);
  EXPECT_EQ(original.stats().sketch_matches, rebuilt.stats().sketch_matches);
  // A replayed message is never its own duplicate.
  const auto self = rebuilt.process(bases[0], dedup::EventTime{t++}, dedup::RecordRef{1});
  if (self.match) {
    EXPECT_FALSE(self.match->of == dedup::RecordRef{1});
  }
}

}  // namespace
}  // namespace neardup::stream
