// Netfilter: a real kube-proxy-style ruleset (iptables-restore + iptables-save from a namespace,
// tests/data/model/iptables/kube-proxy.iptables-save.txt) evaluated on packets: ClusterIP
// backends enumerated with probabilities, NodePort, externalTrafficPolicy=Local without local
// endpoints, loadBalancerSourceRanges, masquerade mark, REJECT for no endpoints; unknown
// matches/targets, chain semantics, parse errors.
#include "libsarena/base/file.h"
#include "libsarena/model/netfilter.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/snapshot.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

using ::testing::HasSubstr;

net::Ipv4 Ip(const char* s) { return net::Ipv4::from_string(s); }
net::Ipv4Prefix Pfx(const char* s) { return *net::ParseIpv4Prefix(s); }

const Netfilter& KubeProxy() {
  static const Netfilter* nf = [] {
    auto text = ReadFileToString(sarena::testing::SourceDir() +
                                 "/tests/data/model/iptables/kube-proxy.iptables-save.txt");
    EXPECT_TRUE(text.ok()) << text.status();
    auto parsed = Netfilter::Parse(*text, "kube-proxy.iptables-save.txt");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return new Netfilter(std::move(*parsed));
  }();
  return *nf;
}

// node-a: eth0 192.168.10.10/24, cni0 10.244.1.1/24 (local pods), 10.244.2.0/24 via node-b.
const Netstack& NodeA() {
  static const Netstack* ns = [] {
    auto* n = new Netstack();
    auto iface = [&](const char* name, int idx, const char* addr, int len, bool loopback = false) {
      Interface i;
      i.name = name;
      i.ifindex = idx;
      i.admin_up = i.lower_up = true;
      i.loopback = loopback;
      i.mtu = 1500;
      i.addresses.push_back({.local = Ip(addr), .prefixlen = static_cast<uint8_t>(len),
                             .scope = loopback ? Scope::kHost : Scope::kUniverse});
      n->AddInterface(i);
    };
    iface("lo", 1, "127.0.0.1", 8, true);
    iface("eth0", 2, "192.168.10.10", 24);
    iface("cni0", 3, "10.244.1.1", 24);
    auto route = [&](const char* dst, const char* gw, const char* dev, Scope scope, uint32_t table,
                     RouteType type) {
      Route r;
      r.dst = Pfx(dst);
      r.scope = scope;
      r.table = table;
      r.type = type;
      Nexthop nh;
      if (gw) nh.gateway = Ip(gw);
      nh.dev = dev;
      r.nexthops.push_back(nh);
      n->AddRoute(r);
    };
    route("0.0.0.0/0", "192.168.10.1", "eth0", Scope::kUniverse, kTableMain, RouteType::kUnicast);
    route("192.168.10.0/24", nullptr, "eth0", Scope::kLink, kTableMain, RouteType::kUnicast);
    route("10.244.1.0/24", nullptr, "cni0", Scope::kLink, kTableMain, RouteType::kUnicast);
    route("10.244.2.0/24", "192.168.10.21", "eth0", Scope::kUniverse, kTableMain, RouteType::kUnicast);
    route("192.168.10.10/32", nullptr, "eth0", Scope::kHost, kTableLocal, RouteType::kLocal);
    route("10.244.1.1/32", nullptr, "cni0", Scope::kHost, kTableLocal, RouteType::kLocal);
    route("127.0.0.0/8", nullptr, "lo", Scope::kHost, kTableLocal, RouteType::kLocal);
    route("192.168.10.255/32", nullptr, "eth0", Scope::kLink, kTableLocal, RouteType::kBroadcast);
    n->Finalize();
    return n;
  }();
  return *ns;
}

Packet Tcp(const char* src, uint16_t sport, const char* dst, uint16_t dport) {
  Packet p;
  p.src = Ip(src);
  p.dst = Ip(dst);
  p.sport = sport;
  p.dport = dport;
  p.proto = kProtoTcp;
  return p;
}

