// diag::JoinEvidence and CodeExplainsDrop: the kernel's drop evidence of a --live probe joined to
// the hops of a real trace (the RPF-05 case: node-a -> 10.32.2.7:80 over ipip, dropped by strict
// rp_filter on node-b's tun-nodea), for each outcome: agreed, mismatch, kernel_only (a drop where
// the model forwards, an ARP drop, a namespace outside the snapshot), model_only, and a send that
// failed at the origin.
#include "libsarena/diag/evidence.h"

#include <algorithm>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "libsarena/diag/codes.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/query.h"
#include "libsarena/diag/report.h"
#include "libsarena/diag/walk.h"
#include "libsarena/model/snapshot.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using Outcome = EvidenceItem::Outcome;

// The drop reasons are a column of the codes list: each is a bare enum skb_drop_reason name
// (no prefix, no stray separator), no code names one twice, and the codes whose mechanism is a
// drop the kernel names carry some.
TEST(CodeExplainsDrop, DropReasonsColumnIsWellFormed) {
  size_t with_reasons = 0;
  for (const SuspicionCode& c : AllSuspicionCodes()) {
    std::vector<absl::string_view> reasons = DropReasonsOf(c);
    if (!reasons.empty()) ++with_reasons;
    std::set<absl::string_view> seen;
    for (absl::string_view r : reasons) {
      EXPECT_FALSE(absl::StartsWith(r, "SKB_DROP_REASON_")) << c.code << ": " << r;
      EXPECT_TRUE(!r.empty() && std::all_of(r.begin(), r.end(), [](char ch) {
        return (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
      })) << c.code << ": '" << r << "'";
      EXPECT_TRUE(seen.insert(r).second) << c.code << " names " << r << " twice";
      EXPECT_TRUE(CodeExplainsDrop(c.code, absl::StrCat("SKB_DROP_REASON_", r))) << c.code;
    }
  }
  EXPECT_GE(with_reasons, 25u);
  for (absl::string_view code : {"rp_filter_drop", "no_route", "netfilter_drop", "link_down",
                                 "neighbor_missing", "mtu_mismatch", "tunnel_missing"}) {
    const SuspicionCode* c = FindSuspicionCode(code);
    ASSERT_NE(c, nullptr) << code;
    EXPECT_FALSE(DropReasonsOf(*c).empty()) << code;
  }
}

TEST(CodeExplainsDrop, KnownPairsAndPrefix) {
  EXPECT_TRUE(CodeExplainsDrop("rp_filter_drop", "SKB_DROP_REASON_IP_RPFILTER"));
  EXPECT_TRUE(CodeExplainsDrop("rp_filter_drop", "IP_RPFILTER"));
  EXPECT_TRUE(CodeExplainsDrop("netfilter_drop", "SKB_DROP_REASON_NETFILTER_DROP"));
  EXPECT_TRUE(CodeExplainsDrop("no_route", "SKB_DROP_REASON_IP_INNOROUTES"));  // ip_error ENETUNREACH
  EXPECT_TRUE(CodeExplainsDrop("not_listening", "SKB_DROP_REASON_NO_SOCKET"));
  EXPECT_TRUE(CodeExplainsDrop("neighbor_missing", "SKB_DROP_REASON_NEIGH_FAILED"));
  EXPECT_FALSE(CodeExplainsDrop("rp_filter_drop", "SKB_DROP_REASON_NETFILTER_DROP"));
  EXPECT_FALSE(CodeExplainsDrop("netfilter_drop", "SKB_DROP_REASON_IP_RPFILTER"));
  EXPECT_FALSE(CodeExplainsDrop("no_such_code", "SKB_DROP_REASON_IP_RPFILTER"));
}

// Reasons tests/privileged/diag_diff_test.sh saw the kernel use (6.18), each from the kernel
// function evidence.cc's table names.
TEST(CodeExplainsDrop, ReasonsSeenInTheDifferentialSuite) {
  EXPECT_TRUE(CodeExplainsDrop("service_no_endpoints", "SKB_DROP_REASON_IP_INNOROUTES"));
  EXPECT_TRUE(CodeExplainsDrop("link_down", "SKB_DROP_REASON_NEIGH_FAILED"));
  EXPECT_TRUE(CodeExplainsDrop("link_down", "SKB_DROP_REASON_IP_INNOROUTES"));
  EXPECT_TRUE(CodeExplainsDrop("route_mismatch", "SKB_DROP_REASON_NEIGH_FAILED"));
  EXPECT_TRUE(CodeExplainsDrop("mtu_mismatch", "SKB_DROP_REASON_NOT_SPECIFIED"));
  EXPECT_TRUE(CodeExplainsDrop("neighbor_stale", "SKB_DROP_REASON_OTHERHOST"));
  EXPECT_FALSE(CodeExplainsDrop("neighbor_stale", "SKB_DROP_REASON_NEIGH_FAILED"));
  EXPECT_FALSE(CodeExplainsDrop("route_mismatch", "SKB_DROP_REASON_NETFILTER_DROP"));
}

class JoinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto snap = model::Snapshot::Open(testing::CaseDir("RPF-05"));
    ASSERT_TRUE(snap.ok()) << snap.status();
    snap_ = std::move(*snap);
    auto q = ParseQuery("node:node-a", "10.32.2.7:80/tcp");
    ASSERT_TRUE(q.ok()) << q.status();
    q->sport = 40000;
    auto plugin = SelectPlugin("auto", *snap_, {});
    ASSERT_TRUE(plugin.ok()) << plugin.status();
    auto r = Trace(*snap_, *q, **plugin);
    ASSERT_TRUE(r.ok()) << r.status();
    graph_ = std::move(r->graph);
    ev_.probe.result = "timeout";
    ev_.probe.place = "node:node-a";
    ev_.probe.packets = 1;
    ev_.probe.sport = 40000;
  }
  model::KernelDrop Drop(std::string reason, std::string place, std::string node,
                         std::string device) {
    model::KernelDrop k;
    k.reason = std::move(reason);
    k.place = std::move(place);
    k.node = std::move(node);
    k.device = std::move(device);
    k.proto = model::kProtoTcp;
    k.src = net::Ipv4::from_string("192.168.10.10");
    k.dst = net::Ipv4::from_string("10.32.2.7");
    k.sport = 40000;
    k.dport = 80;
    k.tcp_flags = 0x02;
    return k;
  }
  std::unique_ptr<model::Snapshot> snap_;
  PathGraph graph_;
  model::LiveEvidence ev_;
};

