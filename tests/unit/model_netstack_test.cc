// Netstack: iproute2 JSON parsing (real iproute2 6.1 samples in tests/data/model/iproute2),
// policy routing + LPM with the kernel's type/scope/metric/TOS rules, source selection,
// rp_filter (fib_validate_source), forwarding by ingress device, input/output routing.
#include "libsarena/base/file.h"
#include "libsarena/model/netstack.h"

#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/model/neigh.h"
#include "libsarena/model/snapshot.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

net::Ipv4 Ip(const char* s) { return net::Ipv4::from_string(s); }
net::Ipv4Prefix Pfx(const char* s) { return *net::ParseIpv4Prefix(s); }

std::string Fixture(const std::string& name) {
  auto text = ReadFileToString(sarena::testing::SourceDir() + "/tests/data/model/iproute2/" + name);
  EXPECT_OK(text);
  return text.ok() ? *text : std::string();
}

// The real node sample: links, addresses, routes (+ rules when `with_rules`).
Netstack RealNode(bool with_rules) {
  Netstack ns;
  EXPECT_OK(ns.ParseLinks(Fixture("ip-link.json")));
  EXPECT_OK(ns.ParseAddrs(Fixture("ip-addr.json")));
  EXPECT_OK(ns.ParseRoutes(Fixture("ip-route.json")));
  if (with_rules) EXPECT_TRUE(ns.ParseRules(Fixture("ip-rule.json")).ok());
  EXPECT_OK(ns.ParseNeighbors(Fixture("ip-neigh.json")));
  EXPECT_OK(ns.ParseFdb(Fixture("bridge-fdb.json")));
  EXPECT_OK(ns.ParseSysctls(Fixture("sysctl.txt")));
  ns.Finalize();
  return ns;
}

Flow Out(const char* dst) {
  Flow f;
  f.dst = Ip(dst);
  return f;
}

TEST(NetstackParse, LinksFromRealIproute2) {
  Netstack ns = RealNode(false);
  ASSERT_EQ(ns.interfaces().size(), 9u);
  const Interface* eth0 = ns.FindInterface("eth0");
  ASSERT_NE(eth0, nullptr);
  EXPECT_EQ(eth0->kind, "veth");
  EXPECT_EQ(eth0->mtu, 1500u);
  EXPECT_TRUE(eth0->admin_up);
  EXPECT_TRUE(eth0->CanTransmit());
  EXPECT_EQ(eth0->link_index, 2);    // peer in another netns: ifindex + netnsid
  EXPECT_EQ(eth0->link_netnsid, 0);
  const Interface* vb1 = ns.FindInterface("vb1");
  ASSERT_NE(vb1, nullptr);
  EXPECT_EQ(vb1->link, "vb0");       // peer in the same netns: by name
  EXPECT_FALSE(vb1->admin_up);
  const Interface* vb0 = ns.FindInterface("vb0");
  EXPECT_EQ(vb0->master, "br0");
  EXPECT_EQ(vb0->slave_kind, "bridge");
  EXPECT_EQ(vb0->operstate, "LOWERLAYERDOWN");
  EXPECT_FALSE(vb0->CanTransmit());  // up, but the peer is down: no carrier
  const Interface* vx = ns.FindInterface("vxlan.calico");
  ASSERT_NE(vx, nullptr);
  ASSERT_TRUE(vx->vxlan.has_value());
  EXPECT_EQ(vx->vxlan->vni, 4096u);
  EXPECT_EQ(vx->vxlan->port, 4789);
  EXPECT_EQ(vx->vxlan->dev, "eth0");
  EXPECT_FALSE(vx->vxlan->learning);
  EXPECT_EQ(vx->vxlan->local, Ip("192.168.10.10"));
  EXPECT_EQ(vx->mtu, 1450u);
  EXPECT_EQ(vx->operstate, "UNKNOWN");
  EXPECT_TRUE(vx->CanTransmit());
  EXPECT_EQ(ns.FindInterfaceByIndex(4), vx);
  ASSERT_TRUE(eth0->mac.has_value());
  EXPECT_EQ(net::FormatMac(*eth0->mac), "96:d3:18:47:94:b8");
}

TEST(NetstackParse, ADuplicateIfindexInIpLinkIsAnError) {
  Netstack ns;
  EXPECT_THAT(
      ns.ParseLinks(R"([{"ifindex":1,"ifname":"lo","flags":["LOOPBACK"]},
                       {"ifindex":2,"ifname":"eth0","flags":[]},
                       {"ifindex":2,"ifname":"veth0","flags":[]}])",
                    "nodes/n/ip-link.json"),
      sarena::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                ::testing::AllOf(::testing::HasSubstr("nodes/n/ip-link.json"),
                                                 ::testing::HasSubstr("[2].ifindex"),
                                                 ::testing::HasSubstr("duplicate ifindex 2"),
                                                 ::testing::HasSubstr("'eth0'"))));
  Netstack ok;
  EXPECT_OK(ok.ParseLinks(R"([{"ifindex":1,"ifname":"lo","flags":["LOOPBACK"]},
                              {"ifindex":2,"ifname":"eth0","flags":[]}])",
                          "nodes/n/ip-link.json"));
}

TEST(NetstackParse, AddressesKeepKernelOrderScopeAndSecondary) {
  Netstack ns = RealNode(false);
  const Interface* eth0 = ns.FindInterface("eth0");
  ASSERT_EQ(eth0->addresses.size(), 3u);  // IPv6 skipped
  EXPECT_EQ(eth0->addresses[0].local, Ip("10.9.9.9"));
  EXPECT_EQ(eth0->addresses[0].scope, Scope::kLink);
  EXPECT_EQ(eth0->addresses[1].local, Ip("192.168.10.10"));
  EXPECT_FALSE(eth0->addresses[1].secondary);
  EXPECT_TRUE(eth0->addresses[2].secondary);
  EXPECT_TRUE(ns.IsLocalAddress(Ip("192.168.10.11")));
  EXPECT_EQ(ns.InterfaceWithAddress(Ip("10.65.1.0"))->name, "vxlan.calico");
  EXPECT_FALSE(ns.IsLocalAddress(Ip("192.168.10.12")));
}

TEST(NetstackParse, RoutesTypesTablesProtocolsFlags) {
  Netstack ns = RealNode(false);
  int v4 = 0;
  for (const Route& r : ns.routes()) {
    (void)r;
    ++v4;
  }
  EXPECT_EQ(v4, 20);  // 27 entries, 7 IPv6 skipped
  auto t77 = ns.TableRoutes(77);
  ASSERT_EQ(t77.size(), 2u);
  EXPECT_EQ(t77[0]->type, RouteType::kThrow);
  bool saw_bird = false, saw_80 = false, saw_multipath = false, saw_linkdown = false;
  for (const Route& r : ns.routes()) {
    if (r.type == RouteType::kBlackhole) {
      EXPECT_EQ(r.protocol, RouteProtocol::kBird);
      EXPECT_EQ(r.dst, Pfx("10.65.1.0/26"));
      saw_bird = true;
    }
    if (r.protocol == static_cast<RouteProtocol>(80)) {
      saw_80 = true;
      EXPECT_TRUE(r.nexthops[0].onlink);
    }
    if (r.nexthops.size() == 2) {
      saw_multipath = true;
      EXPECT_EQ(r.nexthops[1].weight, 2u);
    }
    if (!r.nexthops.empty() && r.nexthops[0].linkdown) saw_linkdown = true;
  }
  EXPECT_TRUE(saw_bird && saw_80 && saw_multipath && saw_linkdown);
}

