#include "libsarena/datapath/naming.h"

#include "gtest/gtest.h"

namespace sarena::datapath {
namespace {

TEST(HostVethName, IsLxcPlusElevenHexOfSha256) {
  // Expected value from coreutils: printf abc/eth0 | sha256sum -> 538f587a2365...
  EXPECT_EQ(HostVethName("abc", "eth0"), "lxc538f587a236");
  EXPECT_NE(HostVethName("abc", "eth0"), HostVethName("abc", "eth1"));
  EXPECT_EQ(HostVethName("abc", "eth0"), HostVethName("abc", "eth0"));
}

// Issue 10: without a separator "podA"+"eth0" and "podAe"+"th0" hashed the same string, so one
// pod's DEL deleted the other's veth.
TEST(HostVethName, SplitsOfOneStringDoNotCollide) {
  EXPECT_NE(HostVethName("podA", "eth0"), HostVethName("podAe", "th0"));
  EXPECT_NE(HostVethName("abc1", "0"), HostVethName("abc", "10"));
}

TEST(VethOwnerAlias, NamesTheAttachmentAndFitsIfAliasz) {
  EXPECT_EQ(VethOwnerAlias("abc", "eth0"), "sarena:abc/eth0");
  const std::string long_id(400, 'a');
  const std::string alias = VethOwnerAlias(long_id, "eth0");
  EXPECT_EQ(alias.size(), 255u);
  EXPECT_TRUE(alias.rfind("/eth0") == alias.size() - 5);
}

}  // namespace
}  // namespace sarena::datapath
