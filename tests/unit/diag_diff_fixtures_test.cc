// Diagnoser behaviours that the differential suite (tests/privileged/diag_diff_test.sh) found
// wrong against the kernel, one per test, on the suite's own healthy snapshots of two
// Calico-like nodes joined by veth cables (tests/data/cases/diff-bgp and diff-vxlan, written by
// `DIFF_FIXTURES=tests/data/cases DIFF_COUNT=0 bash tests/privileged/diag_diff_test.sh`) with the
// fault edited in. Each expectation is what the kernel did in the suite.
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using testing::CaseDir;
using testing::FindHop;
using testing::FindSuspicion;
using testing::HopOf;
using testing::Scratch;
using testing::Str;
using testing::TraceLib;

// `ip link set IFNAME down` as the snapshot shows it afterwards: no UP/LOWER_UP flag, operstate
// DOWN, and (the kernel flushes them) no routes through it.
void SetDown(Scratch& s, const std::string& node_dir, const std::string& ifname) {
  s.EditLink(node_dir + "/ip-link.json", ifname, [](google::protobuf::Struct* l) {
    auto& f = *l->mutable_fields();
    google::protobuf::ListValue flags;
    for (const auto& fl : f["flags"].list_value().values()) {
      if (fl.string_value() != "UP" && fl.string_value() != "LOWER_UP") *flags.add_values() = fl;
    }
    *f["flags"].mutable_list_value() = flags;
    f["operstate"].set_string_value("DOWN");
  });
  int n = s.RemoveFromList(node_dir + "/ip-route.json", [&](const google::protobuf::Struct& r) {
    return Str(r, "dev") == ifname && Str(r, "type") != "local";
  });
  EXPECT_GT(n, 0) << "no route through " << ifname;
}

const std::string kBgp1 = "nodes/bgp1";
const std::string kBgp2 = "nodes/bgp2";

TEST(DiagDiff, NodesJoinedByAVethCable) {
  // Before: the walk stopped at a veth whose peer is another node's netns (snapshot_incomplete).
  auto t = TraceLib(CaseDir("diff-bgp"), "pod:diff/ba", "pod:diff/bc:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.plugin, "calico");
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_TRUE(testing::OnlyInfo(t.report)) << t.text;
  const v1::Hop* b = FindHop(t.report, "bgp2");
  ASSERT_NE(b, nullptr) << t.text;
  EXPECT_EQ(b->iif(), "eth0");
  EXPECT_EQ(b->oif(), CalicoVethName("diff", "bc"));
  ASSERT_NE(FindHop(t.report, "diff/ba@reply"), nullptr) << t.text;

  // From bgp1's second address: the request leaves on eth0, the reply returns on eth1.
  auto alt = TraceLib(CaseDir("diff-bgp"), "192.168.92.1", "pod:diff/bc:8080/tcp");
  ASSERT_TRACED(alt);
  EXPECT_EQ(alt.report.verdict(), "reachable") << alt.text;
  const v1::Hop* back = FindHop(alt.report, "bgp1@reply");
  ASSERT_NE(back, nullptr) << alt.text;
  EXPECT_EQ(back->iif(), "eth1");
}

TEST(DiagDiff, GatewayNobodyOwnsIsNeighborMissing) {
  Scratch s("diff-bgp");
  s.Replace(kBgp1 + "/ip-route.json",
            R"("gateway":"192.168.91.2","dev":"eth0","protocol":"bird","flags":[])",
            R"("gateway":"192.168.91.99","dev":"eth0","protocol":"bird","flags":["onlink"])");
  // The generic walk: nothing at the other end of eth0 answers ARP for .99.
  auto t = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bc:8080/tcp", "generic");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "neighbor_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "bgp1");
  EXPECT_EQ(FindHop(t.report, "bgp2"), nullptr) << t.text;
  // Calico's plugin names the route first: it hands pod traffic to no node.
  auto c = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bc:8080/tcp");
  ASSERT_TRACED(c);
  m = FindSuspicion(c.report, "route_mismatch", "FATAL");
  ASSERT_NE(m, nullptr) << c.text;
  EXPECT_EQ(HopOf(c.report, m)->id(), "bgp1");
}

TEST(DiagDiff, GatewayOnAnotherAddressOfTheNodeWorks) {
  Scratch s("diff-bgp");
  s.Replace(kBgp1 + "/ip-route.json", R"("gateway":"192.168.91.2","dev":"eth0","protocol":"bird")",
            R"("gateway":"192.168.92.2","dev":"eth1","protocol":"bird")");
  auto t = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bc:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_NE(t.report.verdict(), "unreachable") << t.text;  // not Calico's route: a WARNING
  const v1::Hop* b = FindHop(t.report, "bgp2");
  ASSERT_NE(b, nullptr) << t.text;
  EXPECT_EQ(b->iif(), "eth1");
}