TEST(NetstackParse, RulesAllForms) {
  Netstack ns = RealNode(true);
  const auto& rules = ns.rules();
  ASSERT_EQ(rules.size(), 11u);
  EXPECT_EQ(rules[1].src, Pfx("10.65.1.0/24"));
  EXPECT_EQ(rules[1].table, 77u);
  EXPECT_TRUE(rules[2].invert);
  EXPECT_EQ(rules[2].fwmark, 0x4000u);
  EXPECT_EQ(rules[2].fwmask, 0x4000u);
  EXPECT_EQ(rules[2].iif, "eth0");
  EXPECT_EQ(rules[3].action, RuleAction::kProhibit);
  EXPECT_EQ(rules[3].oif, "cali12345678901");
  EXPECT_EQ(rules[4].action, RuleAction::kGoto);
  EXPECT_EQ(rules[4].goto_priority, 32766u);
  EXPECT_EQ(rules[5].suppress_prefixlen, 0u);
  EXPECT_EQ(rules[6].ipproto, kProtoTcp);
  EXPECT_EQ(rules[6].sport_start, 1000);
  EXPECT_EQ(rules[6].sport_end, 2000);
  EXPECT_EQ(rules[6].dport_start, 80);
  EXPECT_EQ(rules[6].tos, 0x10);
  EXPECT_EQ(rules[7].action, RuleAction::kBlackhole);
  EXPECT_EQ(rules[8].action, RuleAction::kNop);
  EXPECT_EQ(rules[10].table, kTableDefault);
}

TEST(NetstackParse, NeighborsAndFdb) {
  Netstack ns = RealNode(false);
  const Neighbor* gw = ns.FindNeighbor(Ip("192.168.10.1"), "eth0");
  ASSERT_NE(gw, nullptr);
  EXPECT_TRUE(gw->Usable());
  net::Mac remote = *net::ParseMac("66:77:88:99:aa:bb");
  auto fdb = ns.FindFdb("vxlan.calico", remote);
  ASSERT_EQ(fdb.size(), 1u);  // the exact entry wins
  EXPECT_EQ(fdb[0]->dst, Ip("192.168.10.20"));
  fdb = ns.FindFdb("vxlan.calico", *net::ParseMac("66:77:88:99:aa:bc"));
  ASSERT_EQ(fdb.size(), 1u);  // unknown MAC: the all-zero default entry
  EXPECT_EQ(fdb[0]->dst, Ip("192.168.10.21"));
  EXPECT_TRUE(ns.FindFdb("eth0", remote).empty());
}

// ---- Longest prefix match with types, scope, metric. ----

