// TCP queries are sized by the MSS both ends negotiate (RFC 9293 3.7.1: each SYN announces the
// sender's path MTU - 40, or its route's advmss; a segment is at most the peer's MSS + 40 and the
// sender's own path MTU), with the TCPMSS rules of mangle FORWARD / POSTROUTING / OUTPUT that the
// SYN and the SYN-ACK match; UDP and ICMP queries keep using --size (or the source's MTU).
//
// The path: calico-vxlan with vxlanMode CrossSubnet and both nodes in 10.10.0.0/24, so node-a
// reaches node-b's block directly over eth0 (MTU 1500) and node-b forwards into the workload veth
// (MTU 1450): the kubelet-probe-like path on which a 1500-byte packet does not fit but no TCP
// segment is ever that large (the server pod announces MSS 1410).
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "libsarena/model/netfilter.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using testing::CaseDir;
using testing::FindSuspicion;
using testing::HopOf;
using testing::Scratch;
using testing::TraceLib;

constexpr const char* kNodeBVeth = "cali7715d358f22";  // node-b's side of default/server's veth

// calico-vxlan turned into a healthy VXLAN CrossSubnet cluster (same subnet: no encapsulation).
void MakeCrossSubnet(Scratch& s) {
  s.Replace("cluster/ippools.json", "\"vxlanMode\": \"Always\"", "\"vxlanMode\": \"CrossSubnet\"");
  s.EditJson("nodes/node-a/ip-route.json", [](google::protobuf::Value* v) {
    for (auto& r : *v->mutable_list_value()->mutable_values()) {
      auto& f = *r.mutable_struct_value()->mutable_fields();
      if (f["dst"].string_value() != "10.66.2.192/26") continue;
      f["gateway"].set_string_value("10.10.0.12");
      f["dev"].set_string_value("eth0");
      f["protocol"].set_string_value("bird");
      f["flags"].mutable_list_value()->clear_values();
    }
  });
}

// MakeCrossSubnet with node-b's side of the workload veth at 1400 bytes: a hop in the middle
// that neither end's route shows.
void MakeMiddleHop(Scratch& s) {
  MakeCrossSubnet(s);
  s.SetMtu("nodes/node-b/ip-link.json", kNodeBVeth, 1400);
}

// Adds `rule` ("-A FORWARD ...") to a mangle table in front of `node`'s iptables-save.
void AddMangleRule(Scratch& s, const std::string& rule, const std::string& node = "node-b") {
  s.Replace(absl::StrCat("nodes/", node, "/iptables-save.txt"), "*filter\n",
            absl::StrCat("*mangle\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n"
                         ":FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n",
                         rule, "\nCOMMIT\n*filter\n"));
}

TEST(DiagMss, TcpOnAHealthy1450MtuPathIsReachable) {
  Scratch s("calico-vxlan");
  MakeCrossSubnet(s);
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "mtu_mismatch"), nullptr) << t.text;
}

TEST(DiagMss, UdpOnTheSamePathIsStillFlagged) {
  Scratch s("calico-vxlan");
  MakeCrossSubnet(s);
  // --size 1500 with DF: dropped where the 1450-byte veth starts.
  auto big = TraceLib(s.dir(), "node:node-a", "pod:default/server:8080/udp", "auto", 64, 1500);
  ASSERT_TRACED(big);
  EXPECT_EQ(big.report.verdict(), "unreachable") << big.text;
  const v1::Suspicion* m = FindSuspicion(big.report, "mtu_mismatch", "FATAL");
  ASSERT_NE(m, nullptr) << big.text;
  EXPECT_EQ(HopOf(big.report, m)->node(), "node-b");
  EXPECT_NE(m->message().find("1500-byte packets"), std::string::npos) << m->message();
  EXPECT_NE(m->message().find(kNodeBVeth), std::string::npos) << m->message();
  EXPECT_EQ(m->message().find("MSS"), std::string::npos) << m->message();

  // UDP without --size: full-size datagrams (the sender's MTU) rely on PMTU discovery.
  auto full = TraceLib(s.dir(), "node:node-a", "pod:default/server:8080/udp");
  ASSERT_TRACED(full);
  EXPECT_EQ(full.report.verdict(), "degraded") << full.text;
  EXPECT_NE(FindSuspicion(full.report, "mtu_mismatch", "WARNING"), nullptr) << full.text;
}

TEST(DiagMss, ASmallerMiddleHopIsFlaggedWithTheNegotiatedMss) {
  // node-b's side of the workload veth at 1400: neither end's route shows it. The client sends
  // min(1500, 1410 + 40) = 1450-byte segments, the server min(1450, 1460 + 40) = 1450.
  Scratch s("calico-vxlan");
  MakeMiddleHop(s);
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Suspicion* req = FindSuspicion(t.report, "mtu_mismatch", "WARNING");
  ASSERT_NE(req, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, req)->id(), "node-b");
  for (const char* part : {"1450-byte TCP segments", "MSS 1410 negotiated",
                           "pod default/server announced MSS 1410", "node node-a sends",
                           "exceed the MTU 1400", "PMTU discovery"}) {
    EXPECT_NE(req->message().find(part), std::string::npos) << part << "\n" << req->message();
  }
  // The server's 1450-byte segments die silently in the veth (no ICMP: a black hole).
  const v1::Suspicion* rep = FindSuspicion(t.report, "mtu_mismatch", "CRITICAL");
  ASSERT_NE(rep, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, rep)->id(), "default/server@reply");
  EXPECT_NE(rep->message().find("MSS 1410 negotiated: node node-a announced MSS 1460"),
            std::string::npos)
      << rep->message();
}

