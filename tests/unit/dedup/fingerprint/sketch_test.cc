#include "dedup/fingerprint/sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "dedup/index/sketch_index.h"
#include "dedup/text/normalize.h"

namespace neardup::dedup {
namespace {

SketchOptions with_bits(int bits) {
  SketchOptions o;
  o.bits = bits;
  return o;
}

SketchResult sketch_of(std::string_view text, const SketchOptions& options = {}) {
  Normalizer normalizer;
  Sketcher sketcher(options);
  return sketcher.run(normalizer.run(text));
}

std::vector<std::uint64_t> shingles_of(std::string_view text) {
  Normalizer normalizer;
  Sketcher sketcher(SketchOptions{});
  return sketcher.shingle_hashes(normalizer.run(text));
}

double exact_jaccard(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  std::vector<std::uint64_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return static_cast<double>(both.size()) / static_cast<double>(a.size() + b.size() - both.size());
}

std::string random_word(std::mt19937_64& rng) {
  std::string w;
  const std::size_t n = 3 + rng() % 6;
  for (std::size_t i = 0; i < n; ++i) w += static_cast<char>('a' + rng() % 26);
  return w;
}

TEST(Sketch, IdenticalNormalizedTextsGiveIdenticalSketches) {
  const SketchResult a = sketch_of("Hello, World!  The quick brown fox.");
  const SketchResult b = sketch_of("hello world the QUICK brown fox");
  EXPECT_EQ(a.sketch, b.sketch);
  EXPECT_EQ(a.band_keys, b.band_keys);
  EXPECT_DOUBLE_EQ(estimate_jaccard(a.sketch, b.sketch, 2), 1.0);
  EXPECT_NE(sketch_of("hello world the quick brown cat").sketch, a.sketch);
}

TEST(Sketch, TextWithoutTokensHasNoShingles) {
  EXPECT_EQ(sketch_of("").shingles, 0U);
  EXPECT_EQ(sketch_of(" ,;!? ").shingles, 0U);
  EXPECT_EQ(sketch_of("ab").shingles, 1U);  // shorter than a 5-gram: one shingle
}

TEST(Sketch, AsciiShinglesHashAlikeNextToNonAscii) {
  // The ASCII fast path and the general path must agree, or an accent anywhere
  // in a text would change every shingle of it.
  const auto ascii = shingles_of("hello wonderful world");
  const auto mixed = shingles_of("hello wonderful world caf\xc3\xa9");
  EXPECT_TRUE(std::includes(mixed.begin(), mixed.end(), ascii.begin(), ascii.end()));
  EXPECT_GT(mixed.size(), ascii.size());
}

TEST(Sketch, AsciiFastPathAgreesWithGeneralPathAtEveryLength) {
  // The ASCII path hashes 8 windows per step (SIMD where the CPU has it); the
  // general path hashes one shingle at a time. Every length exercises a
  // different tail of the last step.
  std::mt19937_64 rng(5);
  for (std::size_t words = 1; words < 40; ++words) {
    std::string text;
    for (std::size_t i = 0; i < words; ++i) text += random_word(rng) + (i % 3 ? " " : ", ");
    const auto ascii = shingles_of(text);
    const auto general = shingles_of(text + " \xc3\xa9t\xc3\xa9");
    EXPECT_TRUE(std::includes(general.begin(), general.end(), ascii.begin(), ascii.end())) << text;
    EXPECT_EQ(general.size(), ascii.size() + 4) << text;  // " été" adds 4 characters: 4 new 5-grams
  }
}

TEST(Sketch, AsciiJoinDropsEverySeparatorRunToOneSpace) {
  // The ASCII path joins the tokens from the text itself (64 bytes per step
  // where the CPU has AVX-512 VBMI2): runs of any separator bytes, leading and
  // trailing ones, words longer than a step and texts of several steps must
  // give the shingles of the tokens joined by single spaces, as the general
  // path (which joins the tokens one by one) does.
  const std::string separators = " ,.;:!?-_/()[]\"'#@\t\n\r*+=<>|~^`{}$%&";
  std::mt19937_64 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const std::size_t words = 1 + rng() % 40;
    for (std::size_t i = 0; i < words; ++i) {
      if (i != 0 || rng() % 2)
        for (std::size_t k = 1 + rng() % (rng() % 8 == 0 ? 70 : 3); k != 0; --k)
          text += separators[rng() % separators.size()];
      std::string word = random_word(rng);
      if (rng() % 10 == 0) word += std::to_string(rng());              // digits
      if (rng() % 15 == 0) word += std::string(20 + rng() % 80, 'q');  // beyond one step
      if (rng() % 4 == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
      text += word;
    }
    if (rng() % 2) text += separators[rng() % separators.size()];
    // A leading em dash is a separator too, but a non-ASCII one: the same
    // tokens, through the general path.
    const std::string dashed = "\xe2\x80\x94 " + text;
    Normalizer normalizer;
    ASSERT_TRUE(normalizer.run(text).ascii);
    ASSERT_FALSE(normalizer.run(dashed).ascii);
    const auto ascii = shingles_of(text);
    EXPECT_EQ(shingles_of(dashed), ascii) << text;
    EXPECT_EQ(shingles_of(normalize(text)), ascii) << text;
    // The portable join, which this CPU may not take: the tokens joined by single spaces.
    const NormalizedText norm = normalizer.run(text);
    std::string joined(norm.text.size() + norm.token_count + 16, '\0');
    joined.resize(detail::join_ascii_tokens(norm, joined.data()));
    EXPECT_EQ(joined, normalize(text)) << text;  // the joined tokens themselves
  }
}

TEST(Sketch, MostlyCjkTextUsesCharacterBigramsWithoutSpaces) {
  // 10 distinct Han characters -> 9 bigrams; the spaces and punctuation vanish.
  EXPECT_EQ(shingles_of("床前明月光，疑是地上霜").size(), 9U);
  EXPECT_EQ(shingles_of("床前明月光 疑是地上霜"), shingles_of("床前明月光疑是地上霜"));
  // Mostly Latin with a few Han characters: 5-grams over the whole text.
  EXPECT_EQ(shingles_of("abcdefgh 月").size(), 6U);  // "abcdefgh 月" has 10 characters
}

TEST(Sketch, EstimateTracksExactJaccardOnRandomPairs) {
  for (int bits : {1, 2, 4, 8}) {
    std::mt19937_64 rng(20240501 + static_cast<unsigned>(bits));
    double total_error = 0;
    double worst = 0;
    constexpr int kPairs = 300;
    for (int pair = 0; pair < kPairs; ++pair) {
      std::vector<std::string> words;
      const std::size_t n = 20 + rng() % 150;
      for (std::size_t i = 0; i < n; ++i) words.push_back(random_word(rng));
      std::vector<std::string> edited = words;
      const double change = std::uniform_real_distribution<double>(0.0, 0.5)(rng);
      for (auto& w : edited)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < change) w = random_word(rng);
      std::string a, b;
      for (const auto& w : words) a += w + " ";
      for (const auto& w : edited) b += w + " ";
      const double exact = exact_jaccard(shingles_of(a), shingles_of(b));
      const double estimate = estimate_jaccard(sketch_of(a, with_bits(bits)).sketch,
                                               sketch_of(b, with_bits(bits)).sketch, bits);
      total_error += std::abs(estimate - exact);
      worst = std::max(worst, std::abs(estimate - exact));
    }
    // 128/bits bins: the standard error of one estimate is <= ~0.1 even at 8 bits
    // (16 bins); the mean error is far smaller, the worst of 300 within ~4 sigma.
    EXPECT_LT(total_error / kPairs, bits == 8 ? 0.1 : 0.07) << "bits " << bits;
    EXPECT_LT(worst, bits == 8 ? 0.45 : 0.3) << "bits " << bits;
  }
}

TEST(Sketch, UnrelatedTextsEstimateLow) {
  std::mt19937_64 rng(7);
  int high = 0;
  for (int pair = 0; pair < 200; ++pair) {
    std::string a, b;
    for (int i = 0; i < 40; ++i) a += random_word(rng) + " ";
    for (int i = 0; i < 40; ++i) b += random_word(rng) + " ";
    high += estimate_jaccard(sketch_of(a).sketch, sketch_of(b).sketch, 2) >= 0.7;
  }
  EXPECT_EQ(high, 0);
}

TEST(Sketch, ValidateRejectsImpossibleOptions) {
  SketchOptions o;
  o.bits = 3;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = {};
  o.bands = 9;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = {};
  o.bits = 8;  // 16 bins
  o.bands = 6;
  o.band_bins = 3;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o = {};
  o.threshold = 0;
  EXPECT_THROW(validate(o), std::invalid_argument);
  o.enabled = false;
  EXPECT_NO_THROW(validate(o));
  EXPECT_THROW(Sketcher(SketchOptions{.enabled = true, .bits = 5}), std::invalid_argument);
}

// The densification rule written as the definition reads (walk bin i's order
// to its first filled bin), against the bit-map implementation, for every bin
// count and fill pattern from empty to full.
TEST(Sketch, DensifyFillsEachEmptyBinFromTheFirstFilledBinOfItsOrder) {
  constexpr std::uint32_t kStep = 0x9e3779b9U;
  std::mt19937_64 rng(5);
  for (const int bins : {16, 32, 64, 128}) {
    const std::uint8_t* orders = detail::densify_orders(bins);
    for (int round = 0; round < 400; ++round) {
      std::vector<std::uint32_t> minima(static_cast<std::size_t>(bins));
      const double fill = (round % 20) / 19.0;  // 0 (every bin empty) .. 1 (every bin filled)
      for (auto& m : minima)
        m = std::uniform_real_distribution<>(0, 1)(rng) < fill
                ? static_cast<std::uint32_t>(rng() % 0xfffffff0U)
                : detail::kEmptyBin;
      std::vector<std::uint32_t> expected = minima;
      const bool any = std::any_of(minima.begin(), minima.end(),
                                   [](std::uint32_t m) { return m != detail::kEmptyBin; });
      for (int i = 0; i < bins; ++i) {
        if (minima[static_cast<std::size_t>(i)] != detail::kEmptyBin) continue;
        if (!any) {
          expected[static_cast<std::size_t>(i)] =
              detail::kEmptyBin + static_cast<std::uint32_t>(bins - i) * kStep;
          continue;
        }
        const std::uint8_t* order = orders + i * bins;
        int a = 0;
        while (minima[order[a]] == detail::kEmptyBin) ++a;
        expected[static_cast<std::size_t>(i)] =
            minima[order[a]] + static_cast<std::uint32_t>(a + 1) * kStep;
      }
      detail::densify(minima.data(), bins);
      ASSERT_EQ(minima, expected) << bins << " bins, fill " << fill;
    }
  }
}

// Every order is a permutation of the bins (so the walk above ends), and the
// orders of neighbouring bins differ: with few filled bins, two neighbours
// share a source about as often as two random bins would (1 / filled), where
// the rotation rule shared it for every empty run.
TEST(Sketch, DensifyOrdersArePermutationsAndNeighboursRarelyShareASource) {
  for (const int bins : {16, 32, 64, 128}) {
    const std::uint8_t* orders = detail::densify_orders(bins);
    for (int i = 0; i < bins; ++i) {
      std::vector<int> row(orders + i * bins, orders + (i + 1) * bins);
      std::sort(row.begin(), row.end());
      for (int k = 0; k < bins; ++k) ASSERT_EQ(row[static_cast<std::size_t>(k)], k) << bins;
    }
  }
  std::mt19937_64 rng(17);
  const std::uint8_t* orders = detail::densify_orders(64);
  auto source = [&](const std::vector<bool>& filled, int i) {
    int a = 0;
    while (!filled[orders[i * 64 + a]]) ++a;
    return orders[i * 64 + a];
  };
  int pairs = 0, shared = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<bool> filled(64);
    for (int k = 0; k < 8; ++k) filled[rng() % 64] = true;
    for (int i = 0; i + 1 < 64; ++i) {
      if (filled[static_cast<std::size_t>(i)] || filled[static_cast<std::size_t>(i) + 1]) continue;
      ++pairs;
      shared += source(filled, i) == source(filled, i + 1);
    }
  }
  ASSERT_GT(pairs, 50000);
  // ~8 filled bins (fewer after collisions): a shared source in ~1/8 of the pairs, not ~all
  EXPECT_LT(static_cast<double>(shared) / pairs, 0.25);
}