NfContext Ctx(absl::string_view iif, absl::string_view oif = {}) {
  NfContext c;
  c.iif = iif;
  c.oif = oif;
  c.netstack = &NodeA();
  return c;
}

// The outcome whose packet has `dst`, or nullptr.
const NfOutcome* WithDst(const std::vector<NfOutcome>& outs, const char* dst) {
  for (const auto& o : outs) {
    if (o.packet.dst == Ip(dst)) return &o;
  }
  return nullptr;
}

TEST(NetfilterParse, RealSaveFile) {
  const Netfilter& nf = KubeProxy();
  EXPECT_TRUE(nf.HasTable(NfTable::kNat));
  EXPECT_TRUE(nf.HasTable(NfTable::kFilter));
  EXPECT_TRUE(nf.HasTable(NfTable::kRaw));
  EXPECT_FALSE(nf.HasTable(NfTable::kSecurity));
  EXPECT_TRUE(nf.HasChain(NfTable::kNat, "KUBE-SVC-WEB"));
  EXPECT_FALSE(nf.HasChain(NfTable::kFilter, "KUBE-SVC-WEB"));
  EXPECT_EQ(nf.rule_count(), 68u);
}

TEST(NetfilterKubeProxy, ClusterIpEnumeratesEveryBackendWithItsProbability) {
  auto outs = KubeProxy().EvaluateHook(NfHook::kPrerouting, Tcp("10.244.1.5", 40000, "10.96.0.100", 80),
                                       Ctx("cni0"));
  ASSERT_EQ(outs.size(), 3u);
  double sum = 0;
  for (const char* backend : {"10.244.1.10", "10.244.1.11", "10.244.2.12"}) {
    const NfOutcome* o = WithDst(outs, backend);
    ASSERT_NE(o, nullptr) << backend;
    EXPECT_NEAR(o->probability, 1.0 / 3.0, 1e-6) << backend;
    EXPECT_EQ(o->verdict, NfVerdict::kAccept);
    EXPECT_TRUE(o->dnat);
    EXPECT_EQ(o->packet.dport, 8080);
    EXPECT_EQ(o->packet.mark, 0u);  // pod source: no KUBE-MARK-MASQ
    ASSERT_TRUE(o->decided_by.has_value());
    EXPECT_THAT(o->decided_by->chain, HasSubstr("KUBE-SEP-WEB"));
    EXPECT_TRUE(o->certain());
    sum += o->probability;
  }
  EXPECT_NEAR(sum, 1.0, 1e-9);
  // The statistic branches record their conditional probabilities: 1/3, then 1/2, then 1.
  const NfOutcome* second = WithDst(outs, "10.244.1.11");
  auto it = std::find_if(second->steps.begin(), second->steps.end(),
                         [](const NfStep& s) { return s.target == "KUBE-SEP-WEB2"; });
  ASSERT_NE(it, second->steps.end());
  EXPECT_NEAR(it->branch_probability, 0.5, 1e-9);
}

TEST(NetfilterKubeProxy, HostToClusterIpIsMarkedAndMasqueraded) {
  const Netfilter& nf = KubeProxy();
  auto outs = nf.EvaluateHook(NfHook::kOutput, Tcp("192.168.10.10", 40000, "10.96.0.100", 80), Ctx({}, "eth0"));
  ASSERT_EQ(outs.size(), 3u);
  const NfOutcome* remote = WithDst(outs, "10.244.2.12");
  ASSERT_NE(remote, nullptr);
  EXPECT_EQ(remote->packet.mark, 0x4000u);  // ! -s 10.244.0.0/16 -> KUBE-MARK-MASQ
  // POSTROUTING towards node-b: KUBE-POSTROUTING masquerades and clears the bit.
  NfContext post = Ctx({}, "eth0");
  post.nexthop = Ip("192.168.10.21");
  auto after = nf.EvaluateHook(NfHook::kPostrouting, remote->packet, post);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_TRUE(after[0].snat);
  EXPECT_EQ(after[0].packet.src, Ip("192.168.10.10"));
  EXPECT_EQ(after[0].packet.mark, 0u);  // --set-xmark 0x4000/0x0 toggles the bit off
  EXPECT_EQ(after[0].decided_by->chain, "KUBE-POSTROUTING");
  // Pod traffic without the mark is not masqueraded.
  auto pod = nf.EvaluateHook(NfHook::kPostrouting, Tcp("10.244.1.5", 40000, "10.244.2.12", 8080), post);
  ASSERT_EQ(pod.size(), 1u);
  EXPECT_FALSE(pod[0].snat);
  EXPECT_EQ(pod[0].packet.src, Ip("10.244.1.5"));
}