TEST_F(JoinTest, KernelReasonTheCodeExplainsAgrees) {
  ev_.kernel.push_back(Drop("SKB_DROP_REASON_IP_RPFILTER", "node:node-b", "node-b", "tun-nodea"));
  JoinedEvidence j = JoinEvidence(graph_, ev_);
  ASSERT_EQ(j.items.size(), 1u) << EvidenceText(j);
  EXPECT_EQ(j.items[0].outcome, Outcome::kAgreed);
  EXPECT_EQ(j.items[0].hop, "node-b");
  EXPECT_EQ(j.items[0].model_code, "rp_filter_drop");
  EXPECT_EQ(j.items[0].message,
            "model: drop at node-b, rp_filter_drop; kernel: SKB_DROP_REASON_IP_RPFILTER on "
            "tun-nodea of node-b (192.168.10.10:40000 -> 10.32.2.7:80/tcp [SYN])");
  EXPECT_TRUE(j.agree) << EvidenceText(j);
  EXPECT_FALSE(j.probe_disagrees);
  auto json = ToLiveJson(graph_, ev_, j);
  ASSERT_TRUE(json.ok());
  EXPECT_TRUE(absl::StrContains(*json, "\"outcome\": \"agreed\"")) << *json;
  EXPECT_TRUE(absl::StrContains(*json, "\"agreement\": \"agree\"")) << *json;
  EXPECT_TRUE(absl::StrContains(*json, "\"verdict\": \"unreachable\"")) << *json;
}

TEST_F(JoinTest, OtherReasonAtTheDropHopIsAMismatch) {
  ev_.kernel.push_back(Drop("SKB_DROP_REASON_NETFILTER_DROP", "node:node-b", "node-b", "tun-nodea"));
  JoinedEvidence j = JoinEvidence(graph_, ev_);
  ASSERT_EQ(j.items.size(), 1u) << EvidenceText(j);
  EXPECT_EQ(j.items[0].outcome, Outcome::kMismatch);
  EXPECT_FALSE(j.agree);
  EXPECT_TRUE(absl::StrContains(EvidenceText(j), "!! mismatch: ")) << EvidenceText(j);
}

