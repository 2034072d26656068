// Privileged tests of sarena::nl sysctl access inside network namespaces the test creates. The
// root namespace's values are only read, and each test checks they did not change.

// Options structs are filled with designated initializers (docs/architecture.md "Conventions");
// omitted members keep their defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/netlink/netns.h"
#include "libsarena/netlink/socket.h"
#include "libsarena/netlink/sysctl.h"
#include "tests/lib/test_util.h"

namespace sarena::nl {
namespace {

using ::sarena::testing::RunOk;
using ::sarena::testing::ScopedNetns;
using ::sarena::testing::UniqueName;
using ::testing::HasSubstr;

std::string Trim(const std::string& s) { return std::string(absl::StripAsciiWhitespace(s)); }

class NetlinkSysctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::IsRoot()) << "privileged tests must run as root (they never skip)";
  }
};

TEST_F(NetlinkSysctlTest, SetInsideNetnsLeavesRootUnchanged) {
  ScopedNetns ns("nsy");
  absl::StatusOr<Netns> target = Netns::Open(ns.name());
  ASSERT_TRUE(target.ok());

  const std::string key = "net.ipv4.conf.all.rp_filter";
  absl::StatusOr<std::string> root_before = GetSysctl(key);  // our (root) namespace: read only
  ASSERT_TRUE(root_before.ok()) << root_before.status();
  const std::string want = *root_before == "1" ? "2" : "1";

  ASSERT_TRUE(SetSysctl(*target, key, want).ok());
  absl::StatusOr<std::string> inside = GetSysctl(*target, key);
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_EQ(*inside, want);
  // The same file read by another program inside the namespace.
  EXPECT_EQ(Trim(RunOk(ns.Exec("cat /proc/sys/net/ipv4/conf/all/rp_filter"))), want);
  // Root unchanged, through us and through another program in our namespace.
  EXPECT_EQ(*GetSysctl(key), *root_before);
  EXPECT_EQ(Trim(RunOk("cat /proc/sys/net/ipv4/conf/all/rp_filter")), *root_before);

  // ip_forward, slash form.
  ASSERT_TRUE(SetSysctl(*target, "net/ipv4/ip_forward", "1").ok());
  EXPECT_EQ(*GetSysctl(*target, "net.ipv4.ip_forward"), "1");
  ASSERT_TRUE(SetSysctl(*target, "/proc/sys/net/ipv4/ip_forward", "0").ok());
  EXPECT_EQ(Trim(RunOk(ns.Exec("cat /proc/sys/net/ipv4/ip_forward"))), "0");
}

TEST_F(NetlinkSysctlTest, NetnsByPidPathAndPerInterfaceKeys) {
  ScopedNetns ns("nsp");
  std::string pid_text = RunOk(ns.Exec("sh -c 'sleep 60 >/dev/null 2>&1 & echo $!'"));
  int pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(Trim(pid_text), &pid)) << pid_text;
  absl::Cleanup kill_sleep = [pid] { sarena::testing::Run(absl::StrCat("kill -9 ", pid)); };
  absl::StatusOr<Netns> target = Netns::Open(absl::StrCat("/proc/", pid, "/ns/net"));
  ASSERT_TRUE(target.ok()) << target.status();

  // An interface whose name has a dot needs the slash form of the key.
  absl::StatusOr<Socket> sock = Socket::OpenIn(*target);
  ASSERT_TRUE(sock.ok());
  const std::string dotted = UniqueName("d.", 12);
  ASSERT_TRUE(sock->CreateVeth({.name = dotted, .peer_name = UniqueName("dp")}).ok());
  const std::string key = absl::StrCat("net/ipv4/conf/", dotted, "/rp_filter");
  ASSERT_TRUE(SetSysctl(*target, key, "2").ok());
  EXPECT_EQ(*GetSysctl(*target, key), "2");
  EXPECT_EQ(Trim(RunOk(ns.Exec(absl::StrCat("cat /proc/sys/", key)))), "2");
  // That interface does not exist in the root namespace.
  absl::StatusOr<std::string> absent = GetSysctl(key);
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound) << absent.status();

  ASSERT_TRUE(SetSysctl(*target, absl::StrCat("net/ipv4/conf/", dotted, "/forwarding"), "1").ok());
  EXPECT_EQ(*GetSysctl(*target, absl::StrCat("net/ipv4/conf/", dotted, "/forwarding")), "1");
}

TEST_F(NetlinkSysctlTest, ErrorsNameTheKey) {
  ScopedNetns ns("nse");
  absl::StatusOr<Netns> target = Netns::Open(ns.name());
  ASSERT_TRUE(target.ok());
  absl::StatusOr<std::string> missing = GetSysctl(*target, "net.ipv4.conf.nosuchdev0.rp_filter");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("read sysctl 'net.ipv4.conf.nosuchdev0.rp_filter'"));
  absl::Status set_missing = SetSysctl(*target, "net.ipv4.no_such_knob", "1");
  EXPECT_EQ(set_missing.code(), absl::StatusCode::kNotFound) << set_missing;
  EXPECT_THAT(std::string(set_missing.message()), HasSubstr("net.ipv4.no_such_knob"));
  // The kernel rejects a non-number.
  absl::Status bad_value = SetSysctl(*target, "net.ipv4.ip_forward", "banana");
  EXPECT_EQ(bad_value.code(), absl::StatusCode::kInvalidArgument) << bad_value;
  EXPECT_THAT(std::string(bad_value.message()), HasSubstr("write sysctl 'net.ipv4.ip_forward'"));
  // Keys that try to leave /proc/sys.
  EXPECT_EQ(GetSysctl("net/../../etc/passwd").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GetSysctl("").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sarena::nl