TEST(NetfilterKubeProxy, NodePortOnLocalAddressOnly) {
  const Netfilter& nf = KubeProxy();
  auto outs = nf.EvaluateHook(NfHook::kPrerouting, Tcp("198.51.100.7", 5555, "192.168.10.10", 30080), Ctx("eth0"));
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].packet.dst, Ip("10.244.2.20"));
  EXPECT_EQ(outs[0].packet.dport, 8080);
  EXPECT_EQ(outs[0].packet.mark, 0x4000u);
  // FORWARD: KUBE-FORWARD accepts marked traffic.
  auto fwd = nf.EvaluateHook(NfHook::kForward, outs[0].packet, Ctx("eth0", "eth0"));
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].verdict, NfVerdict::kAccept);
  // Not a local address: -m addrtype --dst-type LOCAL fails, no DNAT.
  auto other = nf.EvaluateHook(NfHook::kPrerouting, Tcp("198.51.100.7", 5555, "192.168.10.99", 30080), Ctx("eth0"));
  ASSERT_EQ(other.size(), 1u);
  EXPECT_FALSE(other[0].dnat);
}

TEST(NetfilterKubeProxy, ExternalTrafficPolicyLocalWithoutLocalEndpointsDrops) {
  const Netfilter& nf = KubeProxy();
  // External client -> LoadBalancer IP: no DNAT in nat, then filter KUBE-EXTERNAL-SERVICES drops.
  Packet p = Tcp("198.51.100.7", 5555, "203.0.113.10", 80);
  auto pre = nf.EvaluateHook(NfHook::kPrerouting, p, Ctx("eth0"));
  ASSERT_EQ(pre.size(), 1u);
  EXPECT_FALSE(pre[0].dnat);
  auto fwd = nf.EvaluateHook(NfHook::kForward, pre[0].packet, Ctx("eth0", "eth0"));
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].verdict, NfVerdict::kDrop);
  ASSERT_TRUE(fwd[0].decided_by.has_value());
  EXPECT_EQ(fwd[0].decided_by->table, NfTable::kFilter);
  EXPECT_EQ(fwd[0].decided_by->chain, "KUBE-EXTERNAL-SERVICES");
  EXPECT_THAT(fwd[0].decided_by->text, HasSubstr("has no local endpoints"));
  EXPECT_GT(fwd[0].decided_by->line, 0);
  // NodePort 30081 on the node: dropped in INPUT.
  auto np = nf.EvaluateHook(NfHook::kPrerouting, Tcp("198.51.100.7", 5555, "192.168.10.10", 30081), Ctx("eth0"));
  ASSERT_EQ(np.size(), 1u);
  EXPECT_FALSE(np[0].dnat);
  auto in = nf.EvaluateHook(NfHook::kInput, np[0].packet, Ctx("eth0"));
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].verdict, NfVerdict::kDrop);
  // Pod traffic to the LB IP short-circuits to the cluster-wide service chain.
  auto pod = nf.EvaluateHook(NfHook::kPrerouting, Tcp("10.244.1.5", 4000, "203.0.113.10", 80), Ctx("cni0"));
  ASSERT_EQ(pod.size(), 1u);
  EXPECT_EQ(pod[0].packet.dst, Ip("10.244.2.30"));
}

