// sarenad's command line as an operator meets it: every bad flag or flag value is refused with
// exit status 2 and a message naming the flag and the value, before anything on the node is
// touched (no state directory, no socket, no bpffs directory).
#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/lib/test_util.h"

namespace sarena {
namespace {

using ::testing::HasSubstr;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

TEST(SarenadFlags, BadValuesExitTwoNamingTheFlagAndTouchNothing) {
  const std::string bin = absl::StrCat(sarena::testing::BinaryDir(), "/tools/sarenad");
  const std::string tag = testing::UniqueName("sdf");
  const std::string state = absl::StrCat("/tmp/", tag, "-state");
  const std::string sock = absl::StrCat("/tmp/", tag, ".sock");
  const std::string bpffs = absl::StrCat("/sys/fs/bpf/", tag);
  const std::string common =
      absl::StrCat(" --state-dir ", state, " --socket ", sock, " --bpffs ", bpffs);
  struct Case {
    std::string flags;
    std::string want;
  };
  const Case cases[] = {
      {"--node-ip 10.1.0.1", "--pod-cidr and --node-ip are required"},
      {"--pod-cidr 10.1.0.0/24", "--pod-cidr and --node-ip are required"},
      {"--pod-cidr 10.1.0.0/33 --node-ip 10.1.0.1", "10.1.0.0/33"},
      {"--pod-cidr 10.1.0.0/24 --node-ip 10.1.0.300", "10.1.0.300"},
      {"--pod-cidr 10.1.0.0/24 --node-ip 10.1.0.0", "invalid --node-ip '10.1.0.0'"},
      {"--pod-cidr 10.1.0.0/24 --node-ip 10.1.0.255", "invalid --node-ip '10.1.0.255'"},
      {"--pod-cidr 10.1.0.0/24 --node-ip 10.1.0.1 --attach-mode xdp", "--attach-mode 'xdp'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flags);
    testing::CommandResult r = testing::Run(absl::StrCat(bin, " ", c.flags, common, " 2>&1"));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_THAT(r.out, HasSubstr(c.want));
    EXPECT_FALSE(Exists(state)) << "state directory created for a refused start";
    EXPECT_FALSE(Exists(sock));
    EXPECT_FALSE(Exists(bpffs));
  }
}

}  // namespace
}  // namespace sarena
