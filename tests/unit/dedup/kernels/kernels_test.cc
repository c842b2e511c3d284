// Every CPU-specific kernel (dedup/core/cpu.h, dedup/kernels/kernels.h) against the portable
// one: each test runs once per variant, computes its results under that variant
// and under portable, and expects them identical. A variant this build or CPU
// cannot run is reported as skipped, with what it lacks. Then the table itself:
// which kernels each variant's row holds, and that the active row follows
// cpu::active().
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dedup/core/cpu_testing.h"
#include "dedup/engine/engine.h"
#include "dedup/fingerprint/simhash.h"
#include "dedup/fingerprint/sketch.h"
#include "dedup/index/index.h"
#include "dedup/kernels/kernels.h"
#include "dedup/text/normalize.h"

namespace neardup::dedup {
namespace cpu {
// gtest prints a failing test's variant by name.
void PrintTo(Variant variant, std::ostream* out) { *out << name(variant); }
}  // namespace cpu

namespace {

class EveryVariant : public ::testing::TestWithParam<cpu::Variant> {
 protected:
  void SetUp() override {
    const std::string lacks = cpu::missing(GetParam());
    if (!lacks.empty()) GTEST_SKIP() << "variant " << cpu::name(GetParam()) << ": " << lacks;
  }
  void TearDown() override { cpu::set_active_for_testing(before_); }

  // What `compute` returns under the tested variant, then under portable.
  template <class F>
  std::pair<std::invoke_result_t<F&>, std::invoke_result_t<F&>> both(F&& compute) {
    cpu::set_active_for_testing(GetParam());
    auto tested = compute();
    cpu::set_active_for_testing(cpu::Variant::portable);
    auto portable = compute();
    return {std::move(tested), std::move(portable)};
  }