TEST(NetfilterKubeProxy, LoadBalancerSourceRanges) {
  const Netfilter& nf = KubeProxy();
  auto allowed = nf.EvaluateHook(NfHook::kPrerouting, Tcp("192.0.2.5", 5555, "203.0.113.11", 80), Ctx("eth0"));
  ASSERT_EQ(allowed.size(), 1u);
  EXPECT_EQ(allowed[0].packet.dst, Ip("10.244.1.40"));
  auto fwd = nf.EvaluateHook(NfHook::kForward, allowed[0].packet, Ctx("eth0", "cni0"));
  EXPECT_EQ(fwd[0].verdict, NfVerdict::kAccept);
  auto denied = nf.EvaluateHook(NfHook::kPrerouting, Tcp("198.51.100.7", 5555, "203.0.113.11", 80), Ctx("eth0"));
  ASSERT_EQ(denied.size(), 1u);
  EXPECT_FALSE(denied[0].dnat);
  fwd = nf.EvaluateHook(NfHook::kForward, denied[0].packet, Ctx("eth0", "eth0"));
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].verdict, NfVerdict::kDrop);
  EXPECT_EQ(fwd[0].decided_by->chain, "KUBE-PROXY-FIREWALL");
}

TEST(NetfilterKubeProxy, ServiceWithoutEndpointsIsRejectedInForwardAndOutput) {
  const Netfilter& nf = KubeProxy();
  Packet p = Tcp("10.244.1.5", 4000, "10.96.0.104", 80);
  auto pre = nf.EvaluateHook(NfHook::kPrerouting, p, Ctx("cni0"));
  ASSERT_EQ(pre.size(), 1u);
  EXPECT_FALSE(pre[0].dnat);
  auto fwd = nf.EvaluateHook(NfHook::kForward, pre[0].packet, Ctx("cni0", "eth0"));
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].verdict, NfVerdict::kReject);
  EXPECT_THAT(fwd[0].decided_by->text, HasSubstr("has no endpoints"));
}

TEST(NetfilterKubeProxy, ConntrackStatesAndNatOnlyForNew) {
  const Netfilter& nf = KubeProxy();
  Packet invalid = Tcp("10.244.1.5", 4000, "10.244.2.12", 8080);
  invalid.ct_state = CtState::kInvalid;
  auto fwd = nf.EvaluateHook(NfHook::kForward, invalid, Ctx("cni0", "eth0"));
  EXPECT_EQ(fwd[0].verdict, NfVerdict::kDrop);
  EXPECT_EQ(fwd[0].decided_by->chain, "KUBE-FORWARD");
  // An established packet to the cluster IP is not DNATed again by the nat table.
  Packet est = Tcp("10.244.1.5", 4000, "10.96.0.100", 80);
  est.ct_state = CtState::kEstablished;
  auto pre = nf.EvaluateHook(NfHook::kPrerouting, est, Ctx("cni0"));
  ASSERT_EQ(pre.size(), 1u);
  EXPECT_FALSE(pre[0].dnat);
  EXPECT_EQ(nf.EvaluateHook(NfHook::kForward, est, Ctx("cni0", "eth0"))[0].verdict, NfVerdict::kAccept);
}

TEST(NetfilterKubeProxy, RpfilterMatchInRaw) {
  const Netfilter& nf = KubeProxy();
  // 10.244.1.7 belongs behind cni0: arriving on eth0 it fails the reverse lookup -> DROP.
  auto spoofed = nf.EvaluateHook(NfHook::kPrerouting, Tcp("10.244.1.7", 1, "192.168.10.10", 22), Ctx("eth0"));
  ASSERT_EQ(spoofed.size(), 1u);
  EXPECT_EQ(spoofed[0].verdict, NfVerdict::kDrop);
  EXPECT_EQ(spoofed[0].decided_by->table, NfTable::kRaw);
  auto fine = nf.EvaluateHook(NfHook::kPrerouting, Tcp("10.244.2.7", 1, "192.168.10.10", 22), Ctx("eth0"));
  EXPECT_EQ(fine[0].verdict, NfVerdict::kAccept);
}