TEST(DiagDiff, PodGatewayNeedsSomeoneToAnswerArp) {
  // The generic walk: Calico's pods reach 169.254.1.1 only through proxy_arp on the cali veth.
  const std::string cali = CalicoVethName("diff", "ba");
  Scratch s("diff-bgp");
  auto ok = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bb:8080/tcp", "generic");
  ASSERT_TRACED(ok);
  EXPECT_EQ(ok.report.verdict(), "reachable") << ok.text;

  s.SetSysctl(kBgp1 + "/sysctl.txt", absl::StrCat("net.ipv4.conf.", cali, ".proxy_arp"), "0");
  auto t = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bb:8080/tcp", "generic");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "neighbor_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "diff/ba");

  // A permanent neighbour entry needs no answer.
  s.Write(
      kBgp1 + "/pods/diff/ba/ip-neigh.json",
      R"([{"dst":"169.254.1.1","dev":"eth0","lladdr":"ee:ee:ee:ee:ee:ee","state":["PERMANENT"]}])");
  auto p = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bb:8080/tcp", "generic");
  ASSERT_TRACED(p);
  EXPECT_EQ(p.report.verdict(), "reachable") << p.text;
}

TEST(DiagDiff, RouteToAnotherPodsVethFindsNoNeighbor) {
  // The kernel ARPs for the pod address on the wrong veth; that pod does not own it.
  Scratch s("diff-bgp");
  s.Replace(kBgp2 + "/ip-route.json",
            absl::StrCat(R"("dst":"10.91.2.2","dev":")", CalicoVethName("diff", "bc"), "\""),
            absl::StrCat(R"("dst":"10.91.2.2","dev":")", CalicoVethName("diff", "bd"), "\""));
  auto t = TraceLib(s.dir(), "node:bgp2", "pod:diff/bc:8080/tcp", "generic");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "neighbor_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "bgp2");
  EXPECT_EQ(FindHop(t.report, "diff/bd"), nullptr) << t.text;
}

TEST(DiagDiff, VethDropsWhatExceedsTheReceiversMtu) {
  // is_skb_forwardable: the pod side of bc's veth has MTU 1300, the node side 1500.
  Scratch s("diff-bgp");
  s.SetMtu(kBgp2 + "/pods/diff/bc/ip-link.json", "eth0", 1300);
  auto t = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bc:7777/udp", "auto", 64, 1400);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "mtu_mismatch", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "bgp2");
  EXPECT_NE(m->message().find("1300"), std::string::npos) << m->message();

  // Full-size UDP (no --size: the sender's MTU): a black hole for large datagrams.
  auto udp = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bc:7777/udp");
  ASSERT_TRACED(udp);
  EXPECT_EQ(udp.report.verdict(), "degraded") << udp.text;
  EXPECT_NE(FindSuspicion(udp.report, "mtu_mismatch", "CRITICAL"), nullptr) << udp.text;

  // TCP never sends a segment that large: bc announces MSS 1260 (its eth0 MTU 1300 - 40), so
  // ba's segments are 1300 bytes and fit; bc's own are bounded by that MTU too.
  auto tcp = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bc:8080/tcp");
  ASSERT_TRACED(tcp);
  EXPECT_EQ(tcp.report.verdict(), "reachable") << tcp.text;
  EXPECT_EQ(FindSuspicion(tcp.report, "mtu_mismatch"), nullptr) << tcp.text;

  // Below the MTU it passes.
  auto small = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bc:7777/udp", "auto", 64, 1200);
  ASSERT_TRACED(small);
  EXPECT_EQ(small.report.verdict(), "reachable") << small.text;
}

TEST(DiagDiff, TcpRepliesAreNoLargerThanTheClientsMss) {
  // A node (MTU 1500) answering a VXLAN pod (MTU 1450): its segments follow the pod's MSS.
  auto t = TraceLib(CaseDir("diff-vxlan"), "pod:diff/va", "node:vx2:9090/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "mtu_mismatch", "WARNING"), nullptr) << t.text;
}

TEST(DiagDiff, SizeIsTheRequestsOnly) {
  // --size sets the request; a reply of unknown size is not "dropped, DF set".
  auto t = TraceLib(CaseDir("diff-vxlan"), "pod:diff/va", "node:vx2:7777/udp", "auto", 64, 1400);
  ASSERT_TRACED(t);
  EXPECT_NE(t.report.verdict(), "unreachable") << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "mtu_mismatch", "FATAL"), nullptr) << t.text;
}