TEST_F(JoinTest, DropWhereTheModelForwardsIsKernelOnlyAndTheModelDropIsModelOnly) {
  ev_.kernel.push_back(Drop("SKB_DROP_REASON_NETFILTER_DROP", "node:node-a", "node-a", "tun-nodeb"));
  JoinedEvidence j = JoinEvidence(graph_, ev_);
  ASSERT_EQ(j.items.size(), 2u) << EvidenceText(j);
  EXPECT_EQ(j.items[0].outcome, Outcome::kKernelOnly);
  EXPECT_EQ(j.items[0].hop, "node-a");
  EXPECT_TRUE(absl::StartsWith(j.items[0].message, "model: send at node-a (no drop); kernel: "))
      << j.items[0].message;
  EXPECT_EQ(j.items[1].outcome, Outcome::kModelOnly);
  EXPECT_EQ(j.items[1].hop, "node-b");
  EXPECT_EQ(j.items[1].model_code, "rp_filter_drop");
  EXPECT_FALSE(j.agree);
}

TEST_F(JoinTest, NoKernelDropIsModelOnly) {
  JoinedEvidence j = JoinEvidence(graph_, ev_);
  ASSERT_EQ(j.items.size(), 1u);
  EXPECT_EQ(j.items[0].outcome, Outcome::kModelOnly);
  EXPECT_FALSE(j.agree);
}

TEST_F(JoinTest, ArpDropAndUnknownNamespaceAreKernelOnly) {
  model::KernelDrop arp = Drop("SKB_DROP_REASON_IP_RPFILTER", "node:node-a", "node-a", "eth0");
  arp.eth_proto = 0x0806;
  arp.proto = 0;
  arp.sport = 1;
  arp.dport = 0;
  ev_.kernel.push_back(arp);
  model::KernelDrop stray = Drop("SKB_DROP_REASON_IP_RPFILTER", "", "", "eth9");
  stray.netns_inode = 4026532000;
  ev_.kernel.push_back(stray);
  ev_.kernel.push_back(Drop("SKB_DROP_REASON_IP_RPFILTER", "node:node-b", "node-b", "tun-nodea"));
  JoinedEvidence j = JoinEvidence(graph_, ev_);
  ASSERT_EQ(j.items.size(), 3u) << EvidenceText(j);
  EXPECT_EQ(j.items[0].outcome, Outcome::kKernelOnly);
  EXPECT_TRUE(j.items[0].arp);
  EXPECT_TRUE(absl::StrContains(j.items[0].message, "ARP request who-has 10.32.2.7"))
      << j.items[0].message;
  EXPECT_TRUE(absl::StrContains(j.items[0].message, "the model does not walk"));
  EXPECT_EQ(j.items[1].outcome, Outcome::kKernelOnly);
  EXPECT_TRUE(absl::StrContains(j.items[1].message, "netns inode 4026532000"));
  EXPECT_EQ(j.items[2].outcome, Outcome::kAgreed);
  EXPECT_FALSE(j.agree);
}

TEST_F(JoinTest, ProbeThatConnectsContradictsUnreachable) {
  ev_.probe.result = "connected";
  ev_.kernel.push_back(Drop("SKB_DROP_REASON_IP_RPFILTER", "node:node-b", "node-b", "tun-nodea"));
  JoinedEvidence j = JoinEvidence(graph_, ev_);
  EXPECT_TRUE(j.probe_disagrees);
  EXPECT_FALSE(j.agree);
  EXPECT_TRUE(absl::StrContains(j.probe_line, ": DISAGREE")) << j.probe_line;
}