// Short texts leave most bins empty. Their bands must still be as likely to
// catch a near-duplicate as bands of independent bins: a pair at Jaccard J
// shares one of 3 bands of 4 bins with probability 1 - (1 - J^4)^3. Rotation
// densification (an empty bin copying its right neighbour) made the three
// bands (neighbouring bins) nearly one band for such texts: 0.79 here where
// independent bins give ~0.87.
TEST(Sketch, ShortTextsShareABandAsOftenAsIndependentBinsPredict) {
  std::mt19937_64 rng(23);
  const SketchOptions options;
  double expected = 0;
  int pairs = 0, shared = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string a;
    while (a.size() < 60) a += random_word(rng) + " ";
    a.resize(60);
    std::string b = a;
    const std::size_t at = rng() % b.size();
    b[at] = b[at] == 'x' ? 'y' : 'x';  // one character: up to 5 of ~56 five-grams
    const double j = exact_jaccard(shingles_of(a), shingles_of(b));
    if (j == 1.0) continue;
    ++pairs;
    expected += 1 - std::pow(1 - std::pow(j, options.band_bins), options.bands);
    const SketchResult x = sketch_of(a), y = sketch_of(b);
    bool any = false;
    for (int band = 0; band < options.bands; ++band)
      any = any || x.band_keys[static_cast<std::size_t>(band)] ==
                       y.band_keys[static_cast<std::size_t>(band)];
    shared += any;
  }
  ASSERT_GT(pairs, 1900);
  expected /= pairs;
  EXPECT_GT(expected, 0.8);
  EXPECT_GT(static_cast<double>(shared) / pairs, expected - 0.03)
      << shared << " of " << pairs << " pairs share a band";
}