TEST(NetstackLookup, LongestPrefixAndRouteTypes) {
  Netstack ns = RealNode(false);  // default rules: local, main, default
  RouteResult r = ns.Lookup(Out("10.65.1.3"));
  ASSERT_TRUE(r.ok()) << r.ToString();
  EXPECT_EQ(r.oif, "cali12345678901");  // /32 beats the /26 blackhole
  EXPECT_EQ(r.type, RouteType::kUnicast);
  EXPECT_FALSE(r.gateway.has_value());
  EXPECT_EQ(r.table, kTableMain);

  r = ns.Lookup(Out("10.65.1.4"));
  EXPECT_EQ(r.error, EINVAL);
  EXPECT_EQ(r.type, RouteType::kBlackhole);
  r = ns.Lookup(Out("10.66.200.1"));
  EXPECT_EQ(r.error, EHOSTUNREACH);
  EXPECT_EQ(r.type, RouteType::kUnreachable);
  r = ns.Lookup(Out("10.67.0.1"));
  EXPECT_EQ(r.error, EACCES);
  EXPECT_EQ(r.type, RouteType::kProhibit);

  r = ns.Lookup(Out("10.70.3.3"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.gateway, Ip("192.168.10.20"));
  EXPECT_EQ(r.prefsrc, Ip("192.168.10.11"));  // the route's "src"

  r = ns.Lookup(Out("10.71.0.9"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.nexthops.size(), 2u);

  r = ns.Lookup(Out("192.168.10.10"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.type, RouteType::kLocal);
  EXPECT_EQ(r.table, kTableLocal);
  EXPECT_EQ(r.oif, "lo");
  r = ns.Lookup(Out("192.168.10.255"));
  EXPECT_EQ(r.type, RouteType::kBroadcast);

  r = ns.Lookup(Out("8.8.8.8"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.route->dst.prefix_length(), 0u);
  EXPECT_EQ(r.gateway, Ip("192.168.10.1"));
  // inet_select_addr(eth0, gw, universe): the link-scope 10.9.9.9 is skipped, .11 is secondary.
  EXPECT_EQ(r.prefsrc, Ip("192.168.10.10"));

  r = ns.Lookup(Out("10.68.0.1"));  // throw route lives in table 77, not consulted by default
  EXPECT_EQ(r.gateway, Ip("192.168.10.1"));
}

TEST(NetstackLookup, SourceForDeviceWithoutAddressFallsBackToAnotherDevice) {
  Netstack ns = RealNode(false);
  // cali* has no IPv4 address: the kernel takes a global address of another device
  // (loopback's 127.0.0.1 is host scope, eth0's 10.9.9.9 is link scope -> skipped).
  RouteResult r = ns.Lookup(Out("10.65.1.3"));
  EXPECT_EQ(r.prefsrc, Ip("192.168.10.10"));
  // A link-scope route accepts link-scope addresses on its own device.
  EXPECT_EQ(ns.SelectSourceAddress("eth0", std::nullopt, Scope::kLink), Ip("10.9.9.9"));
  EXPECT_EQ(ns.SelectSourceAddress("eth0", Ip("192.168.10.77"), Scope::kLink), Ip("192.168.10.10"));
}

TEST(NetstackLookup, LinkdownRoutesHonourIgnoreRoutesWithLinkdown) {
  Netstack ns = RealNode(false);
  RouteResult r = ns.Lookup(Out("10.73.1.1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.oif, "downdev");  // still used by default (ignore_routes_with_linkdown = 0)
  ns.mutable_sysctls().Set("net.ipv4.conf.all.ignore_routes_with_linkdown", "1");
  ns.Finalize();
  r = ns.Lookup(Out("10.73.1.1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.oif, "eth0");  // falls back to the default route
}

Netstack SmallNode() {
  Netstack ns;
  Interface lo;
  lo.name = "lo";
  lo.ifindex = 1;
  lo.flags = {"LOOPBACK", "UP", "LOWER_UP"};
  lo.admin_up = lo.lower_up = lo.loopback = true;
  lo.addresses.push_back({.local = Ip("127.0.0.1"), .prefixlen = 8, .scope = Scope::kHost});
  ns.AddInterface(lo);
  for (auto [name, idx, addr, len] : {std::tuple{"eth0", 2, "192.168.20.20", 24},
                                      std::tuple{"eth1", 3, "172.16.0.2", 24},
                                      std::tuple{"kube-bridge", 4, "10.32.2.1", 24}}) {
    Interface i;
    i.name = name;
    i.ifindex = idx;
    i.admin_up = i.lower_up = true;
    i.operstate = "UP";
    i.mtu = 1500;
    i.addresses.push_back({.local = Ip(addr), .prefixlen = static_cast<uint8_t>(len)});
    ns.AddInterface(i);
  }
  Interface tun;  // kube-router style tunnel without an address
  tun.name = "tun-nodea";
  tun.ifindex = 5;
  tun.kind = "ipip";
  tun.admin_up = tun.lower_up = true;
  tun.mtu = 1480;
  ns.AddInterface(tun);
  auto route = [&](const char* dst, const char* gw, const char* dev, uint32_t metric = 0,
                   Scope scope = Scope::kUniverse, uint32_t table = kTableMain,
                   RouteType type = RouteType::kUnicast) {
    Route r;
    r.dst = Pfx(dst);
    r.metric = metric;
    r.scope = scope;
    r.table = table;
    r.type = type;
    if (dev != nullptr || gw != nullptr) {
      Nexthop nh;
      if (gw) nh.gateway = Ip(gw);
      if (dev) nh.dev = dev;
      r.nexthops.push_back(nh);
    }
    ns.AddRoute(r);
  };
  route("0.0.0.0/0", "192.168.20.1", "eth0");
  route("192.168.20.0/24", nullptr, "eth0", 0, Scope::kLink);
  route("172.16.0.0/24", nullptr, "eth1", 0, Scope::kLink);
  route("10.32.2.0/24", nullptr, "kube-bridge", 0, Scope::kLink);
  route("10.32.1.0/24", nullptr, "tun-nodea", 0, Scope::kLink);
  route("10.80.0.0/16", "172.16.0.1", "eth1", 100);
  route("10.80.0.0/16", "192.168.20.5", "eth0", 50);  // lower metric wins
  for (const char* a : {"192.168.20.20", "172.16.0.2", "10.32.2.1"}) {
    route(a, nullptr, "eth0", 0, Scope::kHost, kTableLocal, RouteType::kLocal);
  }
  route("127.0.0.0/8", nullptr, "lo", 0, Scope::kHost, kTableLocal, RouteType::kLocal);
  ns.mutable_sysctls().Set("net.ipv4.ip_forward", "1");
  for (const char* d : {"all", "default", "lo", "eth0", "eth1", "kube-bridge", "tun-nodea"}) {
    ns.mutable_sysctls().Set(Sysctls::ConfKey(d, "forwarding"), "1");
    ns.mutable_sysctls().Set(Sysctls::ConfKey(d, "rp_filter"), "0");
  }
  return ns;
}

TEST(NetstackLookup, MetricTieBreakScopeAndBoundDevice) {
  Netstack ns = SmallNode();
  ns.Finalize();
  RouteResult r = ns.Lookup(Out("10.80.1.1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.gateway, Ip("192.168.20.5"));
  EXPECT_EQ(r.route->metric, 50u);
  // A socket bound to eth1 skips next hops on other devices.
  Flow bound = Out("10.80.1.1");
  bound.oif = "eth1";
  r = ns.Lookup(bound);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.gateway, Ip("172.16.0.1"));
  // flowi4_scope link (RTO_ONLINK): universe-scope gateway routes are skipped.
  Flow onlink = Out("10.80.1.1");
  onlink.scope = Scope::kLink;
  r = ns.Lookup(onlink);
  EXPECT_EQ(r.error, ENETUNREACH);
  // A TOS-specific route only serves that TOS.
  Route tos;
  tos.dst = Pfx("10.80.0.0/16");
  tos.tos = 0x10;
  tos.nexthops.push_back({.gateway = Ip("172.16.0.9"), .dev = "eth1"});
  ns.AddRoute(tos);
  ns.Finalize();
  Flow f = Out("10.80.1.1");
  f.tos = 0x10;
  EXPECT_EQ(ns.Lookup(f).gateway, Ip("172.16.0.9"));
  EXPECT_EQ(ns.Lookup(Out("10.80.1.1")).gateway, Ip("192.168.20.5"));
}

TEST(NetstackLookup, DownDeviceRoutesAreSkipped) {
  Netstack ns = SmallNode();
  Interface eth1 = *ns.FindInterface("eth1");
  eth1.admin_up = false;
  ns.AddInterface(eth1);
  ns.Finalize();
  Flow f = Out("172.16.0.7");
  RouteResult r = ns.Lookup(f);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.oif, "eth0");  // default route, as after the kernel flushed eth1's routes
}

// The kernel keeps the local route of an address whose device is down and still delivers to it
// (found by tests/privileged/diag_diff_test.sh: a pod reached the sarena node IP while
// sarena_host was down). Unicast routes through the device are gone.
TEST(NetstackLookup, LocalRouteOfDownDeviceStillDelivers) {
  Netstack ns = SmallNode();
  Interface host;
  host.name = "sarena_host";
  host.ifindex = 6;
  host.noarp = true;
  host.operstate = "DOWN";
  host.mtu = 1500;
  host.addresses.push_back({.local = Ip("10.244.9.1"), .prefixlen = 32});
  ns.AddInterface(host);
  Route local;
  local.dst = Pfx("10.244.9.1/32");
  local.type = RouteType::kLocal;
  local.table = kTableLocal;
  local.scope = Scope::kHost;
  local.prefsrc = Ip("10.244.9.1");
  local.nexthops.push_back(Nexthop{.dev = "sarena_host"});
  ns.AddRoute(local);
  Route cidr;
  cidr.dst = Pfx("10.244.9.0/24");
  cidr.nexthops.push_back(Nexthop{.dev = "sarena_host"});
  ns.AddRoute(cidr);
  ns.Finalize();
  Flow f;
  f.iif = "eth0";
  f.src = Ip("192.168.20.7");
  f.dst = Ip("10.244.9.1");
  InputResult in = ns.RouteInput(f);
  EXPECT_EQ(in.decision, InputDecision::kLocal) << in.detail;
  EXPECT_EQ(ns.Lookup(Out("10.244.9.1")).type, RouteType::kLocal);
  RouteResult other = ns.Lookup(Out("10.244.9.7"));  // 10.244.9.0/24 dev sarena_host: flushed
  EXPECT_EQ(other.oif, "eth0");
}

// ---- Policy rules. ----

TEST(NetstackRules, RealRuleFile) {
  Netstack ns = RealNode(true);
  // From a pod on cali*: rule 100 -> table 77 throws 10.68/16 -> rule 101 ("not ... iif eth0"
  // matches everything not from eth0) -> main.
  Flow f = Out("10.68.0.5");
  f.src = Ip("10.65.1.3");
  f.iif = "cali12345678901";
  RouteResult r = ns.Lookup(f);
  ASSERT_TRUE(r.ok()) << r.ToString();
  EXPECT_EQ(r.rule->priority, 101u);
  EXPECT_EQ(r.gateway, Ip("192.168.10.1"));
  // Rule 100 for a destination table 77 knows.
  f.dst = Ip("192.168.10.10");  // local table (rule 0) wins first
  EXPECT_EQ(ns.Lookup(f).type, RouteType::kLocal);
  // eth0 + mark 0x4000 + 10/8: rule 101 does not match (inverted); rule 104 suppresses a /0
  // result but not a /32 one.
  Flow g = Out("10.65.1.3");
  g.src = Ip("192.168.10.99");
  g.iif = "eth0";
  g.mark = 0x4000;
  r = ns.Lookup(g);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.rule->priority, 104u);
  g.dst = Ip("10.99.0.1");
  r = ns.Lookup(g);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.rule->priority, 32766u);  // suppressed at 104, found again by "lookup main"
  // oif rule: a socket bound to cali* is prohibited (rule 102), after 101 passes it by.
  Flow h = Out("10.65.1.3");
  h.iif = "eth0";
  h.mark = 0x4000;
  h.oif = "cali12345678901";
  r = ns.Lookup(h);
  EXPECT_EQ(r.error, EACCES);
  EXPECT_EQ(r.rule->priority, 102u);
}

TEST(NetstackRules, ActionsGotoNopFwmarkPortsIifLo) {
  Netstack ns = SmallNode();
  auto rule = [&](uint32_t prio, RuleAction a, uint32_t table = 0) {
    Rule r;
    r.priority = prio;
    r.action = a;
    r.table = table;
    return r;
  };
  Rule local = rule(0, RuleAction::kToTable, kTableLocal);
  ns.AddRule(local);
  Rule mark = rule(10, RuleAction::kToTable, 100);
  mark.fwmark = 0x10;
  mark.fwmask = 0xf0;
  ns.AddRule(mark);
  Rule bh = rule(20, RuleAction::kBlackhole);
  bh.dst = Pfx("10.99.0.0/16");
  ns.AddRule(bh);
  Rule go = rule(30, RuleAction::kGoto);
  go.goto_priority = 50;
  go.src = Pfx("10.32.2.0/24");
  ns.AddRule(go);
  Rule unr = rule(40, RuleAction::kUnreachable);
  unr.src = Pfx("10.32.2.0/24");
  ns.AddRule(unr);
  Rule nop = rule(50, RuleAction::kNop);
  ns.AddRule(nop);
  Rule port = rule(60, RuleAction::kProhibit);
  port.ipproto = kProtoTcp;
  port.dport_start = port.dport_end = 25;
  ns.AddRule(port);
  Rule lo = rule(70, RuleAction::kToTable, 101);
  lo.iif = "lo";
  ns.AddRule(lo);
  ns.AddRule(rule(32766, RuleAction::kToTable, kTableMain));
  Route r100;
  r100.dst = Pfx("0.0.0.0/0");
  r100.table = 100;
  r100.nexthops.push_back({.gateway = Ip("172.16.0.1"), .dev = "eth1"});
  ns.AddRoute(r100);
  Route r101 = r100;
  r101.table = 101;
  r101.nexthops[0].gateway = Ip("172.16.0.254");
  ns.AddRoute(r101);
  ns.Finalize();

  Flow f = Out("8.8.8.8");
  f.iif = "eth0";
  f.src = Ip("192.168.20.99");
  f.mark = 0x1f;  // (0x1f ^ 0x10) & 0xf0 == 0 -> matches fwmark 0x10/0xf0
  EXPECT_EQ(ns.Lookup(f).gateway, Ip("172.16.0.1"));
  f.mark = 0x20;
  EXPECT_EQ(ns.Lookup(f).gateway, Ip("192.168.20.1"));
  f.dst = Ip("10.99.1.1");
  RouteResult r = ns.Lookup(f);
  EXPECT_EQ(r.error, EINVAL);
  EXPECT_EQ(r.type, RouteType::kBlackhole);
  // goto 50 jumps over the unreachable rule 40.
  Flow pod = Out("8.8.8.8");
  pod.iif = "kube-bridge";
  pod.src = Ip("10.32.2.7");
  EXPECT_TRUE(ns.Lookup(pod).ok());
  // TCP to port 25 hits the prohibit rule.
  pod.proto = kProtoTcp;
  pod.dport = 25;
  EXPECT_EQ(ns.Lookup(pod).error, EACCES);
  // Locally generated traffic matches "iif lo".
  EXPECT_EQ(ns.Lookup(Out("8.8.8.8")).gateway, Ip("172.16.0.254"));
  // Without the goto the unreachable rule applies.
  Netstack ns2 = SmallNode();
  ns2.AddRule(local);
  ns2.AddRule(unr);
  ns2.AddRule(rule(32766, RuleAction::kToTable, kTableMain));
  ns2.Finalize();
  pod.dport = 80;
  r = ns2.Lookup(pod);
  EXPECT_EQ(r.error, ENETUNREACH);
  EXPECT_EQ(r.rule->priority, 40u);
}

// ---- Reverse path filtering (fib_validate_source) — the RPF-05 shape. ----

Netstack Rpf05(const char* all, const char* dev) {
  Netstack ns = SmallNode();
  ns.mutable_sysctls().Set("net.ipv4.conf.all.rp_filter", all);
  ns.mutable_sysctls().Set("net.ipv4.conf.tun-nodea.rp_filter", dev);
  ns.Finalize();
  return ns;
}

TEST(NetstackRpf, EffectiveValueIsMaxOfAllAndDevice) {
  EXPECT_EQ(Rpf05("1", "0").sysctls().RpFilter("tun-nodea").value, 1);
  EXPECT_EQ(Rpf05("0", "1").sysctls().RpFilter("tun-nodea").value, 1);
  EXPECT_EQ(Rpf05("1", "2").sysctls().RpFilter("tun-nodea").value, 2);
  EXPECT_EQ(Rpf05("2", "1").sysctls().RpFilter("tun-nodea").value, 2);
  EXPECT_EQ(Rpf05("0", "0").sysctls().RpFilter("tun-nodea").value, 0);
  Netstack none;
  none.Finalize();
  EXPECT_FALSE(none.sysctls().RpFilter("eth0").known);
}

TEST(NetstackRpf, StrictDropsPacketArrivingOnTunnelWhenRouteBackUsesEth0) {
  // node-a's underlay address arrives decapsulated on tun-nodea; the route back is the default
  // route via eth0.
  for (auto [all, dev] : {std::pair{"1", "0"}, std::pair{"0", "1"}}) {
    Netstack ns = Rpf05(all, dev);
    Flow f;
    f.src = Ip("192.168.10.10");
    f.dst = Ip("10.32.2.7");
    f.iif = "tun-nodea";
    InputResult in = ns.RouteInput(f);
    EXPECT_EQ(in.decision, InputDecision::kDrop);
    EXPECT_EQ(in.drop, InputDrop::kRpFilter) << in.detail;
    EXPECT_EQ(in.rpf.mode, 1);
    EXPECT_EQ(in.route.oif, "kube-bridge");  // forward route was fine
    EXPECT_EQ(in.rpf.reverse.oif, "eth0");
  }
}

TEST(NetstackRpf, LooseNeedsAnAddressOnTheIngressDevice) {
  Netstack ns = Rpf05("0", "2");
  Flow f;
  f.src = Ip("192.168.10.10");
  f.dst = Ip("10.32.2.7");
  f.iif = "tun-nodea";
  // tun-nodea has no IPv4 address: __fib_validate_source's no_addr path fails even in loose mode.
  InputResult in = ns.RouteInput(f);
  EXPECT_EQ(in.drop, InputDrop::kRpFilter);
  EXPECT_EQ(in.rpf.failure, RpfFailure::kNoAddressOnIngress);
  // With an address on the tunnel, loose mode passes (some unicast route back exists).
  Interface tun = *ns.FindInterface("tun-nodea");
  tun.addresses.push_back({.local = Ip("10.32.2.1"), .prefixlen = 32});
  ns.AddInterface(tun);
  ns.Finalize();
  in = ns.RouteInput(f);
  EXPECT_EQ(in.decision, InputDecision::kForward) << in.detail;
  // ...and strict still fails.
  ns.mutable_sysctls().Set("net.ipv4.conf.tun-nodea.rp_filter", "1");
  ns.Finalize();
  EXPECT_EQ(ns.RouteInput(f).drop, InputDrop::kRpFilter);
}

TEST(NetstackRpf, PolicyRouteBackThroughTunnelFixesStrictCheck) {
  Netstack ns = Rpf05("1", "0");
  // kube-router's fix: from the local pod CIDR, node-a's address is reached via the tunnel.
  Rule local;
  local.priority = 0;
  local.table = kTableLocal;
  ns.AddRule(local);
  Rule from_pods;
  from_pods.priority = 100;
  from_pods.src = Pfx("10.32.2.0/24");
  from_pods.table = 77;
  ns.AddRule(from_pods);
  Rule main;
  main.priority = 32766;
  main.table = kTableMain;
  ns.AddRule(main);
  Route back;
  back.dst = Pfx("192.168.10.10/32");
  back.table = 77;
  back.scope = Scope::kLink;
  back.nexthops.push_back({.dev = "tun-nodea"});
  ns.AddRoute(back);
  ns.Finalize();
  Flow f;
  f.src = Ip("192.168.10.10");
  f.dst = Ip("10.32.2.7");
  f.iif = "tun-nodea";
  InputResult in = ns.RouteInput(f);
  EXPECT_EQ(in.decision, InputDecision::kForward) << in.detail;
  EXPECT_TRUE(in.rpf.pass);
  EXPECT_EQ(in.rpf.reverse.oif, "tun-nodea");
  EXPECT_EQ(in.rpf.reverse.table, 77u);
}

TEST(NetstackRpf, OffStillRejectsOwnAddressAsSource) {
  Netstack ns = Rpf05("0", "0");
  RpfResult r = ns.ValidateSource(Ip("192.168.20.20"), Ip("10.32.2.7"), "eth0", "kube-bridge");
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.failure, RpfFailure::kMartianSource);
  ns.mutable_sysctls().Set("net.ipv4.conf.eth0.accept_local", "1");
  ns.Finalize();
  EXPECT_TRUE(ns.ValidateSource(Ip("192.168.20.20"), Ip("10.32.2.7"), "eth0", "kube-bridge").pass);
  EXPECT_TRUE(ns.ValidateSource(Ip("8.8.8.8"), Ip("10.32.2.7"), "eth0", "kube-bridge").pass);
}

TEST(NetstackRpf, RpfilterMatchSemantics) {
  Netstack ns = SmallNode();
  ns.Finalize();
  // 10.32.1.5 is routed via tun-nodea: arriving on eth0 fails strict, passes loose.
  EXPECT_FALSE(ns.ReversePathCheck(Ip("10.32.1.5"), Ip("192.168.20.20"), "eth0", 1, false).pass);
  EXPECT_TRUE(ns.ReversePathCheck(Ip("10.32.1.5"), Ip("192.168.20.20"), "eth0", 2, false).pass);
  EXPECT_TRUE(ns.ReversePathCheck(Ip("10.32.1.5"), Ip("192.168.20.20"), "tun-nodea", 1, false).pass);
}

// ---- Forwarding is decided by the ingress device (FWD-02). ----

TEST(NetstackForwarding, IngressDeviceDecides) {
  Netstack ns = SmallNode();
  ns.mutable_sysctls().Set("net.ipv4.conf.eth0.forwarding", "0");
  ns.Finalize();
  Flow req;
  req.src = Ip("10.32.2.9");
  req.dst = Ip("203.0.113.44");
  req.iif = "kube-bridge";
  InputResult in = ns.RouteInput(req);
  EXPECT_EQ(in.decision, InputDecision::kForward) << in.detail;
  EXPECT_EQ(in.route.oif, "eth0");  // leaving on eth0 is fine: egress forwarding is not checked
  Flow reply;
  reply.src = Ip("203.0.113.44");
  reply.dst = Ip("10.32.2.9");
  reply.iif = "eth0";
  in = ns.RouteInput(reply);
  EXPECT_EQ(in.drop, InputDrop::kForwardingDisabled);
  EXPECT_FALSE(in.ip_forward_disabled);
  EXPECT_THAT(in.detail, HasSubstr("eth0.forwarding = 0"));
  // Local delivery does not need forwarding.
  reply.dst = Ip("192.168.20.20");
  EXPECT_EQ(ns.RouteInput(reply).decision, InputDecision::kLocal);
  // With ip_forward = 0 the global switch is named too.
  ns.mutable_sysctls().Set("net.ipv4.ip_forward", "0");
  ns.Finalize();
  reply.dst = Ip("10.32.2.9");
  EXPECT_TRUE(ns.RouteInput(reply).ip_forward_disabled);
}

TEST(NetstackInput, MartiansBlackholeIngressDown) {
  Netstack ns = SmallNode();
  Route bh;
  bh.dst = Pfx("10.99.0.0/16");
  bh.type = RouteType::kBlackhole;
  ns.AddRoute(bh);
  ns.Finalize();
  Flow f;
  f.iif = "eth0";
  f.src = Ip("127.0.0.1");
  f.dst = Ip("10.32.2.7");
  EXPECT_EQ(ns.RouteInput(f).drop, InputDrop::kMartianSource);
  f.src = Ip("198.51.100.1");
  f.dst = Ip("10.99.0.1");
  EXPECT_EQ(ns.RouteInput(f).drop, InputDrop::kBlackhole);
  f.iif = "nope0";
  EXPECT_EQ(ns.RouteInput(f).drop, InputDrop::kIngressMissing);
  Interface eth1 = *ns.FindInterface("eth1");
  eth1.admin_up = false;
  ns.AddInterface(eth1);
  ns.Finalize();
  f.iif = "eth1";
  EXPECT_EQ(ns.RouteInput(f).drop, InputDrop::kIngressDown);
}

TEST(NetstackOutput, SourceSelectionBoundDeviceAndNonLocalSource) {
  Netstack ns = SmallNode();
  ns.Finalize();
  RouteResult r = ns.RouteOutput(Out("8.8.8.8"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.prefsrc, Ip("192.168.20.20"));
  r = ns.RouteOutput(Out("192.168.20.20"));
  EXPECT_EQ(r.type, RouteType::kLocal);
  EXPECT_EQ(r.oif, "lo");
  EXPECT_EQ(r.prefsrc, Ip("192.168.20.20"));
  Flow f = Out("8.8.8.8");
  f.src = Ip("1.2.3.4");  // not ours
  EXPECT_EQ(ns.RouteOutput(f).error, EINVAL);
  // Bound to a device without a matching route: assumed on-link (route.c "routing tables are
  // wrong" branch).
  Flow b = Out("10.200.0.1");
  b.oif = "eth1";
  r = ns.RouteOutput(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.oif, "eth1");
}

TEST(NetstackAddrType, LocalBroadcastUnicastWithDeviceLimit) {
  Netstack ns = RealNode(false);
  EXPECT_EQ(ns.AddressType(Ip("192.168.10.10")), RouteType::kLocal);
  EXPECT_EQ(ns.AddressType(Ip("192.168.10.10"), "eth0"), RouteType::kLocal);
  EXPECT_EQ(ns.AddressType(Ip("192.168.10.10"), "cali12345678901"), RouteType::kUnicast);
  EXPECT_EQ(ns.AddressType(Ip("192.168.10.255")), RouteType::kBroadcast);
  EXPECT_EQ(ns.AddressType(Ip("8.8.8.8")), RouteType::kUnicast);
  EXPECT_EQ(ns.AddressType(Ip("224.0.0.1")), RouteType::kMulticast);
}

TEST(NetstackSysctl, ParseAndKernelNames) {
  auto s = Sysctls::Parse(
      "net.ipv4.ip_forward = 1\n"
      "net.ipv4.conf.vxlan/calico.rp_filter = 2\n"
      "net.ipv4.ip_local_port_range = 32768\t60999\n"
      "sysctl: permission denied on key 'fs.protected_hardlinks'\n");
  ASSERT_OK(s);
  EXPECT_EQ(s->RpFilter("vxlan.calico").value, 2);
  EXPECT_EQ(s->GetInt("net.ipv4.ip_local_port_range"), 32768);
  EXPECT_EQ(s->IpForward().value, 1);
  auto bad = Sysctls::Parse("net.ipv4.ip_forward 1\n", "nodes/a/sysctl.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("nodes/a/sysctl.txt: line 1"));
}

TEST(NetstackSysctl, InterpretedKeysAreValidatedAtParse) {
  struct Case {
    const char* line;
    const char* want;
  };
  for (const Case& c : {
           Case{"net.ipv4.conf.all.rp_filter = banana",
                "key 'net.ipv4.conf.all.rp_filter': value 'banana' is not an integer"},
           Case{"net.ipv4.conf.all.rp_filter = 4294967296",  // not an int: no kernel prints it
                "key 'net.ipv4.conf.all.rp_filter': value 4294967296 out of range"},
           Case{"net.ipv4.conf.all.rp_filter = 1banana", "value '1banana' is not an integer"},
           Case{"net.ipv4.conf.all.rp_filter =", "value '' is not an integer"},
           Case{"net.ipv4.conf.eth0.forwarding = banana",
                "key 'net.ipv4.conf.eth0.forwarding': value 'banana' is not an integer"},
           Case{"net.ipv4.conf.vxlan/calico.arp_ignore = 1.5",
                "key 'net.ipv4.conf.vxlan/calico.arp_ignore': value '1.5' is not an integer"},
           Case{"net.ipv4.conf.default.proxy_arp = on",
                "key 'net.ipv4.conf.default.proxy_arp': value 'on' is not an integer"},
           Case{"net.ipv4.ip_forward = 0x1", "key 'net.ipv4.ip_forward': value '0x1' is not an integer"},
           Case{"net.bridge.bridge-nf-call-iptables = 2",
                "key 'net.bridge.bridge-nf-call-iptables': value 2 out of range [0, 1]"},
           Case{"net.ipv4.fib_multipath_hash_policy = 4",
                "key 'net.ipv4.fib_multipath_hash_policy': value 4 out of range [0, 3]"},
           Case{"net.bridge.bridge-nf-call-iptables = yes",
                "key 'net.bridge.bridge-nf-call-iptables': value 'yes' is not an integer"},
           Case{"net/ipv4/conf/all/src_valid_mark = x",  // '/' separators, normalised
                "key 'net.ipv4.conf.all.src_valid_mark': value 'x' is not an integer"},
       }) {
    auto s = Sysctls::Parse(absl::StrCat("net.ipv4.conf.all.log_martians = 0\n", c.line, "\n"),
                            "nodes/n1/sysctl.txt");
    ASSERT_FALSE(s.ok()) << c.line << " parsed";
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument)) << c.line;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("parse nodes/n1/sysctl.txt: line 2: "))
        << c.line;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.want)) << c.line;
  }
  // Keys the model does not interpret stay free-form. The interpreted ones load with every value
  // the kernel stores (proc_dointvec takes any int: rp_filter 3 is loose, ip_forward 2 is on),
  // and the bounded ones at their bounds.
  auto ok = Sysctls::Parse(
      "net.ipv4.conf.all.log_martians = banana\n"
      "net.ipv4.ip_local_port_range = 32768\t60999\n"
      "net.ipv4.conf.all.arp_ignore = 8\n"
      "net.ipv4.conf.eth0.rp_filter = 2\n"
      "net.ipv4.conf.eth1.rp_filter = -1\n"
      "net.ipv4.conf.eth0.forwarding = 0\n"
      "net.ipv4.ip_forward = 2\n"
      "net.ipv4.fib_multipath_hash_policy = 3\n",
      "nodes/n1/sysctl.txt");
  ASSERT_OK(ok);
  EXPECT_EQ(ok->RpFilter("eth0").value, 2);
  EXPECT_EQ(ok->IpForward().value, 2);
  EXPECT_EQ(Sysctls::Interpreted("net.ipv4.conf.lxc.abc.rp_filter"), SysctlCheck::AnyInt());
  EXPECT_EQ(Sysctls::Interpreted("net.ipv4.conf.lxc.abc.rp_filter")->kind,
            SysctlCheck::Kind::kAnyInt);
  EXPECT_EQ(Sysctls::Interpreted("net.ipv4.fib_multipath_hash_policy"),
            SysctlCheck::Bounded(0, 3));
  EXPECT_FALSE(Sysctls::Interpreted("net.ipv4.conf.all.log_martians").has_value());
  EXPECT_FALSE(Sysctls::Interpreted("net.ipv4.conf.rp_filter").has_value());  // no <dev>
}

TEST(NetstackSysctl, DuplicateKeyIsAnErrorNamingBothLines) {
  // sysctl -a prints each key once: a repeated key is refused even with the same value, and
  // whatever its spelling.
  for (const char* second : {"net.ipv4.conf.all.rp_filter = 1",
                             "net.ipv4.conf.all.rp_filter = 2",
                             "net/ipv4/conf/all/rp_filter = 1",
                             "net.ipv4.conf.all.log_martians_typo = 1\nnet.ipv4.conf.all.rp_filter = 1"}) {
    std::string text = absl::StrCat("net.ipv4.ip_forward = 1\nnet.ipv4.conf.all.rp_filter = 1\n",
                                    second, "\n");
    auto s = Sysctls::Parse(text, "nodes/n1/sysctl.txt");
    ASSERT_FALSE(s.ok()) << second;
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr("parse nodes/n1/sysctl.txt: line ")) << second;
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr("key 'net.ipv4.conf.all.rp_filter' (value '")) << second;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("is already set at line 2 (value '1')"))
        << second;
  }
  // A key the model does not interpret may repeat: procps' sysctl -a prints a multi-line value
  // as one `key = line` per line (this machine's fs.pipe-keep, kernel.core_modes). The first
  // line is kept; the interpreted keys around it still load.
  auto s = Sysctls::Parse(
      "fs.pipe-keep = copy 0\nfs.pipe-keep = copy 1\nkernel.core_modes = a\nkernel.core_modes = b\n"
      "net.ipv4.ip_forward = 1\n",
      "sysctl.txt");
  ASSERT_OK(s);
  EXPECT_EQ(s->Get("fs.pipe-keep"), "copy 0");
  EXPECT_EQ(s->Get("net.ipv4.ip_forward"), "1");
}

