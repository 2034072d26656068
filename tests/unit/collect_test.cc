// sarena-diag collect, read-only on the test's own network namespace: the files it writes are
// the snapshot formats the model reads back (a round trip), sysctl.txt is `sysctl -a`'s format,
// and --pod specs parse.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "libsarena/collect/collect.h"
#include "libsarena/model/snapshot.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"
#include "tests/lib/diag_testing.h"

namespace sarena::collect {
namespace {

using ::sarena::testing::StatusIs;

TEST(Collect, SysctlFormat) {
  auto text = ReadIpv4Sysctls();
  ASSERT_OK(text);
  std::string prev;
  bool ip_forward = false, all_rp = false;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    ASSERT_TRUE(absl::StartsWith(line, "net.ipv4.") || absl::StartsWith(line, "net.bridge."))
        << line;
    ASSERT_NE(line.find(" = "), absl::string_view::npos) << line;
    std::string key(line.substr(0, line.find(" = ")));
    EXPECT_LT(prev, key) << "sorted";
    prev = key;
    ip_forward |= key == "net.ipv4.ip_forward";
    all_rp |= key == "net.ipv4.conf.all.rp_filter";
  }
  EXPECT_TRUE(ip_forward);
  EXPECT_TRUE(all_rp);
  // Parses with the model's reader and agrees with /proc.
  auto sys = model::Sysctls::Parse(*text);
  ASSERT_OK(sys);
  std::string proc = diag::testing::ReadAll("/proc/sys/net/ipv4/ip_forward");
  EXPECT_EQ(sys->GetInt("net.ipv4.ip_forward"), std::stoll(proc));
  EXPECT_FALSE(ReadIpv4Sysctls("/nonexistent/net/ipv4").ok());
}

TEST(Collect, PodSpec) {
  auto p = ParsePodNetnsSpec("default/web-0=/var/run/netns/cni-1234");
  ASSERT_OK(p);
  EXPECT_EQ(p->namespace_, "default");
  EXPECT_EQ(p->name, "web-0");
  EXPECT_EQ(p->netns, "/var/run/netns/cni-1234");
  for (const char* bad : {"web-0=/x", "default/web-0", "/web=/x", "default/=/x", "a/b="}) {
    EXPECT_FALSE(ParsePodNetnsSpec(bad).ok()) << bad;
  }
}

TEST(Collect, RoundTripThroughTheSnapshotReader) {
  sarena::testing::TempDir dir("sarena-diag-collect-");
  ASSERT_FALSE(dir.path().empty());
  const std::string& out = dir.path();
  CollectOptions opts;
  opts.out_dir = out;
  opts.node = "self";
  opts.sarena_socket = absl::StrCat(out, "/no-such.sock");
  opts.programs = false;
  auto report = Collect(opts);
  ASSERT_OK(report);
  for (const char* f : {"ip-link.json", "ip-addr.json", "ip-route.json", "sysctl.txt"}) {
    bool written = false;
    for (const auto& w : report->written) written |= w == absl::StrCat("nodes/self/", f);
    EXPECT_TRUE(written) << f;
  }
  bool endpoints_skipped = false;
  for (const auto& s : report->skipped) {
    endpoints_skipped |= absl::StrContains(s, "sarena-endpoints.json");
  }
  EXPECT_TRUE(endpoints_skipped);
  ASSERT_OK_AND_ASSIGN(auto snap, model::Snapshot::Open(out));
  ASSERT_OK_AND_ASSIGN(auto node, snap->Node("self"));
  const model::Netstack& ns = node->netstack;
  EXPECT_TRUE(ns.Has(model::NetstackSource::kLinks));
  EXPECT_TRUE(ns.Has(model::NetstackSource::kRoutes));
  EXPECT_TRUE(ns.Has(model::NetstackSource::kSysctls));
  ASSERT_NE(ns.FindInterface("lo"), nullptr);
  EXPECT_TRUE(ns.FindInterface("lo")->loopback);
  EXPECT_TRUE(ns.IsLocalAddress(net::Ipv4(0x7f000001)));

  CollectOptions bad;
  EXPECT_THAT(Collect(bad), StatusIs(absl::StatusCode::kInvalidArgument));
  bad.out_dir = out;
  bad.node_netns = "sarena-diag-no-such-netns";
  EXPECT_THAT(Collect(bad), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace sarena::collect