// The packing rule as the header states it (bin i at bits [i*bits, (i+1)*bits)
// holds the top bits of minima[i] * 0x2545f491), read back bin by bin, for
// every width, against the vectorized packing.
TEST(Sketch, PackKeepsTheTopBitsOfEachRemixedMinimumInBinOrder) {
  std::mt19937_64 rng(11);
  for (const int bits : {1, 2, 4, 8}) {
    const int bins = kSketchBits / bits;
    for (int round = 0; round < 200; ++round) {
      std::vector<std::uint32_t> minima(static_cast<std::size_t>(bins));
      for (auto& m : minima) m = static_cast<std::uint32_t>(rng());
      if (round == 0)
        std::fill(minima.begin(), minima.end(),
                  0xffffffffU);  // saturating narrowings must not clip
      const Sketch sketch = detail::pack(minima.data(), bits);
      for (int i = 0; i < bins; ++i) {
        const int at = i * bits;
        const std::uint64_t word = sketch.words[static_cast<std::size_t>(at / 64)];
        const auto got =
            static_cast<std::uint32_t>((word >> (at % 64)) & ((std::uint64_t{1} << bits) - 1));
        const std::uint32_t want =
            (minima[static_cast<std::size_t>(i)] * 0x2545f491U) >> (32 - bits);
        ASSERT_EQ(got, want) << bits << " bits, bin " << i << ", round " << round;
      }
    }
  }
}