TEST(NetstackSysctl, DottedDeviceNameAppliesInEverySpelling) {
  // Device "vxlan.calico": sysctl -a writes net.ipv4.conf.vxlan/calico.forwarding, /proc/sys has
  // net/ipv4/conf/vxlan.calico/forwarding, and an unescaped dotted key names it too.
  for (const char* line : {"net.ipv4.conf.vxlan/calico.forwarding = 0",
                           "net/ipv4/conf/vxlan.calico/forwarding = 0",
                           "net.ipv4.conf.vxlan.calico.forwarding = 0"}) {
    auto s = Sysctls::Parse(absl::StrCat("net.ipv4.ip_forward = 1\n"
                                         "net.ipv4.conf.all.forwarding = 1\n",
                                         line, "\n"));
    ASSERT_OK(s) << line;
    EXPECT_EQ(s->Forwarding("vxlan.calico").value, 0) << line;
    EXPECT_TRUE(s->Forwarding("vxlan.calico").known) << line;
    EXPECT_EQ(s->Get("net.ipv4.conf.vxlan/calico.forwarding"), "0") << line;
    EXPECT_EQ(s->Forwarding("eth0").value, 1) << line;  // others: conf.all
  }
  auto rp = Sysctls::Parse("net/ipv4/conf/vxlan.calico/rp_filter = 2\n");
  ASSERT_OK(rp);
  EXPECT_EQ(rp->RpFilter("vxlan.calico").value, 2);
  // The two spellings of one key contradict each other: refused, not resolved by order.
  auto both = Sysctls::Parse(
      "net.ipv4.conf.vxlan/calico.forwarding = 1\nnet/ipv4/conf/vxlan.calico/forwarding = 0\n",
      "sysctl.txt");
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(std::string(both.status().message()),
              HasSubstr("line 2: key 'net.ipv4.conf.vxlan/calico.forwarding' (value '0') is "
                        "already set at line 1 (value '1')"));
  // A corrupt value in the path spelling names the canonical key.
  auto bad = Sysctls::Parse("net/ipv4/conf/vxlan.calico/forwarding = x\n", "sysctl.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("key 'net.ipv4.conf.vxlan/calico.forwarding': value 'x' is not an integer"));
}

TEST(NetstackSysctl, ConfIntAgreesWithTheRawValueAfterParseAndSet) {
  // ConfInt reads the interpreted keys from a per-device table: it must say what
  // GetInt(ConfKey(dev, name)) says for every key, after Parse and after each Set.
  auto s = Sysctls::Parse(
      "net.ipv4.conf.all.rp_filter = 1\n"
      "net.ipv4.conf.vxlan/calico.proxy_arp = 1\n"
      "net.ipv4.conf.eth0.log_martians = 1\n");
  ASSERT_OK(s);
  auto agree = [&](absl::string_view dev, absl::string_view name) {
    EXPECT_EQ(s->ConfInt(dev, name), s->GetInt(Sysctls::ConfKey(dev, name)))
        << dev << " " << name;
  };
  agree("all", "rp_filter");
  agree("vxlan.calico", "proxy_arp");
  agree("eth0", "log_martians");  // not interpreted: the raw value
  agree("eth0", "rp_filter");     // absent
  EXPECT_EQ(s->ConfInt("vxlan.calico", "proxy_arp"), 1);
  s->Set(Sysctls::ConfKey("eth0", "rp_filter"), "2");
  EXPECT_EQ(s->ConfInt("eth0", "rp_filter"), 2);
  EXPECT_EQ(s->RpFilter("eth0").value, 2);
  s->Set(Sysctls::ConfKey("eth0", "rp_filter"), "0");
  EXPECT_EQ(s->ConfInt("eth0", "rp_filter"), 0);
  EXPECT_EQ(s->RpFilter("eth0").value, 1) << "max(all, dev)";
  s->Set(Sysctls::ConfKey("eth0", "rp_filter"), "x");  // Set takes any text
  agree("eth0", "rp_filter");
  EXPECT_FALSE(s->ConfInt("eth0", "rp_filter").has_value());
  // A key set with the device's '.' unescaped is not the kernel's spelling of that device.
  s->Set("net.ipv4.conf.vxlan.calico.forwarding", "1");
  agree("vxlan.calico", "forwarding");
  EXPECT_FALSE(s->ConfInt("vxlan.calico", "forwarding").has_value());
}

TEST(NetstackSysctl, NonCanonicalIntegerInAnInterpretedKeyIsRefused) {
  // proc_dointvec prints "%d": a dump never holds "+1" or "01".
  for (const char* v : {"+1", "01", "-0", "00", "+0", "-01"}) {
    auto s = Sysctls::Parse(absl::StrCat("net.ipv4.conf.all.rp_filter = ", v, "\n"),
                            "nodes/n1/sysctl.txt");
    ASSERT_FALSE(s.ok()) << v;
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument)) << v;
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr(absl::StrCat("parse nodes/n1/sysctl.txt: line 1: key "
                                       "'net.ipv4.conf.all.rp_filter': value '", v,
                                       "' is not an integer as the kernel prints it")))
        << v;
  }
  auto h = Sysctls::Parse("net.ipv4.fib_multipath_hash_policy = 01\n");
  ASSERT_FALSE(h.ok());
  // The canonical forms load; free-form keys keep any text.
  auto ok = Sysctls::Parse(
      "net.ipv4.conf.all.rp_filter = 0\nnet.ipv4.conf.eth0.rp_filter = -1\n"
      "net.ipv4.conf.eth1.rp_filter = 10\nnet.core.somaxconn = 04096\n");
  ASSERT_OK(ok);
  EXPECT_EQ(ok->RpFilter("eth1").value, 10);
}