TEST(NetfilterKubeProxy, WithoutNetstackAddrtypeIsUnknownAndForks) {
  NfContext ctx;
  ctx.iif = "eth0";
  auto outs = KubeProxy().EvaluateHook(NfHook::kPrerouting,
                                       Tcp("198.51.100.7", 5555, "192.168.10.10", 30080), ctx);
  // rpfilter (raw) and addrtype (nat) each fork.
  ASSERT_GE(outs.size(), 2u);
  bool any_dnat = false, any_plain = false;
  for (const auto& o : outs) {
    EXPECT_FALSE(o.certain());
    ASSERT_FALSE(o.notes.empty());
    EXPECT_EQ(o.notes[0].kind, NfNote::Kind::kNeedsNetstack);
    if (o.verdict == NfVerdict::kAccept && o.dnat) any_dnat = true;
    if (o.verdict == NfVerdict::kAccept && !o.dnat) any_plain = true;
  }
  EXPECT_TRUE(any_dnat);
  EXPECT_TRUE(any_plain);
}

// ---- Generic semantics on hand-written rule sets. ----

Netfilter ParseOk(const std::string& text) {
  auto nf = Netfilter::Parse(text, "test.txt");
  EXPECT_TRUE(nf.ok()) << nf.status();
  return nf.ok() ? std::move(*nf) : Netfilter();
}

TEST(NetfilterSemantics, UnknownMatchForksOrAssumes) {
  Netfilter nf = ParseOk(
      "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n"
      "-A FORWARD -m set --match-set allowed src -j ACCEPT\n"
      "-A FORWARD -p tcp -m physdev --physdev-is-bridged -m tcp --dport 80 -j ACCEPT\n"
      "COMMIT\n");
  Packet p = Tcp("10.0.0.1", 1, "10.0.0.2", 80);
  auto outs = nf.EvaluateHook(NfHook::kForward, p, Ctx("a", "b"));
  ASSERT_EQ(outs.size(), 3u);
  int accepts = 0, drops = 0;
  for (const auto& o : outs) {
    EXPECT_FALSE(o.certain());
    EXPECT_FALSE(o.notes.empty());
    EXPECT_EQ(o.notes[0].kind, NfNote::Kind::kUnknownMatch);
    EXPECT_THAT(o.notes[0].what, HasSubstr("-m set"));
    EXPECT_EQ(o.notes[0].rule.line, 5);
    (o.verdict == NfVerdict::kAccept ? accepts : drops)++;
  }
  EXPECT_EQ(accepts, 2);
  EXPECT_EQ(drops, 1);  // both assumed not to match: the DROP policy
  NfEvalOptions no;
  no.unknown_match = NfUnknownMatch::kAssumeNoMatch;
  outs = nf.EvaluateHook(NfHook::kForward, p, Ctx("a", "b"), no);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].verdict, NfVerdict::kDrop);
  EXPECT_EQ(outs[0].decided_by->rule_number, 0);  // the policy
  EXPECT_EQ(outs[0].notes.size(), 2u);
  // A deterministic mismatch in the same rule makes the unknown match irrelevant: no fork.
  outs = nf.EvaluateHook(NfHook::kForward, Tcp("10.0.0.1", 1, "10.0.0.2", 81), Ctx("a", "b"));
  EXPECT_EQ(outs.size(), 2u);  // only the -m set rule forks
}

TEST(NetfilterSemantics, UnknownTargetContinuesGotoReturnsToCallersCaller) {
  Netfilter nf = ParseOk(
      "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n"
      "-A FORWARD -j FANCYTARGET --opt 1\n"
      "-A FORWARD -j A\n"
      "-A FORWARD -j DROP\n"
      "-A A -g B\n"
      "-A A -j ACCEPT\n"
      "-A B -j LOG --log-prefix \"b: \"\n"
      "COMMIT\n");
  auto outs = nf.EvaluateHook(NfHook::kForward, Tcp("1.1.1.1", 1, "2.2.2.2", 2), Ctx("a", "b"));
  ASSERT_EQ(outs.size(), 1u);
  // B ends -> back to FORWARD (not to A, which was left by -g) -> DROP.
  EXPECT_EQ(outs[0].verdict, NfVerdict::kDrop);
  EXPECT_EQ(outs[0].decided_by->chain, "FORWARD");
  EXPECT_EQ(outs[0].decided_by->rule_number, 3);
  ASSERT_EQ(outs[0].notes.size(), 1u);
  EXPECT_EQ(outs[0].notes[0].kind, NfNote::Kind::kUnknownTarget);
}