// ---- SketchIndex ----------------------------------------------------------

SketchResult keyed(std::uint64_t key_seed, int bands, std::uint64_t sketch_bits) {
  SketchResult r;
  r.sketch.words = {sketch_bits, ~sketch_bits};
  for (int b = 0; b < bands; ++b)
    r.band_keys[static_cast<std::size_t>(b)] = (key_seed + 1) * 0x9e3779b97f4a7c15ULL * (b + 3);
  r.shingles = 10;
  return r;
}

// Brute force over a FIFO window of `capacity` entries: every live entry that
// shares at least one band key with the probe must be visited, and nothing
// older than the window ever is. Sequences start just below 2^32 (crossed once)
// and a reference keeps 9 bits of offset at this capacity (wrapped ~4 times).
// About 7 live entries share each key, so buckets that hold two or three keys
// spill (checked), and none gives an entry up.
TEST(SketchIndex, VisitsEveryLiveEntrySharingABandAndNoExpiredOne) {
  const SketchOptions options;
  constexpr std::size_t kCapacity = 300;
  SketchIndex index(options, kCapacity);
  std::mt19937_64 rng(99);
  std::map<std::uint64_t, std::array<std::uint64_t, kMaxSketchBands>>
      keys;  // sequence -> band keys
  const std::uint64_t first = (std::uint64_t{1} << 32) - 500;
  std::size_t most_spilled = 0;
  for (std::uint64_t seq = first; seq < first + 2000; ++seq) {
    const std::uint64_t oldest = seq + 1 > first + kCapacity ? seq + 1 - kCapacity : first;
    // A few key seeds only, so buckets are shared by many entries, mixed per band.
    SketchResult r = keyed(rng() % 40, options.bands, seq);
    r.band_keys[0] = keyed(rng() % 40, options.bands, seq).band_keys[0];
    if (seq % 7 == 0) {
      index.insert(seq, oldest, nullptr);  // no sketch: never a band candidate
    } else {
      index.insert(seq, oldest, &r);
      keys[seq] = r.band_keys;
    }
    most_spilled = std::max(most_spilled, index.stats().spilled);
    if (seq % 13 != 0) continue;
    const SketchResult probe = keyed(rng() % 40, options.bands, 0);
    std::set<std::uint64_t> visited;
    index.for_each_candidate(probe, oldest, [&](std::uint64_t s, const Sketch& sketch) {
      EXPECT_GE(s, oldest);
      EXPECT_LE(s, seq);
      EXPECT_NE(s % 7, 0U) << "an entry without a sketch was returned";
      EXPECT_EQ(sketch.words[0], s) << "the sketch belongs to another entry";
      visited.insert(s);
    });
    for (const auto& [s, k] : keys) {
      if (s < oldest) continue;
      bool shares = false;
      for (int b = 0; b < options.bands; ++b)
        shares |= k[static_cast<std::size_t>(b)] == probe.band_keys[static_cast<std::size_t>(b)];
      if (shares) {
        EXPECT_TRUE(visited.count(s)) << "lost live candidate " << s << " at " << seq;
      }
    }
  }
  EXPECT_GT(most_spilled, 0U);
  EXPECT_EQ(index.stats().evictions, 0U);
}