TEST(NetstackParse, EmptyLinkListIsRefused) {
  // Every netns has lo, which `ip -j link` always lists: [] is a failed capture, not "no links".
  for (const char* json : {"[]", R"({"items": []})"}) {
    Netstack ns;
    absl::Status st = ns.ParseLinks(json, "nodes/n1/ip-link.json");
    ASSERT_FALSE(st.ok()) << json;
    EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(std::string(st.message()), HasSubstr("parse nodes/n1/ip-link.json: "));
    EXPECT_THAT(std::string(st.message()), HasSubstr("no links: ip -j link always lists lo"));
    EXPECT_FALSE(ns.Has(NetstackSource::kLinks));
  }
}

TEST(NetstackParse, NullOrMissingLinkFlagsAreAnErrorNotDown) {
  struct Case {
    const char* json;
    const char* want;
  };
  for (const Case& c : {
           Case{R"([{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536},
                    {"ifindex":2,"ifname":"eth0","flags":null,"mtu":1500,"operstate":"UP"}])",
                "parse ip-link.json: [1].flags: null: expected an array of strings"},
           Case{R"([{"ifindex":2,"ifname":"eth0","mtu":1500,"operstate":"UP"}])",
                "parse ip-link.json: [0].flags: missing"},
       }) {
    Netstack ns;
    absl::Status st = ns.ParseLinks(c.json, "ip-link.json");
    ASSERT_FALSE(st.ok()) << c.json;
    EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.want)));
  }
}

