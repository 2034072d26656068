// libsarena/datapath/drop_trace.h without privileges: the address count is checked before
// anything is loaded, and the kernel's drop reasons are read from its BTF (world-readable
// /sys/kernel/btf/vmlinux). Loading and reading the program: tests/privileged/live_drops_test.cc.
#include "libsarena/datapath/drop_trace.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace sarena::datapath {
namespace {

TEST(DropTraceProgram, AddressCountChecked) {
  // No address means every drop (sarena-diag drops); more than the ABI's 8 is refused.
  auto t = DropTraceProgram::Start(std::vector<net::Ipv4>(kDropTraceMaxAddrs + 1));
  EXPECT_TRUE(absl::IsInvalidArgument(t.status()));
  EXPECT_TRUE(absl::StrContains(t.status().message(), "addrs")) << t.status();
}

TEST(ReadKernelDropReasons, FromKernelBtf) {
  // The running kernel's enum (include/net/dropreason-core.h): NOT_SPECIFIED since 5.17,
  // IP_RPFILTER and NO_SOCKET since 5.17/6.0. Values differ between kernels; names do not.
  absl::StatusOr<std::map<uint32_t, std::string>> names = ReadKernelDropReasons();
  ASSERT_TRUE(names.ok()) << names.status();
  std::map<std::string, uint32_t> by_name;
  for (const auto& [value, name] : *names) by_name.emplace(name, value);
  EXPECT_TRUE(by_name.count("SKB_DROP_REASON_NOT_SPECIFIED"));
  EXPECT_TRUE(by_name.count("SKB_DROP_REASON_IP_RPFILTER"));
  EXPECT_TRUE(by_name.count("SKB_DROP_REASON_NO_SOCKET"));
  EXPECT_GE(names->size(), 3u);
}

}  // namespace
}  // namespace sarena::datapath