TEST(NetfilterSemantics, LoopIsCutAndMarksInterfacesMultiport) {
  Netfilter nf = ParseOk(
      "*mangle\n:PREROUTING ACCEPT [0:0]\n:X - [0:0]\n:Y - [0:0]\n"
      "-A PREROUTING -i cali+ -p udp -m multiport --dports 53,8000:8100 -j MARK --set-xmark 0x10/0xff\n"
      "-A PREROUTING -m mark --mark 0x10/0xff -j RETURN\n"
      "-A PREROUTING -j X\n"
      "-A X -j Y\n"
      "-A Y -j X\n"
      "COMMIT\n");
  Packet p;
  p.src = Ip("10.0.0.1");
  p.dst = Ip("10.0.0.2");
  p.proto = kProtoUdp;
  p.dport = 8050;
  p.mark = 0xab00;
  auto outs = nf.EvaluateHook(NfHook::kPrerouting, p, Ctx("cali1234"));
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].verdict, NfVerdict::kAccept);
  EXPECT_EQ(outs[0].packet.mark, 0xab10u);
  // Not a cali* interface: falls into the X <-> Y loop, cut by the depth limit.
  outs = nf.EvaluateHook(NfHook::kPrerouting, p, Ctx("eth0"));
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].verdict, NfVerdict::kDrop);
  EXPECT_EQ(outs[0].notes.back().kind, NfNote::Kind::kLoop);
}

TEST(NetfilterSemantics, OutcomeCapKeepsEvaluationBounded) {
  std::string text = "*nat\n:PREROUTING ACCEPT [0:0]\n";
  for (int i = 0; i < 20; ++i) {
    text += "-A PREROUTING -m statistic --mode random --probability 0.5 -j MARK --set-xmark 0x" +
            std::to_string(i + 1) + "/0xffffffff\n";
  }
  text += "COMMIT\n";
  Netfilter nf = ParseOk(text);
  NfEvalOptions opt;
  opt.max_outcomes = 16;
  auto outs = nf.EvaluateHook(NfHook::kPrerouting, Tcp("1.1.1.1", 1, "2.2.2.2", 2), Ctx("eth0"), opt);
  EXPECT_LE(outs.size(), 16u);
  bool capped = false;
  for (const auto& o : outs) {
    for (const auto& n : o.notes) capped |= n.kind == NfNote::Kind::kOutcomeCap;
  }
  EXPECT_TRUE(capped);
}

TEST(NetfilterSemantics, SnatDnatRedirectRanges) {
  Netfilter nf = ParseOk(
      "*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
      "-A PREROUTING -d 1.2.3.4/32 -p tcp --dport 80 -j DNAT --to-destination 10.0.0.5\n"
      "-A PREROUTING -d 1.2.3.5/32 -p tcp -j REDIRECT --to-ports 15001\n"
      "-A POSTROUTING -s 10.244.0.0/16 ! -o cni0 -j SNAT --to-source 192.168.10.10:1000-2000\n"
      "COMMIT\n");
  auto o = nf.EvaluateHook(NfHook::kPrerouting, Tcp("9.9.9.9", 1, "1.2.3.4", 80), Ctx("eth0"));
  EXPECT_EQ(o[0].packet.dst, Ip("10.0.0.5"));
  EXPECT_EQ(o[0].packet.dport, 80);  // no port given: unchanged
  o = nf.EvaluateHook(NfHook::kPrerouting, Tcp("9.9.9.9", 1, "1.2.3.5", 443), Ctx("eth0"));
  EXPECT_EQ(o[0].packet.dst, Ip("192.168.10.10"));  // primary address of the ingress device
  EXPECT_EQ(o[0].packet.dport, 15001);
  o = nf.EvaluateHook(NfHook::kPostrouting, Tcp("10.244.1.5", 1, "8.8.8.8", 53), Ctx({}, "eth0"));
  EXPECT_TRUE(o[0].snat);
  EXPECT_EQ(o[0].packet.src, Ip("192.168.10.10"));
  o = nf.EvaluateHook(NfHook::kPostrouting, Tcp("10.244.1.5", 1, "10.244.1.6", 53), Ctx({}, "cni0"));
  EXPECT_FALSE(o[0].snat);
}

