// sarena::ParseCanonicalUint: the one way a decimal number is written ("%u"), so a port "080" or
// "+80" is refused with the value named by the caller instead of silently read as 80.
#include "libsarena/base/numbers.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace sarena {
namespace {

TEST(ParseCanonicalUint, AcceptsExactlyTheCanonicalSpelling) {
  EXPECT_EQ(ParseCanonicalUint("0", 65535), 0u);
  EXPECT_EQ(ParseCanonicalUint("80", 65535), 80u);
  EXPECT_EQ(ParseCanonicalUint("65535", 65535), 65535u);
  EXPECT_EQ(ParseCanonicalUint("32", 32), 32u);
  EXPECT_EQ(ParseCanonicalUint("18446744073709551615", std::numeric_limits<uint64_t>::max()),
            std::numeric_limits<uint64_t>::max());
  for (const char* bad : {"", "080", "00", "+80", "-0", "-1", " 80", "80 ", "8 0", "8_0", "0x50",
                          "80.0", "1e2", "６"}) {
    EXPECT_EQ(ParseCanonicalUint(bad, 65535), std::nullopt) << "'" << bad << "'";
  }
}

TEST(ParseCanonicalUint, RefusesValuesAboveMaxWithoutOverflow) {
  EXPECT_EQ(ParseCanonicalUint("65536", 65535), std::nullopt);
  EXPECT_EQ(ParseCanonicalUint("33", 32), std::nullopt);
  EXPECT_EQ(ParseCanonicalUint("1", 0), std::nullopt);
  EXPECT_EQ(ParseCanonicalUint("0", 0), 0u);
  EXPECT_EQ(ParseCanonicalUint("18446744073709551616", std::numeric_limits<uint64_t>::max()),
            std::nullopt);  // 2^64
  EXPECT_EQ(ParseCanonicalUint("99999999999999999999", std::numeric_limits<uint64_t>::max()),
            std::nullopt);
  EXPECT_EQ(ParseCanonicalUint("123456789012345678901", std::numeric_limits<uint64_t>::max()),
            std::nullopt);  // 21 digits
}

}  // namespace
}  // namespace sarena