TEST(NetstackParse, LinkMtuBelowIpv4MinimumLoads) {
  // Below IPV4_MIN_MTU (68) the kernel only removes the device's IPv4 configuration; the mtu is
  // valid where the driver's min_mtu is 0 (lo, dummy, ifb) and CAN devices have 16: a real
  // node's ip-link.json with such a device loads.
  Netstack ns;
  absl::Status st = ns.ParseLinks(
      R"([{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP"],"mtu":0},
          {"ifindex":4,"ifname":"can0","flags":["NOARP","UP"],"mtu":16,"link_type":"can"},
          {"ifindex":5,"ifname":"dummy0","flags":["BROADCAST","NOARP"],"mtu":67}])",
      "nodes/n1/ip-link.json");
  ASSERT_OK(st);
  ASSERT_NE(ns.FindInterface("can0"), nullptr);
  EXPECT_EQ(ns.FindInterface("can0")->mtu, 16u);
  Netstack bad;
  EXPECT_FALSE(bad.ParseLinks(R"([{"ifindex":2,"ifname":"eth0","flags":["UP"],"mtu":-1}])").ok());
}

TEST(NetstackParse, MalformedNeighbourLladdrIsALoadError) {
  for (const char* ll : {"zz:zz:zz:zz:zz:zz", "not-a-mac", "aa:bb:cc:dd:ee:f", "aa-bb-cc-dd-ee-ff",
                         "02:42:ac:11:00", ""}) {
    Netstack ns;
    absl::Status st = ns.ParseNeighbors(
        absl::StrCat(R"([{"dst":"10.0.0.1","dev":"eth0","lladdr":"02:00:00:00:00:01","state":["REACHABLE"]},)"
                     R"({"dst":"10.0.0.2","dev":"eth0","lladdr":")", ll, R"(","state":["REACHABLE"]}])"),
        "nodes/n1/ip-neigh.json");
    ASSERT_FALSE(st.ok()) << ll;
    EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(std::string(st.message()), HasSubstr("parse nodes/n1/ip-neigh.json: [1].lladdr: "))
        << ll;
    EXPECT_THAT(std::string(st.message()), HasSubstr(absl::StrCat("'", ll, "'"))) << ll;
  }
  // Other link types' addresses as iproute2 prints them read as no MAC: IPv4 or IPv6 text on a
  // tunnel,
  // hex bytes of another length on a device that ip-link.json says is not Ethernet.
  Netstack ns;
  ASSERT_TRUE(ns.ParseLinks(R"([{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP"],"mtu":65536},
                               {"ifindex":9,"ifname":"ib0","flags":["UP"],"mtu":2044,
                                "link_type":"infiniband"}])")
                  .ok());
  absl::Status st = ns.ParseNeighbors(
      R"([{"dst":"10.0.0.1","dev":"tunl0","lladdr":"192.168.1.2","state":["PERMANENT"]},)"
      R"({"dst":"10.0.0.3","dev":"ib0","lladdr":"80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0f:4e:7d","state":["REACHABLE"]},)"
      R"({"dst":"10.0.0.4","dev":"ip6tnl1","lladdr":"fd00::2","state":["PERMANENT"]},)"
      R"({"dst":"10.0.0.5","dev":"gre6","lladdr":"::","state":["NOARP"]},)"
      R"({"dst":"10.0.0.2","dev":"eth0","state":["FAILED"]}])");
  EXPECT_OK(st);
}

