#include <gtest/gtest.h>

#include "dedup/core/types.h"

namespace neardup::dedup {

TEST(Fingerprint, HexRoundTrips) {
  Fingerprint fp{0x0123456789abcdefULL};
  EXPECT_EQ(fp.hex(), "0123456789abcdef");
  EXPECT_EQ(Fingerprint::from_hex(fp.hex()), fp);
}

TEST(Fingerprint, RejectsMalformedHex) {
  EXPECT_FALSE(Fingerprint::from_hex("0123"));
  EXPECT_FALSE(Fingerprint::from_hex("0123456789abcdeg"));
}

TEST(Fingerprint, HammingDistanceCountsDifferingBits) {
  EXPECT_EQ(hamming_distance(Fingerprint{0}, Fingerprint{~0ULL}), 64);
  EXPECT_EQ(hamming_distance(Fingerprint{0b1010}, Fingerprint{0b0110}), 2);
}

}  // namespace neardup::dedup
