#include "libsarena/datapath/naming.h"

#include "gtest/gtest.h"

namespace sarena::datapath {
namespace {

TEST(HostVethName, IsLxcPlusElevenHexOfSha256) {
  // Expected value from coreutils: printf abceth0 | sha256sum -> a06d7003e199...
  EXPECT_EQ(HostVethName("abc", "eth0"), "lxca06d7003e19");
  EXPECT_NE(HostVethName("abc", "eth0"), HostVethName("abc", "eth1"));
  EXPECT_EQ(HostVethName("abc", "eth0"), HostVethName("abc", "eth0"));
}

}  // namespace
}  // namespace sarena::datapath