TEST(NetstackParse, NeighbourStateIsTheSetOfNudBits) {
  // iproute2 prints one name per NUD_* bit of ndm_state, in bit order, and no "state" at all for
  // NUD_NONE; an array with several names is one entry in several states.
  Netstack ns;
  absl::Status st = ns.ParseNeighbors(
      R"([{"dst":"10.0.0.1","dev":"eth0","lladdr":"02:00:00:00:00:01","state":["REACHABLE"]},)"
      R"({"dst":"10.0.0.2","dev":"eth0","lladdr":"02:00:00:00:00:02","state":["STALE","NOARP"]},)"
      R"({"dst":"10.0.0.3","dev":"tunl0","state":["NOARP","PERMANENT"]},)"
      R"({"dst":"10.0.0.4","dev":"eth0","lladdr":"02:00:00:00:00:04"},)"
      R"({"dst":"10.0.0.5","dev":"eth0","state":[]},)"
      R"({"dst":"10.0.0.6","dev":"eth0","lladdr":"02:00:00:00:00:06","state":["DELAY","FAILED"]},)"
      R"({"dst":"10.0.0.7","dev":"eth0","state":"INCOMPLETE"}])");
  ASSERT_OK(st);
  const std::vector<Neighbor>& n = ns.neighbors();
  ASSERT_EQ(n.size(), 7u);
  EXPECT_EQ(n[0].state, NeighState::kReachable);
  EXPECT_EQ(n[0].StateNames(), "REACHABLE");
  EXPECT_TRUE(n[0].Usable());
  EXPECT_EQ(n[1].state, NeighState::kStale | NeighState::kNoArp);
  EXPECT_EQ(n[1].StateNames(), "STALE,NOARP");
  EXPECT_EQ(n[2].state, NeighState::kNoArp | NeighState::kPermanent);
  EXPECT_EQ(n[2].StateNames(), "NOARP,PERMANENT");
  EXPECT_TRUE(n[2].Usable());  // no lladdr needed on a NOARP entry
  EXPECT_EQ(n[3].state, NeighState::kNone);  // NUD_NONE: no "state"
  EXPECT_EQ(n[3].StateNames(), "");
  EXPECT_TRUE(n[3].Usable());
  EXPECT_EQ(n[4].state, NeighState::kNone);
  EXPECT_FALSE(n[4].Usable());  // neither an lladdr nor NOARP / PERMANENT
  EXPECT_EQ(n[5].state, NeighState::kDelay | NeighState::kFailed);
  EXPECT_FALSE(n[5].Usable());  // FAILED among the states
  EXPECT_EQ(n[6].state, NeighState::kIncomplete);  // a lone string reads as a one-name array
  EXPECT_FALSE(n[6].Usable());
}