  const cpu::Variant before_ = cpu::active();
};

std::string variant_name(const ::testing::TestParamInfo<cpu::Variant>& variant) {
  return std::string(cpu::name(variant.param));
}
INSTANTIATE_TEST_SUITE_P(Cpu, EveryVariant, ::testing::ValuesIn(cpu::kVariants), variant_name);

// A residue within a few bits of the probe, or anywhere.
std::uint32_t near_or_random(std::uint32_t probe, std::mt19937_64& rng) {
  if (rng() % 2 == 0) return static_cast<std::uint32_t>(rng());
  std::uint32_t r =
      probe ^ (static_cast<std::uint32_t>(rng()) & 0xff000000U);  // bits the cell drops
  for (std::uint64_t flips = rng() % 7; flips != 0; --flips) r ^= 1U << (rng() % 24);
  return r;
}

TEST_P(EveryVariant, IndexFiltersFindTheCellsWithinKOfTheProbe) {
  // A bucket within its slot is read by the packed 24-bit filter; one past it
  // spills to a ring of 32-bit residues, read by the other filter. Slots sized
  // for a large window hold every size here; for a tiny one, almost none.
  // Sizes around the 16-lane steps and the 256-cell chunks, every k the filters see.
  const PigeonholeLayout layout(1, 0, 64);
  for (const std::size_t expected : {std::size_t{1} << 20, std::size_t{64}}) {
    for (const std::uint32_t size :
         {0U, 1U, 2U, 15U, 16U, 17U, 31U, 33U, 63U, 255U, 256U, 257U, 600U, 1100U}) {
      std::mt19937_64 rng(size);
      const std::uint32_t probe = static_cast<std::uint32_t>(rng());
      std::vector<std::uint32_t> residues(size);
      for (auto& r : residues) r = near_or_random(probe, rng);
      for (const int k : {0, 1, 2, 3, 5, 8, 12, 24}) {
        auto scan = [&] {
          CellTables cells(layout, expected);
          CellTables::Bucket& b = cells.bucket(0, 0);
          for (std::uint32_t i = 0; i < size; ++i) cells.push(b, residues[i], i);
          std::vector<std::uint32_t> hits;
          const std::uint32_t examined = cells.scan(b, probe, k, [&](std::uint32_t seq) {
            hits.push_back(seq);
            return false;
          });
          std::uint32_t seen = 0;  // stopping at the third hit
          const std::uint32_t stopped =
              cells.scan(b, probe, k, [&](std::uint32_t) { return ++seen == 3; });
          return std::tuple(hits, examined, stopped, b.spill != 0, cells.slot_cells());
        };
        const auto [tested, portable] = both(scan);
        const std::string where = "slots for " + std::to_string(expected) + ", size " +
                                  std::to_string(size) + ", k " + std::to_string(k);
        EXPECT_EQ(tested, portable) << where;
        std::vector<std::uint32_t> want;
        for (std::uint32_t i = 0; i < size; ++i) {
          if (std::popcount((residues[i] ^ probe) & CellTables::kResidueMask) <= k)
            want.push_back(i);
        }
        EXPECT_EQ(std::get<0>(tested), want) << where;
        EXPECT_EQ(std::get<1>(tested), size) << where;
        const std::uint32_t slot = std::get<4>(tested);
        EXPECT_EQ(std::get<3>(tested), size > slot) << where << ": spilled past a slot of " << slot;
        if (expected != 64) {
          EXPECT_GE(slot, 1100U) << "every size fits the slot";
        }
      }
    }
  }
}

TEST_P(EveryVariant, FiltersMatchPortableAtEverySizeAndKReadingNoFurtherThanAllowed) {
  // The kernels directly, on buffers exactly as large as their contracts
  // allow (filter24: 3n bytes and one more; filter: n words), so the ASan
  // build reports a read past them. Every n from 0 to 257 (each tail of every
  // vector width) and k from 0 to 8, with residues near the probe so that
  // hits come in every lane.
  std::mt19937_64 rng(23);
  for (std::uint32_t n = 0; n <= 257; ++n) {
    const std::uint32_t probe = static_cast<std::uint32_t>(rng()) & CellTables::kResidueMask;
    std::vector<std::uint32_t> wide(n);
    for (auto& r : wide) r = near_or_random(probe, rng);
    std::vector<std::uint8_t> packed(3 * std::size_t{n} + 1);
    for (std::uint32_t i = 0; i < n; ++i)
      for (int b = 0; b < 3; ++b) packed[3 * i + b] = static_cast<std::uint8_t>(wide[i] >> (8 * b));
    packed.back() = static_cast<std::uint8_t>(rng());  // the byte the contract lets it read
    // The 32-bit filter reads res[0, n) exactly: a new allocation of n words.
    const auto words = std::make_unique<std::uint32_t[]>(n);
    std::copy(wide.begin(), wide.end(), words.get());
    for (int k = 0; k <= 8; ++k) {
      const auto [tested, portable] = both([&] {
        std::vector<std::uint16_t> hits24(std::max<std::uint32_t>(n, 1)), hits(hits24.size());
        hits24.resize(kernels::active().filter24(packed.data(), n, probe, k, hits24.data()));
        hits.resize(kernels::active().filter(words.get(), n, probe, k, hits.data()));
        return std::pair(hits24, hits);
      });
      ASSERT_EQ(tested, portable) << "n " << n << ", k " << k;
      std::vector<std::uint16_t> want;
      for (std::uint32_t i = 0; i < n; ++i)
        if (std::popcount((wide[i] & CellTables::kResidueMask) ^ probe) <= k)
          want.push_back(static_cast<std::uint16_t>(i));
      ASSERT_EQ(tested.first, want) << "filter24, n " << n << ", k " << k;
    }
  }
}

TEST_P(EveryVariant, SimhashSumsTheSameBits) {
  // Up to past two accumulate chunks (16384 features), random and extreme weights.
  std::mt19937_64 rng(7);
  for (const std::size_t n :
       {0UL, 1UL, 2UL, 7UL, 64UL, 1000UL, 16383UL, 16384UL, 16385UL, 40000UL}) {
    std::vector<std::uint64_t> hashes(n);
    std::vector<std::uint32_t> weights(n);
    for (std::size_t i = 0; i < n; ++i) {
      hashes[i] = rng();
      weights[i] = i % 5 == 0 ? kMaxWeight : 1 + static_cast<std::uint32_t>(rng() % kMaxWeight);
    }
    if (n > 2) hashes[1] = ~std::uint64_t{0}, hashes[2] = 0;
    const auto [tested, portable] =
        both([&] { return std::pair(simhash(hashes, weights), simhash(hashes)); });
    EXPECT_EQ(tested.first, portable.first) << "weighted, n " << n;
    EXPECT_EQ(tested.second, portable.second) << "unit, n " << n;
  }
}

std::string random_text(std::mt19937_64& rng, bool ascii) {
  static const std::vector<std::string> separators = {" ",  ", ",  ". ", " - ", "\n",
                                                      "  ", "!? ", "(",  ") ",  "#"};
  static const std::vector<std::string> other = {"\xc3\xa9t\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87",
                                                 "na\xc3\xafve", "\xe2\x80\x94"};
  std::string text;
  if (rng() % 3 == 0) text += separators[rng() % separators.size()];
  for (std::size_t words = rng() % 60; words != 0; --words) {
    const std::size_t n = 1 + (rng() % 12 == 0 ? rng() % 90 : rng() % 9);
    for (std::size_t i = 0; i < n; ++i) {
      const auto c = rng() % 40;
      text += static_cast<char>(c < 26 ? 'a' + c : c < 36 ? '0' + (c - 26) : 'A' + c);
    }
    if (!ascii && rng() % 6 == 0) text += other[rng() % other.size()];
    text += separators[rng() % separators.size()];
  }
  return text;
}

TEST_P(EveryVariant, SketchJoinsAndHashesTheSameShingles) {
  // ASCII texts take the join + window-hash kernels; the rest, the general path.
  std::mt19937_64 rng(3);
  Normalizer normalizer;
  int ascii = 0;
  for (int round = 0; round < 400; ++round) {
    const std::string text = random_text(rng, round % 4 != 0);
    const NormalizedText norm = normalizer.run(text);
    ascii += norm.ascii;
    for (const int bits : {1, 2, 4, 8}) {
      SketchOptions options;
      options.bits = bits;
      const auto [tested, portable] = both([&] {
        Sketcher sketcher(options);
        const SketchResult r = sketcher.run(norm);
        return std::tuple(sketcher.shingle_hashes(norm), r.sketch.words, r.band_keys, r.shingles);
      });
      ASSERT_EQ(tested, portable) << "bits " << bits << ": " << text;
    }
  }
  EXPECT_GT(ascii, 100) << "texts that take the ASCII kernels";
}

TEST_P(EveryVariant, SketchDensifiesTheSame) {
  // Every bin count, fills from every bin empty to every bin filled.
  std::mt19937_64 rng(13);
  for (const int bins : {16, 32, 64, 128}) {
    for (int round = 0; round < 400; ++round) {
      std::vector<std::uint32_t> minima(static_cast<std::size_t>(bins));
      const auto fill = static_cast<std::uint64_t>(round % 21);  // in 20ths
      for (auto& m : minima)
        m = rng() % 20 < fill ? static_cast<std::uint32_t>(rng() % 0xfffffff0U) : detail::kEmptyBin;
      const auto [tested, portable] = both([&] {
        std::vector<std::uint32_t> out = minima;
        kernels::active().densify(out.data(), bins);
        return out;
      });
      ASSERT_EQ(tested, portable) << bins << " bins, fill " << fill << "/20";
    }
  }
}

TEST_P(EveryVariant, RecentTextsSortTheSameShingles) {
  // Every count from 1 to 128, with repeats (a text's shingles repeat) and
  // values that differ only above bit 32 or at its edges.
  std::mt19937_64 rng(19);
  for (std::size_t count = 1; count <= kMaxExactShingles; ++count) {
    for (int round = 0; round < 4; ++round) {
      std::vector<std::uint64_t> hashes(count);
      for (auto& h : hashes) {
        switch (rng() % 5) {
          case 0:
            h = hashes[rng() % count];  // a repeat (or a zero not yet set)
            break;
          case 1:
            h = (rng() << 32) | 0xffffffffU;
            break;
          case 2:
            h = rng() << 32;  // low 32 bits zero
            break;
          default:
            h = rng();
        }
      }
      const auto [tested, portable] = both([&] {
        std::vector<std::uint32_t> out(kMaxExactShingles);
        out.resize(kernels::active().sort_low32(hashes.data(), count, out.data()));
        return out;
      });
      ASSERT_EQ(tested, portable) << count << " hashes";
      ASSERT_TRUE(std::is_sorted(portable.begin(), portable.end()));
      ASSERT_EQ(std::adjacent_find(portable.begin(), portable.end()), portable.end());
    }
  }
}

TEST_P(EveryVariant, EngineGivesTheSameVerdicts) {
  // Everything together: originals, edited copies, short and long, with and
  // without the sketch stage.
  std::mt19937_64 rng(11);
  std::vector<std::string> texts;
  for (int i = 0; i < 600; ++i) {
    if (i > 10 && rng() % 3 == 0) {
      std::string copy = texts[rng() % texts.size()];
      for (int edits = static_cast<int>(rng() % 4); edits != 0 && !copy.empty(); --edits)
        copy[rng() % copy.size()] = static_cast<char>('a' + rng() % 26);
      texts.push_back(copy);
    } else {
      texts.push_back(random_text(rng, i % 5 != 0));
    }
  }
  for (const bool sketch : {true, false}) {
    DedupOptions options;
    options.sketch.enabled = sketch;
    const auto [tested, portable] = both([&] {
      Engine engine(options);
      std::vector<std::tuple<VerdictKind, std::uint64_t, std::uint64_t, int, double>> verdicts;
      std::int64_t now = 1'700'000'000'000;
      std::uint64_t ref = 0;
      for (const auto& text : texts) {
        const Verdict v = engine.process(text, EventTime{now += 1000}, RecordRef{++ref});
        verdicts.emplace_back(v.kind, v.fingerprint.bits, v.match ? v.match->of.value : 0,
                              v.match ? v.match->distance : -1, v.similarity.value_or(-1));
      }
      return verdicts;
    });
    EXPECT_EQ(tested, portable) << "sketch " << sketch;
  }
}

const kernels::Kernels& row(cpu::Variant variant) {
  return kernels::kByVariant.at(static_cast<std::size_t>(variant));
}

TEST(KernelTable, EveryRowHasEveryKernel) {
  for (const cpu::Variant v : cpu::kVariants) {
    const kernels::Kernels& k = row(v);
    EXPECT_NE(k.filter, nullptr) << cpu::name(v);
    EXPECT_NE(k.filter24, nullptr) << cpu::name(v);
    EXPECT_NE(k.simhash_unit, nullptr) << cpu::name(v);
    EXPECT_NE(k.simhash_weighted, nullptr) << cpu::name(v);
    EXPECT_NE(k.join_ascii, nullptr) << cpu::name(v);
    EXPECT_NE(k.hash_windows, nullptr) << cpu::name(v);
    EXPECT_NE(k.densify, nullptr) << cpu::name(v);
    EXPECT_NE(k.sort_low32, nullptr) << cpu::name(v);
  }
}

TEST(KernelTable, ActiveIsTheRowOfTheActiveVariant) {
  const cpu::Variant before = cpu::active();
  EXPECT_EQ(&kernels::active(), &row(before));
  for (const cpu::Variant v : cpu::kVariants) {
    if (!cpu::supported(v)) continue;
    cpu::set_active_for_testing(v);
    EXPECT_EQ(&kernels::active(), &row(v)) << cpu::name(v);
  }
  cpu::set_active_for_testing(before);
}

TEST(KernelTable, EachRowHoldsItsVariantsKernels) {
  const kernels::Kernels& portable = row(cpu::Variant::portable);
  EXPECT_EQ(portable.filter, &kernels::filter_portable);
  EXPECT_EQ(portable.filter24, &kernels::filter24_portable);
  EXPECT_EQ(portable.simhash_unit, &kernels::accumulate_unit);
  EXPECT_EQ(portable.simhash_weighted, &kernels::accumulate_weighted);
  EXPECT_EQ(portable.join_ascii, &detail::join_ascii_tokens);
  EXPECT_EQ(portable.hash_windows, &kernels::hash_windows);
  EXPECT_EQ(portable.densify, &detail::densify);
  EXPECT_EQ(portable.sort_low32, &detail::sort_low32);
#if NEARDUP_X86_KERNELS
  const kernels::Kernels& popcnt = row(cpu::Variant::popcnt);
  EXPECT_EQ(popcnt.filter, &kernels::filter_popcnt);
  EXPECT_EQ(popcnt.filter24, &kernels::filter24_popcnt);
  EXPECT_EQ(popcnt.simhash_unit, portable.simhash_unit);  // no kernels of its own there
  EXPECT_EQ(popcnt.join_ascii, portable.join_ascii);
  const kernels::Kernels& avx512 = row(cpu::Variant::avx512);
  EXPECT_EQ(avx512.filter, &kernels::filter_avx512);
  EXPECT_EQ(avx512.filter24, &kernels::filter24_avx512);
  EXPECT_EQ(avx512.simhash_unit, &kernels::accumulate_unit_avx512);
  EXPECT_EQ(avx512.simhash_weighted, &kernels::accumulate_weighted_avx512);
  EXPECT_NE(avx512.join_ascii, portable.join_ascii);
  EXPECT_EQ(avx512.hash_windows, &kernels::hash_windows_avx512);
  EXPECT_EQ(avx512.densify, &kernels::densify_avx512);
  EXPECT_EQ(avx512.sort_low32, &kernels::sort_low32_avx512);
  const kernels::Kernels& avx2 = row(cpu::Variant::avx2);
  EXPECT_EQ(avx2.filter, &kernels::filter_avx2);
  EXPECT_EQ(avx2.filter24, &kernels::filter24_avx2);
  EXPECT_EQ(avx2.simhash_unit, &kernels::accumulate_unit_avx2);
  EXPECT_EQ(avx2.simhash_weighted, &kernels::accumulate_weighted_avx2);
  EXPECT_EQ(avx2.hash_windows, portable.hash_windows);
  const kernels::Kernels& avx512bw = row(cpu::Variant::avx512bw);
  EXPECT_EQ(avx512bw.filter, &kernels::filter_avx512bw);
  EXPECT_EQ(avx512bw.filter24, &kernels::filter24_avx512bw);
  EXPECT_EQ(avx512bw.simhash_unit, &kernels::accumulate_unit_avx512);
  EXPECT_EQ(avx512bw.hash_windows, &kernels::hash_windows_avx512bw);
  EXPECT_EQ(avx512bw.sort_low32, &kernels::sort_low32_avx512);
#else
  // Without x86 kernels every row is portable's (and cpu::supported() picks none but it).
  for (const cpu::Variant v : cpu::kVariants) {
    EXPECT_EQ(row(v).filter, portable.filter) << cpu::name(v);
    EXPECT_EQ(row(v).filter24, portable.filter24) << cpu::name(v);
    EXPECT_EQ(row(v).simhash_unit, portable.simhash_unit) << cpu::name(v);
    EXPECT_EQ(row(v).simhash_weighted, portable.simhash_weighted) << cpu::name(v);
    EXPECT_EQ(row(v).join_ascii, portable.join_ascii) << cpu::name(v);
    EXPECT_EQ(row(v).hash_windows, portable.hash_windows) << cpu::name(v);
  }
#endif
}

}  // namespace
}  // namespace neardup::dedup