// Brute force per band over a FIFO window whose live span follows `oldest`:
// every live entry sharing band b's key with a probe is visited for band b
// (visits are counted per band), nothing expired is visited, and each visit
// carries its own entry's sketch. A full window has about 5 entries a bucket
// here and no bucket gives one up (checked). Returns the index's bytes at the
// end.
// With `crowded`, keys come at random from pools of 2,000: about 10 live
// entries share a key, so buckets spill; `most_spilled` gets the most
// references the spills held at once.
std::size_t check_every_band_candidate(std::size_t capacity, std::uint64_t inserts,
                                       const std::function<std::uint64_t(std::uint64_t)>& oldest_at,
                                       bool crowded = false, std::size_t* most_spilled = nullptr) {
  const SketchOptions options;
  SketchIndex index(options, capacity);
  std::mt19937_64 rng(7);
  std::map<std::uint64_t, std::array<std::uint64_t, kMaxSketchBands>> keys;
  for (std::uint64_t seq = 0; seq < inserts; ++seq) {
    const std::uint64_t oldest = oldest_at(seq);
    // Each band's key from its own pool of 4,000, dealt in turn: 2 or 3 live
    // entries share each key.
    SketchResult r = keyed(0, options.bands, seq);
    for (int b = 0; b < options.bands; ++b)
      r.band_keys[static_cast<std::size_t>(b)] =
          keyed(crowded ? rng() % 2000 : (seq * (2 * b + 7) + 11 * b) % 4000, options.bands, seq)
              .band_keys[static_cast<std::size_t>(b)];
    index.insert(seq, oldest, &r);
    if (most_spilled) *most_spilled = std::max(*most_spilled, index.stats().spilled);
    keys[seq] = r.band_keys;
    while (!keys.empty() && keys.begin()->first < oldest) keys.erase(keys.begin());
    if (seq % 997 == 0) {
      // Every live entry probed with its own keys is found once per band.
      for (const auto& [s, k] : keys) {
        SketchResult own = keyed(0, options.bands, 0);
        own.band_keys = k;
        int visits = 0;
        index.for_each_candidate(own, oldest,
                                 [&](std::uint64_t v, const Sketch&) { visits += v == s; });
        EXPECT_EQ(visits, options.bands) << "entry " << s << " at " << seq;
        if (visits != options.bands) return 0;
      }
    }
    if (seq % 89 != 0) continue;
    SketchResult probe = keyed(0, options.bands, 0);
    for (int b = 0; b < options.bands; ++b)
      probe.band_keys[static_cast<std::size_t>(b)] =
          keyed(rng() % 4000, options.bands, 0).band_keys[static_cast<std::size_t>(b)];
    std::map<std::uint64_t, int> visits;
    index.for_each_candidate(probe, oldest, [&](std::uint64_t s, const Sketch& sketch) {
      EXPECT_GE(s, oldest);
      EXPECT_EQ(sketch.words[0], s) << "the sketch belongs to another entry";
      ++visits[s];
    });
    for (const auto& [s, k] : keys) {
      int shared = 0;
      for (int b = 0; b < options.bands; ++b)
        shared += k[static_cast<std::size_t>(b)] == probe.band_keys[static_cast<std::size_t>(b)];
      if (shared != 0) {
        EXPECT_GE(visits[s], shared)
            << "lost a live candidate's band: entry " << s << " at " << seq;
        if (visits[s] < shared) return 0;
      }
    }
  }
  EXPECT_EQ(index.stats().evictions, 0U);
  return index.stats().bytes;
}