TEST(DiagMss, AnMssClampThatFitsTheMiddleHopFixesIt) {
  Scratch s("calico-vxlan");
  MakeMiddleHop(s);
  // Both SYNs cross node-b's FORWARD: each MSS becomes min(1400, 1500) - 40 = 1360.
  AddMangleRule(s, "-A FORWARD -p tcp -m tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu");
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "mtu_mismatch"), nullptr) << t.text;

  // The clamp is TCP's: a full-size UDP datagram still does not fit.
  auto udp = TraceLib(s.dir(), "node:node-a", "pod:default/server:8080/udp");
  ASSERT_TRACED(udp);
  EXPECT_NE(FindSuspicion(udp.report, "mtu_mismatch"), nullptr) << udp.text;
}

TEST(DiagMss, AClampSetTooHighIsStillFlaggedAndNamed) {
  Scratch s("calico-vxlan");
  MakeMiddleHop(s);
  AddMangleRule(s, "-A FORWARD -p tcp -m tcp --tcp-flags SYN,RST SYN -j TCPMSS --set-mss 1380");
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "mtu_mismatch", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  for (const char* part : {"1420-byte TCP segments", "MSS 1380 negotiated", "clamped to 1380",
                           "TCPMSS --set-mss 1380", "exceed the MTU 1400"}) {
    EXPECT_NE(m->message().find(part), std::string::npos) << part << "\n" << m->message();
  }
  // A --set-mss above what the ends announce changes nothing (xt_TCPMSS never raises it).
  Scratch h("calico-vxlan");
  MakeCrossSubnet(h);
  AddMangleRule(h, "-A FORWARD -p tcp -m tcp --tcp-flags SYN,RST SYN -j TCPMSS --set-mss 1460");
  auto ok = TraceLib(h.dir(), "node:node-a", "pod:default/server:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(ok.report.verdict(), "reachable") << ok.text;
}

TEST(DiagMss, TheClientsOwnMssFromItsOutputClampOrItsRouteAdvmss) {
  // node-a announces 1300 (a TCPMSS in its mangle OUTPUT, or advmss on its route to the block):
  // the server's segments (1340) fit the 1400-byte veth on the way back; the client's own
  // (min(1500, 1410 + 40) = 1450) still do not.
  for (bool clamp : {true, false}) {
    Scratch s("calico-vxlan");
    MakeMiddleHop(s);
    if (clamp) {
      AddMangleRule(s, "-A OUTPUT -p tcp -m tcp --tcp-flags SYN,RST SYN -j TCPMSS --set-mss 1300",
                    "node-a");
    } else {
      s.EditJson("nodes/node-a/ip-route.json", [](google::protobuf::Value* v) {
        for (auto& r : *v->mutable_list_value()->mutable_values()) {
          auto& f = *r.mutable_struct_value()->mutable_fields();
          if (f["dst"].string_value() != "10.66.2.192/26") continue;
          google::protobuf::Value m;
          (*m.mutable_struct_value()->mutable_fields())["advmss"].set_number_value(1300);
          *f["metrics"].mutable_list_value()->add_values() = m;
        }
      });
    }
    auto t = TraceLib(s.dir(), "node:node-a", "pod:default/server:8080/tcp");
    ASSERT_TRACED(t);
    EXPECT_EQ(FindSuspicion(t.report, "mtu_mismatch", "CRITICAL"), nullptr) << clamp << t.text;
    const v1::Suspicion* m = FindSuspicion(t.report, "mtu_mismatch", "WARNING");
    ASSERT_NE(m, nullptr) << clamp << t.text;
    EXPECT_EQ(HopOf(t.report, m)->id(), "node-b");
  }
}

TEST(ModelNetfilterTcpMss, TargetOptionsAndSynAckFlags) {
  auto nf = model::Netfilter::Parse(
      "*mangle\n:FORWARD ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n"
      "-A FORWARD -p tcp -m tcp --tcp-flags SYN,RST SYN -j TCPMSS --set-mss 1360\n"
      "-A POSTROUTING -p tcp -m tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu\n"
      "COMMIT\n");
  ASSERT_TRUE(nf.ok()) << nf.status();
  EXPECT_TRUE(nf->HasTarget("TCPMSS"));
  EXPECT_FALSE(nf->HasTarget("DNAT"));
  model::Packet p;
  p.src = net::Ipv4::from_string("10.0.0.1");
  p.dst = net::Ipv4::from_string("10.0.0.2");
  p.sport = 40000;
  p.dport = 80;
  auto steps = [&](model::NfHook hook, const model::Packet& pkt) {
    auto outs = nf->EvaluateTable(model::NfTable::kMangle, hook, pkt, {});
    EXPECT_EQ(outs.size(), 1u);
    return outs.front().steps;
  };
  auto syn = steps(model::NfHook::kForward, p);
  ASSERT_EQ(syn.size(), 1u);
  EXPECT_EQ(syn[0].target, "TCPMSS");
  EXPECT_EQ(syn[0].tcpmss, 1360u);
  auto clamp = steps(model::NfHook::kPostrouting, p);
  ASSERT_EQ(clamp.size(), 1u);
  EXPECT_EQ(clamp[0].tcpmss, model::kNfTcpMssClampToPmtu);
  // A reply is an ACK unless told otherwise; the SYN-ACK (0x12) matches "SYN,RST SYN".
  model::Packet reply = p.Reversed();
  reply.ct_state = model::CtState::kEstablished;
  EXPECT_TRUE(steps(model::NfHook::kForward, reply).empty());
  reply.tcp_flags = 0x12;
  EXPECT_EQ(steps(model::NfHook::kForward, reply).size(), 1u);

  auto bad = model::Netfilter::Parse(
      "*mangle\n:FORWARD ACCEPT [0:0]\n-A FORWARD -p tcp -j TCPMSS --set-mss big\nCOMMIT\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--set-mss"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace sarena::diag
