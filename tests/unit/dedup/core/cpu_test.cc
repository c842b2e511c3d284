#include "dedup/core/cpu_testing.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace neardup::dedup::cpu {
namespace {

// Restores the process's variant after a test that changes it.
class Cpu : public ::testing::Test {
 protected:
  void TearDown() override { set_active_for_testing(before_); }
  const Variant before_ = active();
};

std::string message_of(std::string_view value) {
  try {
    parse_choice(value);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST_F(Cpu, PortableIsSupportedEverywhereAndNamesRoundTrip) {
  EXPECT_TRUE(supported(Variant::portable));
  EXPECT_EQ(missing(Variant::portable), "");
  for (const Variant v : kVariants) {
    if (supported(v)) {
      EXPECT_EQ(parse_choice(name(v)), v);
    }
  }
  EXPECT_EQ(name(Variant::portable), "portable");
  EXPECT_EQ(name(Variant::popcnt), "popcnt");
  EXPECT_EQ(name(Variant::avx2), "avx2");
  EXPECT_EQ(name(Variant::avx512bw), "avx512bw");
  EXPECT_EQ(name(Variant::avx512), "avx512");
}

TEST_F(Cpu, BestSupportedIsSupportedAndNothingBetterIs) {
  const Variant best = best_supported();
  EXPECT_TRUE(supported(best));
  for (const Variant v : kVariants) {
    if (v > best) {
      EXPECT_FALSE(supported(v)) << name(v);
    }
  }
}

TEST_F(Cpu, ActiveIsTheBestUnlessNeardupCpuForcesOne) {
  const char* forced = std::getenv("NEARDUP_CPU");
  if (forced != nullptr && *forced != '\0') {
    EXPECT_EQ(name(before_), forced);
  } else {
    EXPECT_EQ(before_, best_supported());
  }
}

TEST_F(Cpu, UnknownChoiceNamesEveryVariantAndTheAvailableOnes) {
  const std::string message = message_of("sse4");
  EXPECT_NE(message.find("NEARDUP_CPU=sse4: unknown CPU variant"), std::string::npos) << message;
  EXPECT_NE(message.find("portable, popcnt, avx2, avx512bw, avx512"), std::string::npos) << message;
  EXPECT_NE(message.find("this machine runs: portable"), std::string::npos) << message;
  EXPECT_NE(message_of("AVX512"), "") << "names are exact";
  EXPECT_NE(message_of("avx512b"), "") << "names are exact";
  EXPECT_NE(message_of(""), "");
}

TEST_F(Cpu, UnsupportedChoiceSaysWhatIsMissing) {
  bool any = false;
  for (const Variant v : kVariants) {
    if (supported(v)) continue;
    any = true;
    const std::string message = message_of(name(v));
    EXPECT_NE(message.find(missing(v)), std::string::npos) << message;
    EXPECT_NE(message.find("choose one this machine runs: portable"), std::string::npos) << message;
    EXPECT_THROW(set_active_for_testing(v), std::invalid_argument);
  }
  if (!any) GTEST_SKIP() << "this build and CPU support every variant";
}

TEST_F(Cpu, SetActiveForTestingSwitchesEveryKernelCaller) {
  for (const Variant v : kVariants) {
    if (!supported(v)) continue;
    set_active_for_testing(v);
    EXPECT_EQ(active(), v);
  }
}

#if defined(NEARDUP_PORTABLE)
TEST_F(Cpu, PortableBuildHasOnlyThePortableVariant) {
  EXPECT_EQ(NEARDUP_X86_KERNELS, 0);
  EXPECT_EQ(best_supported(), Variant::portable);
  EXPECT_EQ(missing(Variant::avx512), "not in this build (NEARDUP_PORTABLE)");
}
#endif

}  // namespace
}  // namespace neardup::dedup::cpu
