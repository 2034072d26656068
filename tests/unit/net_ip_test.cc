// net::ParseIpv4Prefix: the prefix length is a canonical decimal 0..32 (a "/08" or "/+8" is
// refused with the field and the text named, never read as /8).
#include "libsarena/net/ip.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace sarena::net {
namespace {

TEST(ParseIpv4Prefix, LengthIsACanonicalDecimal) {
  auto p = ParseIpv4Prefix("10.0.0.5/8", "--cidr");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->to_string(), "10.0.0.5/8");
  ASSERT_TRUE(ParseIpv4Prefix("0.0.0.0/0").ok());
  ASSERT_TRUE(ParseIpv4Prefix("10.0.0.5").ok());
  for (const char* bad : {"10.0.0.0/08", "10.0.0.0/+8", "10.0.0.0/ 8", "10.0.0.0/33",
                          "10.0.0.0/", "10.0.0.0/-0", "10.0.0.0/8x"}) {
    auto r = ParseIpv4Prefix(bad, "--cidr");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << bad;
    EXPECT_TRUE(absl::StrContains(r.status().message(), "--cidr")) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), bad)) << r.status();
  }
}

}  // namespace
}  // namespace sarena::net