// The tables start small and double three times while this window fills
// (256 -> 2048 buckets per band), each time splitting the buckets; then the
// window slides and offsets wrap (P = 2^14 - 2 at this capacity).
TEST(SketchIndex, GrowingTablesKeepEveryLiveCandidate) {
  constexpr std::size_t kCapacity = 10300;
  const std::size_t small = SketchIndex(SketchOptions{}, kCapacity).stats().bytes;
  const std::size_t full = check_every_band_candidate(kCapacity, 60000, [](std::uint64_t seq) {
    return seq + 1 > kCapacity ? seq + 1 - kCapacity : 0;
  });
  // 3 bands x (2048 - 256) buckets x 64 bytes more than at the start.
  EXPECT_EQ(full - small,
            std::size_t{3} * (2048 - 256) * 64 + kCapacity * 16 + kCapacity / 64 * 8 + 8);
}

// As above with crowded keys: splitting a bucket splits its spill too.
TEST(SketchIndex, GrowingTablesSplitSpillsAndKeepEveryLiveCandidate) {
  constexpr std::size_t kCapacity = 10300;
  std::size_t most_spilled = 0;
  const std::size_t full = check_every_band_candidate(
      kCapacity, 40000,
      [](std::uint64_t seq) { return seq + 1 > kCapacity ? seq + 1 - kCapacity : 0; }, true,
      &most_spilled);
  EXPECT_NE(full, 0U);
  EXPECT_GT(most_spilled, 0U);
}

// A window held small by time until its offsets are about to wrap, then
// filling up: the tables grow to their full size all the same (a dead
// reference is left behind at each split) and lose no live candidate.
TEST(SketchIndex, WindowThatFillsLateLosesNoCandidate) {
  constexpr std::size_t kCapacity = 10300;  // P = 2^14 - 2
  constexpr std::uint64_t kQuietUntil = (1U << 14) - 1000;
  const std::size_t late =
      check_every_band_candidate(kCapacity, 50000, [](std::uint64_t seq) -> std::uint64_t {
        if (seq < kQuietUntil) return seq + 1 > 900 ? seq + 1 - 900 : 0;  // ~900 live entries
        return std::max(kQuietUntil - 900,
                        seq + 1 > kCapacity ? seq + 1 - kCapacity : 0);  // then up to capacity
      });
  ASSERT_NE(late, 0U);
  const std::size_t grown = check_every_band_candidate(kCapacity, 50000, [](std::uint64_t seq) {
    return seq + 1 > kCapacity ? seq + 1 - kCapacity : 0;
  });
  EXPECT_EQ(grown, late);
}

// Keys in one bucket (same top bits, at every table size) but with other bits
// below: the probe passes them without visiting, and still finds the older
// entry with the probe's key.
TEST(SketchIndex, SkipsEntriesThatOnlyShareABucket) {
  SketchOptions options;
  options.bands = 1;
  SketchIndex index(options, 1000);
  const std::uint64_t key = 0xabcd000000000000ULL;
  SketchResult r = keyed(0, 1, 0);
  r.band_keys[0] = key;
  index.insert(1, 1, &r);  // the match, the oldest in the bucket
  for (std::uint64_t seq = 2; seq <= SketchIndex::kBucketEntries; ++seq) {
    r.sketch.words[0] = seq;
    r.band_keys[0] = key | (seq * 0x9e3779b97f4a7c15ULL >> 16);  // same top 16 bits, another key
    index.insert(seq, 1, &r);
  }
  SketchResult probe = r;
  probe.band_keys[0] = key;
  std::vector<std::uint64_t> visited;
  index.for_each_candidate(probe, 1, [&](std::uint64_t s, const Sketch&) { visited.push_back(s); });
  EXPECT_EQ(visited, std::vector<std::uint64_t>{1});
  EXPECT_EQ(index.stats().candidates, 1U);
  EXPECT_EQ(index.stats().evictions, 0U);
}