TEST(JoinEvidence, SendFailedAtTheOriginAgreesWithAnOriginDrop) {
  PathGraph g;
  Hop h;
  h.id = "node-a";
  h.kind = HopKind::kNode;
  h.node = "node-a";
  h.action = HopAction::kSend;
  auto v = g.AddHop(h);
  g.AddSuspicion(v, Level::kFatal, "no_route", "no route to 10.9.9.9");
  g.hop(v).action = HopAction::kDrop;
  model::LiveEvidence ev;
  ev.probe.result = "error";
  ev.probe.error = "Network is unreachable";
  JoinedEvidence j = JoinEvidence(g, ev);
  ASSERT_EQ(j.items.size(), 1u);
  EXPECT_EQ(j.items[0].outcome, Outcome::kAgreed);
  EXPECT_EQ(j.items[0].kernel_reason, "send:Network is unreachable");
  EXPECT_TRUE(j.agree) << EvidenceText(j);
}

// A probe refused by the destination's kernel (nothing listens): the path delivered it, the
// kernel freed it with NO_SOCKET at the serving hop; the snapshot has no sockets to check.
PathGraph ServedGraph(Hop* served_out) {
  PathGraph g;
  Hop a;
  a.id = "netns/a";
  a.kind = HopKind::kPod;
  a.node = "router";
  a.action = HopAction::kSend;
  a.packet.src = net::Ipv4::from_string("10.1.0.2");
  a.packet.dst = net::Ipv4::from_string("10.2.0.2");
  a.packet.sport = 40000;
  a.packet.dport = 9999;
  a.packet.proto = model::kProtoUdp;
  auto va = g.AddHop(a);
  Hop b = a;
  b.id = "netns/b";
  b.iif = "eth0";
  b.action = HopAction::kServe;
  auto vb = g.AddHop(b);
  g.Link(va, vb, "eth0");
  g.AddSuspicion(vb, Level::kInfo, "not_listening", "pod netns/b declares no containerPorts");
  *served_out = b;
  return g;
}

model::KernelDrop NoSocket(const Hop& b) {
  model::KernelDrop k;
  k.reason = "SKB_DROP_REASON_NO_SOCKET";
  k.place = "pod:netns/b";
  k.node = "router";
  k.device = "eth0";
  k.proto = model::kProtoUdp;
  k.src = b.packet.src;
  k.dst = b.packet.dst;
  k.sport = b.packet.sport;
  k.dport = b.packet.dport;
  k.count = 3;
  return k;
}

TEST(JoinEvidence, RefusedProbeNoSocketAtTheServingHopAgrees) {
  Hop b;
  PathGraph g = ServedGraph(&b);
  model::LiveEvidence ev;
  ev.probe.result = "refused";
  ev.kernel.push_back(NoSocket(b));
  JoinedEvidence j = JoinEvidence(g, ev);
  ASSERT_EQ(j.items.size(), 1u) << EvidenceText(j);
  EXPECT_EQ(j.items[0].outcome, Outcome::kAgreed) << j.items[0].message;
  EXPECT_EQ(j.items[0].hop, "netns/b");
  EXPECT_EQ(j.items[0].model_code, "not_listening");
  EXPECT_TRUE(absl::StrContains(j.items[0].message, "nothing listens on port 9999"))
      << j.items[0].message;
  EXPECT_FALSE(j.probe_disagrees) << j.probe_line;  // refused: the path works
  EXPECT_TRUE(j.agree) << EvidenceText(j);
}

TEST(JoinEvidence, NoSocketWithoutARefusedProbeIsKernelOnly) {
  Hop b;
  PathGraph g = ServedGraph(&b);
  model::LiveEvidence ev;
  ev.probe.result = "sent";
  ev.kernel.push_back(NoSocket(b));
  JoinedEvidence j = JoinEvidence(g, ev);
  ASSERT_EQ(j.items.size(), 1u) << EvidenceText(j);
  EXPECT_EQ(j.items[0].outcome, Outcome::kKernelOnly);
  EXPECT_FALSE(j.agree);
}

TEST(JoinEvidence, UnreachableProbeContradictsReachable) {
  Hop b;
  PathGraph g = ServedGraph(&b);
  model::LiveEvidence ev;
  ev.probe.result = "unreachable";
  ev.probe.error = "No route to host";
  JoinedEvidence j = JoinEvidence(g, ev);
  EXPECT_TRUE(j.probe_disagrees) << j.probe_line;
  EXPECT_FALSE(j.agree);
}

}  // namespace
}  // namespace sarena::diag
