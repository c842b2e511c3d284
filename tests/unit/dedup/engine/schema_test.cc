// The fingerprint schema: which options change it and which do not.
#include "dedup/engine/schema.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace neardup::dedup {
namespace {

TEST(FingerprintSchema, EveryOptionThatChangesAFingerprintOrSketchChangesTheId) {
  const DedupOptions base;
  const FingerprintSchema schema = fingerprint_schema(base);
  EXPECT_NE(schema.id, 0u);
  EXPECT_EQ(schema.hex().size(), 8u);
  auto differs = [&](auto change) {
    DedupOptions o = base;
    change(o);
    return fingerprint_schema(o).id != schema.id;
  };
  EXPECT_TRUE(differs([](DedupOptions& o) { o.text.normalize = false; }));
  EXPECT_TRUE(differs([](DedupOptions& o) { o.text.cjk_ngram = 3; }));
  EXPECT_TRUE(differs([](DedupOptions& o) { o.text.word_shingle = 2; }));
  EXPECT_TRUE(differs([](DedupOptions& o) { o.text.strip_boilerplate = true; }));
  EXPECT_TRUE(differs([](DedupOptions& o) { o.text.weighting = Weighting::unit; }));
  EXPECT_TRUE(differs([](DedupOptions& o) { o.text.weighting = Weighting::tf_idf; }));
  EXPECT_TRUE(differs([](DedupOptions& o) { o.sketch.enabled = false; }));
  EXPECT_TRUE(differs([](DedupOptions& o) { o.sketch.bits = 4; }));
  EXPECT_TRUE(differs([](DedupOptions& o) { o.sketch.bands = 4; }));
  EXPECT_TRUE(differs([](DedupOptions& o) { o.sketch.band_bins = 5; }));
  // What only decides or bounds, and never changes what a fingerprint means:
  EXPECT_FALSE(differs([](DedupOptions& o) { o.sketch.threshold = 0.5; }));
  EXPECT_FALSE(differs([](DedupOptions& o) { o.sketch.exact_threshold = 0.7; }));
  EXPECT_FALSE(differs([](DedupOptions& o) { o.sketch.recent = 0; }));
  EXPECT_FALSE(differs([](DedupOptions& o) { o.text.must_match = MustMatch::numbers; }));
  EXPECT_FALSE(differs([](DedupOptions& o) { o.index.max_distance = 5; }));
  EXPECT_FALSE(differs([](DedupOptions& o) { o.index.blocks = 6; }));
  EXPECT_FALSE(differs([](DedupOptions& o) { o.window.max_entries = 10; }));
  EXPECT_FALSE(differs([](DedupOptions& o) { o.window.scoped = true; }));
  // The idf file matters only with tf_idf.
  EXPECT_FALSE(differs([](DedupOptions& o) { o.text.idf_file = "/nonexistent"; }));
}

TEST(FingerprintSchema, AnIdfFileCountsByItsContent) {
  const std::string path = testing::TempDir() + "schema_test_idf.tsv";
  auto schema_with = [&](const char* content) {
    std::ofstream(path) << content;
    DedupOptions o;
    o.text.weighting = Weighting::tf_idf;
    o.text.idf_source = IdfSource::file;
    o.text.idf_file = path;
    return fingerprint_schema(o);
  };
  const FingerprintSchema a = schema_with("the\t1.0\n");
  const FingerprintSchema same = schema_with("the\t1.0\n");
  const FingerprintSchema b = schema_with("the\t2.0\n");
  std::remove(path.c_str());
  EXPECT_EQ(a.id, same.id);
  EXPECT_NE(a.id, b.id);
  EXPECT_NE(a.description.find("idf=file:"), std::string::npos);
  DedupOptions missing;
  missing.text.weighting = Weighting::tf_idf;
  missing.text.idf_source = IdfSource::file;
  missing.text.idf_file = path;
  EXPECT_THROW(fingerprint_schema(missing), std::runtime_error);
}

TEST(FingerprintSchema, DifferencesNameEachOptionBothWays) {
  EXPECT_EQ(schema_differences("a=1 b=2", "a=1 b=3"), "b 2 -> 3");
  EXPECT_EQ(schema_differences("a=1 sketch=off", "a=1 sketch.bits=2"),
            "sketch off -> -, sketch.bits - -> 2");
  EXPECT_EQ(schema_differences("a=1", "a=1"), "");
}

}  // namespace
}  // namespace neardup::dedup