TEST(NetfilterParse, ErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"-A FORWARD -j DROP\n", "line 1: rule outside a table"},
      {"*filter\n:FORWARD ACCEPT [0:0]\n-A NOPE -j DROP\nCOMMIT\n", "line 3: rule for undeclared chain 'NOPE'"},
      {"*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -m comment --comment \"open -j DROP\nCOMMIT\n",
       "line 3: unterminated quote"},
      {"*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -s 10.0.0.300/32 -j DROP\nCOMMIT\n",
       "line 3: invalid address '10.0.0.300/32'"},
      {"*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -j DROP\n", "table filter has no COMMIT"},
      {"*bogus\nCOMMIT\n", "line 1: unknown table 'bogus'"},
      {"*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -m mark --mark zz -j DROP\nCOMMIT\n",
       "line 3: invalid value for -m mark --mark"},
  };
  for (const auto& c : cases) {
    auto nf = Netfilter::Parse(c.text, "nodes/n1/iptables-save.txt");
    ASSERT_FALSE(nf.ok()) << c.text;
    EXPECT_EQ(nf.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(nf.status().message()), HasSubstr("nodes/n1/iptables-save.txt"));
    EXPECT_THAT(std::string(nf.status().message()), HasSubstr(c.want));
  }
}

TEST(NetfilterSemantics, AbsentTablesAndLegacyXlbLayout) {
  // Older kube-proxy: KUBE-XLB-* marks for drop when no local endpoint; KUBE-FIREWALL drops it.
  Netfilter nf = ParseOk(
      "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-FW-X - [0:0]\n"
      ":KUBE-XLB-X - [0:0]\n:KUBE-MARK-DROP - [0:0]\n"
      "-A PREROUTING -j KUBE-SERVICES\n"
      "-A KUBE-SERVICES -d 203.0.113.9/32 -p tcp -m tcp --dport 80 -j KUBE-FW-X\n"
      "-A KUBE-FW-X -s 192.0.2.0/24 -j KUBE-XLB-X\n"
      "-A KUBE-FW-X -j KUBE-MARK-DROP\n"
      "-A KUBE-XLB-X -m comment --comment \"default/x: has no local endpoints\" -j KUBE-MARK-DROP\n"
      "-A KUBE-MARK-DROP -j MARK --set-xmark 0x8000/0x8000\n"
      "COMMIT\n"
      "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n"
      "-A FORWARD -j KUBE-FIREWALL\n"
      "-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP\n"
      "COMMIT\n");
  for (const char* src : {"192.0.2.9", "198.51.100.9"}) {
    auto pre = nf.EvaluateHook(NfHook::kPrerouting, Tcp(src, 1, "203.0.113.9", 80), Ctx("eth0"));
    ASSERT_EQ(pre.size(), 1u);
    EXPECT_EQ(pre[0].packet.mark, 0x8000u);
    auto fwd = nf.EvaluateHook(NfHook::kForward, pre[0].packet, Ctx("eth0", "eth0"));
    EXPECT_EQ(fwd[0].verdict, NfVerdict::kDrop);
    EXPECT_EQ(fwd[0].decided_by->chain, "KUBE-FIREWALL");
  }
  EXPECT_FALSE(nf.HasTable(NfTable::kMangle));
  auto out = nf.EvaluateHook(NfHook::kOutput, Tcp("1.1.1.1", 1, "2.2.2.2", 2), Ctx({}, "eth0"));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, NfVerdict::kAccept);
}

}  // namespace
}  // namespace sarena::model