TEST(DiagDiff, VxlanWithDfUnsetFragmentsTheOuterPacket) {
  Scratch s("diff-vxlan");
  s.SetMtu("nodes/vx1/ip-link.json", "eth0", 1300);
  auto t = TraceLib(s.dir(), "node:vx1", "pod:diff/vc:7777/udp", "auto", 64, 1400);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "mtu_mismatch", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "vx1");
  ASSERT_NE(FindHop(t.report, "diff/vc"), nullptr) << t.text;

  // With "df set" the outer packet cannot be fragmented.
  s.EditLink("nodes/vx1/ip-link.json", "vxlan.calico", [](google::protobuf::Struct* l) {
    (*(*(*l->mutable_fields())["linkinfo"].mutable_struct_value()->mutable_fields())["info_data"]
          .mutable_struct_value()
          ->mutable_fields())["df"]
        .set_string_value("set");
  });
  auto df = TraceLib(s.dir(), "node:vx1", "pod:diff/vc:7777/udp", "auto", 64, 1400);
  ASSERT_TRACED(df);
  EXPECT_EQ(df.report.verdict(), "unreachable") << df.text;
  EXPECT_NE(FindSuspicion(df.report, "mtu_mismatch", "FATAL"), nullptr) << df.text;
}

TEST(DiagDiff, CalicoTunnelDeviceDownIsLinkDown) {
  // Before: "no Calico route" (route_mismatch) for the lookup that fell to the default route.
  Scratch s("diff-vxlan");
  SetDown(s, "nodes/vx1", "vxlan.calico");
  auto t = TraceLib(s.dir(), "pod:diff/va", "pod:diff/vc:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "link_down", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "vx1");
  EXPECT_EQ(FindSuspicion(t.report, "route_mismatch", "FATAL"), nullptr) << t.text;
}

TEST(DiagDiff, PrimaryDeviceDownIsLinkDown) {
  // eth0 down took the remote block's route and the default route with it: no route at all.
  Scratch s("diff-bgp");
  SetDown(s, kBgp1, "eth0");
  // The pod still has its gateway's MAC from earlier traffic (with the default route gone,
  // proxy_arp would no longer answer for 169.254.1.1).
  s.Write(
      kBgp1 + "/pods/diff/ba/ip-neigh.json",
      R"([{"dst":"169.254.1.1","dev":"eth0","lladdr":"ee:ee:ee:ee:ee:ee","state":["REACHABLE"]}])");
  auto t = TraceLib(s.dir(), "pod:diff/ba", "pod:diff/bc:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "link_down", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "bgp1");
  EXPECT_NE(m->message().find("eth0"), std::string::npos) << m->message();
}

TEST(DiagDiff, VxlanOuterPacketNeedsItsNextHopToResolve) {
  // Without the connected route the outer packet to the peer VTEP follows the default route to
  // a router that does not exist on the cable.
  Scratch s("diff-vxlan");
  EXPECT_EQ(s.RemoveFromList("nodes/vx1/ip-route.json",
                             [](const google::protobuf::Struct& r) {
                               return Str(r, "dst") == "192.168.93.0/24";
                             }),
            1);
  auto t = TraceLib(s.dir(), "pod:diff/va", "pod:diff/vc:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "neighbor_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "vx1");
  EXPECT_NE(m->message().find("192.168.93.254"), std::string::npos) << m->message();
}

TEST(DiagDiff, VxlanOuterPacketAboveTheReceivingCablesMtu) {
  Scratch s("diff-vxlan");
  s.SetMtu("nodes/vx2/ip-link.json", "eth0", 1300);
  auto t = TraceLib(s.dir(), "pod:diff/va", "pod:diff/vc:7777/udp", "auto", 64, 1400);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "mtu_mismatch", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "vx1");
  EXPECT_NE(m->message().find("1450-byte"), std::string::npos) << m->message();
}

TEST(DiagDiff, UnderlayDownIsLinkDownForTheOuterRoute) {
  Scratch s("diff-vxlan");
  SetDown(s, "nodes/vx1", "eth0");
  auto t = TraceLib(s.dir(), "node:vx1", "pod:diff/vc:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "link_down", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "vx1");
  EXPECT_EQ(FindSuspicion(t.report, "no_route", "FATAL"), nullptr) << t.text;
}

TEST(DiagDiff, NodeDestinationWithoutNodeObjectOrDefaultRoute) {
  // A live collect has no nodes.json; a node whose addresses are all on host devices (sarena's
  // node IP on sarena_host) has no default route either: its first global address is used.
  Scratch s("diff-bgp");
  s.Remove("cluster/nodes.json");
  EXPECT_EQ(s.RemoveFromList(
                kBgp2 + "/ip-route.json",
                [](const google::protobuf::Struct& r) { return Str(r, "dst") == "default"; }),
            1);
  auto t = TraceLib(s.dir(), "pod:diff/ba", "node:bgp2:9090/tcp");
  ASSERT_TRACED(t);
  const v1::Hop* first = FindHop(t.report, "diff/ba");
  ASSERT_NE(first, nullptr) << t.text;
  EXPECT_EQ(first->packet().dst(), "192.168.91.2");
  ASSERT_NE(FindHop(t.report, "bgp2"), nullptr) << t.text;
}

}  // namespace
}  // namespace sarena::diag