TEST(NeighborLladdr, StaticStatesAreNeverReResolved) {
  // PERMANENT or NOARP among the states: the entry stays wrong until someone replaces it.
  Interface receiver;
  receiver.name = "eth0";
  receiver.mac = *net::ParseMac("02:00:00:00:00:02");
  Neighbor n;
  n.dst = Ip("10.0.0.5");
  n.dev = "veth1";
  n.lladdr = *net::ParseMac("02:00:00:00:00:01");
  n.state = NeighState::kNoArp | NeighState::kPermanent;
  NeighCheck c = CheckNeighborLladdr(n, receiver, "pod a/b");
  EXPECT_EQ(c.fit, NeighFit::kStaleStatic);
  EXPECT_THAT(c.detail, ::testing::StartsWith("noarp,permanent neighbour entry 10.0.0.5 lladdr "
                                              "02:00:00:00:00:01 on veth1, but eth0 of pod a/b"));
  n.state = NeighState::kStale;
  c = CheckNeighborLladdr(n, receiver, "pod a/b");
  EXPECT_EQ(c.fit, NeighFit::kStaleDynamic);
  EXPECT_THAT(c.detail, ::testing::StartsWith("stale neighbour entry 10.0.0.5"));
  n.state = NeighState::kNone;  // no state printed: no word for it
  EXPECT_THAT(CheckNeighborLladdr(n, receiver, "pod a/b").detail,
              ::testing::StartsWith("neighbour entry 10.0.0.5"));
  n.lladdr = receiver.mac;
  EXPECT_EQ(CheckNeighborLladdr(n, receiver, "pod a/b").fit, NeighFit::kMatches);
}

TEST(NetstackParse, UnknownNeighbourStateIsALoadError) {
  // iproute2 prints only the eight NUD_* names, upper case: anything else is not its output.
  for (const char* bad : {"BOGUS", "reachable", "NONE", "REACHABLE,PERMANENT", ""}) {
    Netstack ns;
    absl::Status st = ns.ParseNeighbors(
        absl::StrCat(R"([{"dst":"10.0.0.1","dev":"eth0","lladdr":"02:00:00:00:00:01","state":["REACHABLE"]},)"
                     R"({"dst":"10.0.0.2","dev":"eth0","state":["STALE",")", bad, R"("]}])"),
        "nodes/n1/ip-neigh.json");
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument)) << bad;
    EXPECT_EQ(st.message(), absl::StrCat("parse nodes/n1/ip-neigh.json: [1].state[1]: invalid "
                                         "neighbour state '", bad, "'"));
  }
  Netstack ns;
  absl::Status st = ns.ParseNeighbors(R"([{"dst":"10.0.0.2","dev":"eth0","state":[2]}])");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("[0].state[0]: expected a string"));
}

TEST(NetstackRoute, RouteOnADeviceTheLinksLackIsReturnedNotSkipped) {
  // An inconsistent snapshot: ip-route.json names ghost0, ip-link.json has no such device. The
  // lookup must not fall through to the default route.
  std::string routes = Fixture("ip-route.json");
  ASSERT_EQ(routes.substr(0, 1), "[");
  routes.insert(1, R"({"dst":"10.99.0.0/16","dev":"ghost0","scope":"link","flags":[]},)");
  Netstack ns;
  ASSERT_OK(ns.ParseLinks(Fixture("ip-link.json")));
  ASSERT_OK(ns.ParseAddrs(Fixture("ip-addr.json")));
  ASSERT_OK(ns.ParseRoutes(routes));
  ns.Finalize();
  RouteResult r = ns.Lookup(Out("10.99.1.1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.oif, "ghost0");
  EXPECT_EQ(ns.FindInterface(r.oif), nullptr);
}

TEST(NetstackParse, MalformedNamesFileAndField) {
  Netstack ns;
  absl::Status st = ns.ParseRoutes(R"([{"dst":"10.0.0.0/8","dev":"eth0"},{"dst":"10.1.2.300"}])",
                                   "nodes/n1/ip-route.json");
  ASSERT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(st.message()), HasSubstr("nodes/n1/ip-route.json"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("[1].dst"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("10.1.2.300"));
  st = ns.ParseLinks(R"([{"ifindex":1,"ifname":"lo","mtu":"big"}])", "ip-link.json");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("[0].mtu"));
  st = ns.ParseRules(R"([{"priority":1, "table": "main",}])", "ip-rule.json");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("ip-rule.json: JSON syntax error at byte 32"));
  // Route metrics as `ip -j route` prints them (captured from `ip route add ... mtu 1400 advmss 1360`).
  Netstack m;
  ASSERT_TRUE(m.ParseRoutes(R"([{"dst": "10.2.0.0/16", "gateway": "10.1.1.2", "dev": "va", "flags": [],
                                 "metrics": [{"mtu": 1400, "advmss": 1360}]}])").ok());
  EXPECT_EQ(m.routes()[0].mtu, 1400u);
  EXPECT_EQ(m.routes()[0].advmss, 1360u);
  EXPECT_THAT(m.routes()[0].ToString(), HasSubstr("mtu 1400"));
  st = ns.ParseRoutes(R"([{"dst":"10.0.0.0/8","type":"weird"}])", "ip-route.json");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("[0].type"));
}

TEST(NetstackParse, HandWrittenIpipTunl0) {
  // Format of iproute2 ip/link_iptnl.c (this host has no ipip module to capture a real one).
  Netstack ns;
  ASSERT_TRUE(ns.ParseLinks(R"([{"ifindex":5,"ifname":"tunl0","flags":["NOARP","UP","LOWER_UP"],
      "mtu":1480,"operstate":"UNKNOWN","link_type":"ipip","address":"0.0.0.0",
      "linkinfo":{"info_kind":"ipip","info_data":{"proto":"ipip","remote":"any","local":"any",
      "ttl":0,"pmtudisc":true}}}])")
                  .ok());
  ns.Finalize();
  const Interface* t = ns.FindInterface("tunl0");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->tunnel.has_value());
  EXPECT_EQ(t->tunnel->proto, "ipip");
  EXPECT_FALSE(t->tunnel->remote.has_value());
  EXPECT_FALSE(t->mac.has_value());
  EXPECT_TRUE(t->noarp);
  EXPECT_TRUE(t->CanTransmit());
}

TEST(NetstackParse, MissingSourcesAreVisible) {
  Netstack ns;
  ASSERT_OK(ns.ParseRoutes(Fixture("ip-route.json")));
  ns.Finalize();
  EXPECT_TRUE(ns.Has(NetstackSource::kRoutes));
  EXPECT_FALSE(ns.Has(NetstackSource::kRules));
  EXPECT_FALSE(ns.Has(NetstackSource::kSysctls));
  EXPECT_EQ(ns.rules().size(), 3u);  // kernel defaults assumed
  // Without link data next hops are assumed alive; lookups still work.
  EXPECT_TRUE(ns.Lookup(Out("10.65.1.3")).ok());
}

}  // namespace
}  // namespace sarena::model