// The ring holds one sketch per slot whatever the bands: with every band
// count, each live entry keeps its own sketch (both words) and is found by
// its keys, across the ring's wrap.
TEST(SketchIndex, EveryBandCountKeepsEachEntrysSketchAndBands) {
  for (int bands : {0, 1, 2, 5, 8}) {
    SCOPED_TRACE("bands " + std::to_string(bands));
    SketchOptions options;
    options.bands = bands;
    options.band_bins = bands == 0 ? 4 : 64 / bands;
    constexpr std::size_t kCapacity = 37;
    SketchIndex index(options, kCapacity);
    for (std::uint64_t seq = 100; seq < 300; ++seq) {
      const std::uint64_t oldest = seq + 1 > 100 + kCapacity ? seq + 1 - kCapacity : 100;
      const SketchResult r =
          keyed(seq % 3, bands, seq * 0x1234567ULL);  // three keys shared by many entries
      index.insert(seq, oldest, &r);
      for (std::uint64_t live = oldest; live <= seq; ++live) {
        const auto sketch = index.sketch(live, oldest);
        ASSERT_TRUE(sketch.has_value()) << live;
        EXPECT_EQ(*sketch, keyed(0, 0, live * 0x1234567ULL).sketch) << live;
      }
      std::set<std::uint64_t> visited;
      index.for_each_candidate(keyed(seq % 3, bands, 0), oldest,
                               [&](std::uint64_t s, const Sketch& sketch) {
                                 EXPECT_EQ(sketch, keyed(0, 0, s * 0x1234567ULL).sketch) << s;
                                 visited.insert(s);
                               });
      std::set<std::uint64_t> expected;
      for (std::uint64_t live = oldest; live <= seq && bands > 0; ++live)
        if (live % 3 == seq % 3) expected.insert(live);
      EXPECT_EQ(visited, expected) << "at " << seq;
    }
    EXPECT_EQ(index.stats().evictions, 0U);
  }
}

TEST(SketchIndex, SketchOfLiveEntriesOnly) {
  SketchIndex index(SketchOptions{}, 4);
  for (std::uint64_t seq = 10; seq < 20; ++seq) {
    const SketchResult r = keyed(seq, 3, seq);
    index.insert(seq, seq >= 13 ? seq - 3 : 10, &r);
  }
  EXPECT_FALSE(index.sketch(15, 16).has_value());  // evicted
  ASSERT_TRUE(index.sketch(16, 16).has_value());
  EXPECT_EQ(index.sketch(19, 16)->words[0], 19U);
  EXPECT_FALSE(index.sketch(20, 16).has_value());  // not inserted yet
}

// 5,000 live entries share the keys of bands 0 and 2: each of those buckets
// keeps its newest kMaxBucket (15 in its line, the rest in its spill) and
// gives up one entry per later insert; every entry keeps its sketch.
TEST(SketchIndex, ACrowdSharingABandKeyKeepsItsNewestEntries) {
  SketchIndex index(SketchOptions{}, 100000);
  const SketchResult same = keyed(1, 3, 0);
  for (std::uint64_t seq = 0; seq < 5000; ++seq) {
    SketchResult r = same;
    r.sketch.words[0] = seq;
    r.band_keys[1] = (seq + 12345) * 0xbf58476d1ce4e5b9ULL;  // spread; bands 0 and 2 shared by all
    index.insert(seq, 0, &r);
  }
  std::vector<std::uint64_t> visited;
  index.for_each_candidate(same, 0, [&](std::uint64_t s, const Sketch& sk) {
    EXPECT_EQ(sk.words[0], s);
    visited.push_back(s);
  });
  // Newest first; bands 0 and 2 give each entry once.
  std::vector<std::uint64_t> expected;
  for (std::uint64_t s = 4999; s + SketchIndex::kMaxBucket >= 5000; --s)
    expected.insert(expected.end(), {s, s});
  EXPECT_EQ(visited, expected);
  EXPECT_EQ(index.stats().evictions, 2 * (5000 - SketchIndex::kMaxBucket));
  for (std::uint64_t seq = 0; seq < 5000; seq += 499)
    EXPECT_EQ(index.sketch(seq, 0)->words[0], seq);
}

}  // namespace
}  // namespace neardup::dedup
