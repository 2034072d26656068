// IP sets from real `ipset save` output (tests/data/model/ipset/ipset-save.txt, captured from a
// namespace with ipset 7.17) and their use by `-m set` rules: Calico's natOutgoing rule.
#include "libsarena/base/file.h"
#include "libsarena/model/ipset.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/model/netfilter.h"
#include "libsarena/model/snapshot.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

using ::testing::HasSubstr;

net::Ipv4 Ip(const char* s) { return net::Ipv4::from_string(s); }

Packet Pkt(const char* src, uint16_t sport, const char* dst, uint16_t dport, uint8_t proto = kProtoTcp) {
  Packet p;
  p.src = Ip(src);
  p.dst = Ip(dst);
  p.sport = sport;
  p.dport = dport;
  p.proto = proto;
  return p;
}

Ipsets Real() {
  auto text = ReadFileToString(sarena::testing::SourceDir() + "/tests/data/model/ipset/ipset-save.txt");
  EXPECT_TRUE(text.ok());
  auto sets = Ipsets::Parse(*text);
  EXPECT_TRUE(sets.ok()) << sets.status();
  return std::move(*sets);
}

TEST(Ipset, TypesAndMembership) {
  Ipsets s = Real();
  EXPECT_EQ(s.size(), 8u);
  EXPECT_EQ(s.Type("KUBE-CLUSTER-IP"), "hash:ip,port");
  // hash:net with a more specific nomatch entry.
  EXPECT_EQ(s.Test("cali40all-ipam-pools", {false}, Pkt("1.1.1.1", 1, "10.65.1.3", 80)), true);
  EXPECT_EQ(s.Test("cali40all-ipam-pools", {false}, Pkt("1.1.1.1", 1, "10.65.3.3", 80)), false);
  EXPECT_EQ(s.Test("cali40all-ipam-pools", {true}, Pkt("10.65.3.3", 1, "8.8.8.8", 80)), false);
  EXPECT_EQ(s.Test("cali40all-ipam-pools", {true}, Pkt("10.66.0.1", 1, "8.8.8.8", 80)), false);
  // hash:ip,port: address and protocol:port.
  EXPECT_EQ(s.Test("KUBE-CLUSTER-IP", {false, false}, Pkt("10.244.1.5", 999, "10.96.0.1", 443)), true);
  EXPECT_EQ(s.Test("KUBE-CLUSTER-IP", {false, false}, Pkt("10.244.1.5", 999, "10.96.0.1", 443, kProtoUdp)), false);
  EXPECT_EQ(s.Test("KUBE-CLUSTER-IP", {false, false}, Pkt("10.244.1.5", 999, "10.96.0.10", 53, kProtoUdp)), true);
  // hash:ip,port,ip "dst,dst,src" (kube-proxy ipvs hairpin).
  EXPECT_EQ(s.Test("KUBE-LOOP-BACK", {false, false, true}, Pkt("10.244.1.5", 1, "10.244.1.5", 8080)), true);
  EXPECT_EQ(s.Test("KUBE-LOOP-BACK", {false, false, true}, Pkt("10.244.1.6", 1, "10.244.1.5", 8080)), false);
  EXPECT_EQ(s.Test("hip", {true}, Pkt("10.1.1.1", 1, "2.2.2.2", 2)), true);
  EXPECT_EQ(s.Test("ports", {false}, Pkt("1.1.1.1", 1, "2.2.2.2", 8001)), true);
  EXPECT_EQ(s.Test("ports", {false}, Pkt("1.1.1.1", 1, "2.2.2.2", 8003)), false);
  EXPECT_EQ(s.Test("nets", {false, false}, Pkt("1.1.1.1", 1, "10.9.9.9", 80)), true);
  EXPECT_EQ(s.Test("lst", {true}, Pkt("10.1.1.1", 1, "2.2.2.2", 2)), true);  // list:set member hip
  EXPECT_FALSE(s.Test("nope", {true}, Pkt("1.1.1.1", 1, "2.2.2.2", 2)).has_value());
}

TEST(Ipset, Errors) {
  auto bad = Ipsets::Parse("add ghost 10.0.0.1\n", "nodes/n/ipset-save.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("nodes/n/ipset-save.txt: line 1: add to undeclared set 'ghost'"));
  bad = Ipsets::Parse("create s hash:net family inet\nadd s 10.0.0.0/40\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("line 2: invalid address"));
  auto v6 = Ipsets::Parse("create s6 hash:net family inet6\nadd s6 fd00::/8\n");
  ASSERT_TRUE(v6.ok());
  EXPECT_FALSE(v6->Test("s6", {true}, Pkt("1.1.1.1", 1, "2.2.2.2", 2)).has_value());
}

TEST(Ipset, CalicoNatOutgoingRule) {
  // The rule as iptables-save printed it after `iptables -A ... -m set ...` in a namespace.
  auto nf = Netfilter::Parse(
      "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n"
      "-A POSTROUTING -m set --match-set cali40masq-ipam-pools src -m set ! --match-set "
      "cali40all-ipam-pools dst -j MASQUERADE\nCOMMIT\n");
  ASSERT_TRUE(nf.ok()) << nf.status();
  NfContext ctx;
  ctx.oif = "eth0";
  // Without the sets: two unknown matches, forked.
  auto outs = nf->EvaluateHook(NfHook::kPostrouting, Pkt("10.65.1.3", 1, "8.8.8.8", 53), ctx);
  EXPECT_EQ(outs.size(), 3u);
  EXPECT_THAT(outs[0].notes[0].detail, HasSubstr("ipset contents unknown"));
  nf->SetIpsets(Real());
  outs = nf->EvaluateHook(NfHook::kPostrouting, Pkt("10.65.1.3", 1, "8.8.8.8", 53), ctx);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(outs[0].snat);  // pod -> outside every pool: masqueraded
  EXPECT_TRUE(outs[0].certain());
  outs = nf->EvaluateHook(NfHook::kPostrouting, Pkt("10.65.1.3", 1, "10.65.2.8", 80), ctx);
  EXPECT_FALSE(outs[0].snat);  // pod -> pod: not masqueraded
  outs = nf->EvaluateHook(NfHook::kPostrouting, Pkt("192.168.10.10", 1, "8.8.8.8", 53), ctx);
  EXPECT_FALSE(outs[0].snat);  // host traffic: not from a pool
}

}  // namespace
}  // namespace sarena::model
