// Privileged tests of sarena::nl addresses, routes, policy rules and neighbours against the real
// kernel, in namespaces the test creates (the root namespace is never modified). Every result is
// checked twice: through our own dump/lookup and through iproute2's JSON output (`ip -j`).
//
// Topology per test: namespace A with veth `va` (10.234.0.1/24, up) whose peer `vb` lives in
// namespace B (10.234.0.2/24, up).

// Options structs are filled with designated initializers (docs/architecture.md "Conventions");
// omitted members keep their defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/netns.h"
#include "libsarena/netlink/socket.h"
#include "tests/lib/ip_json.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::nl {
namespace {

using ::sarena::testing::RunOk;
using ::sarena::testing::ScopedNetns;
using ::sarena::testing::UniqueName;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

using ::sarena::testing::IpJson;
using ::sarena::testing::ListHas;
using ::sarena::testing::Num;
using ::sarena::testing::PbList;
using ::sarena::testing::PbStruct;
using ::sarena::testing::Str;

net::Ipv4 Ip(const char* text) { return *net::ParseIpv4(text); }
net::Ipv4Prefix Pfx(const char* text) { return *net::ParseIpv4Prefix(text); }
net::Mac Mac(const char* text) { return *net::ParseMac(text); }

class NetlinkRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::IsRoot()) << "privileged tests must run as root (they never skip)";
    a_ = std::make_unique<ScopedNetns>("nra");
    b_ = std::make_unique<ScopedNetns>("nrb");
    absl::StatusOr<Netns> na = Netns::Open(a_->name());
    absl::StatusOr<Netns> nb = Netns::Open(b_->name());
    ASSERT_TRUE(na.ok() && nb.ok());
    na_ = std::make_unique<Netns>(*std::move(na));
    nb_ = std::make_unique<Netns>(*std::move(nb));
    absl::StatusOr<Socket> sa = Socket::OpenIn(*na_);
    absl::StatusOr<Socket> sb = Socket::OpenIn(*nb_);
    ASSERT_TRUE(sa.ok() && sb.ok());
    sa_ = std::make_unique<Socket>(*std::move(sa));
    sb_ = std::make_unique<Socket>(*std::move(sb));
    va_ = UniqueName("va");
    vb_ = UniqueName("vb");
    absl::StatusOr<Link> va =
        sa_->CreateVeth({.name = va_, .peer_name = vb_, .peer_netns = nb_.get()});
    ASSERT_OK(va);
    va_index_ = va->ifindex;
    absl::StatusOr<Link> vb = sb_->GetLink(vb_);
    ASSERT_OK(vb);
    vb_index_ = vb->ifindex;
    ASSERT_OK(sa_->SetLinkUp(va_index_));
    ASSERT_OK(sb_->SetLinkUp(vb_index_));
    ASSERT_OK(sa_->AddAddress(va_index_, Pfx("10.234.0.1/24")));
    ASSERT_OK(sb_->AddAddress(vb_index_, Pfx("10.234.0.2/24")));
  }

  std::string InA(const std::string& cmd) { return a_->Exec(cmd); }

  // The route for `dst` in table `table` from our own dump, or nullopt.
  std::optional<Route> FindRoute(const char* dst, uint32_t table = kTableMain) {
    absl::StatusOr<std::vector<Route>> routes = sa_->ListRoutes({.table = table});
    EXPECT_OK(routes);
    if (!routes.ok()) return std::nullopt;
    for (const Route& r : *routes) {
      if (r.dst == Pfx(dst)) return r;
    }
    return std::nullopt;
  }

  std::unique_ptr<ScopedNetns> a_, b_;
  std::unique_ptr<Netns> na_, nb_;
  std::unique_ptr<Socket> sa_, sb_;
  std::string va_, vb_;
  int va_index_ = 0, vb_index_ = 0;
};

// ---------------------------------------------------------------- addresses

TEST_F(NetlinkRouteTest, AddressesAddListDelete) {
  absl::StatusOr<std::vector<Address>> addrs = sa_->ListAddresses(va_index_);
  ASSERT_OK(addrs);
  ASSERT_EQ(addrs->size(), 1u);
  EXPECT_EQ((*addrs)[0].prefix, Pfx("10.234.0.1/24"));
  EXPECT_EQ((*addrs)[0].scope, Scope::kUniverse);
  EXPECT_EQ((*addrs)[0].label, va_);
  EXPECT_EQ((*addrs)[0].ifindex, va_index_);

  // A second address with scope link and a /32 (the pod-gateway style), one with a peer.
  ASSERT_OK(sa_->AddAddress(va_index_, Pfx("10.234.9.1/32"), Scope::kLink));
  ASSERT_TRUE(sa_->AddAddress(va_index_, Pfx("10.234.8.1/32"),
                              {.peer = Ip("10.234.8.2"), .noprefixroute = true})
                  .ok());
  addrs = sa_->ListAddresses(va_index_);
  ASSERT_OK(addrs);
  ASSERT_EQ(addrs->size(), 3u);
  PbList j = IpJson(InA("ip -4 -j addr show dev " + va_));
  ASSERT_EQ(j.values_size(), 1);
  const auto& info = j.values(0).struct_value().fields().at("addr_info").list_value();
  ASSERT_EQ(info.values_size(), 3);
  for (int i = 0; i < 3; ++i) {
    const PbStruct& ai = info.values(i).struct_value();
    auto it = std::find_if(addrs->begin(), addrs->end(), [&](const Address& a) {
      return a.prefix.address().to_string() == Str(ai, "local");
    });
    ASSERT_NE(it, addrs->end()) << Str(ai, "local");
    EXPECT_EQ(it->prefix.prefix_length(), Num(ai, "prefixlen"));
    EXPECT_EQ(ToString(it->scope), Str(ai, "scope"));
    if (it->peer) {
      EXPECT_EQ(it->peer->to_string(), Str(ai, "address"));
      EXPECT_TRUE(ai.fields().at("noprefixroute").bool_value());
    }
  }
  // noprefixroute: no subnet route for the peer; the /24 got its kernel prefix route.
  EXPECT_FALSE(FindRoute("10.234.8.2/32").has_value());
  std::optional<Route> prefix_route = FindRoute("10.234.0.0/24");
  ASSERT_TRUE(prefix_route.has_value());
  EXPECT_EQ(prefix_route->protocol, RouteProtocol::kKernel);
  EXPECT_EQ(prefix_route->scope, Scope::kLink);
  EXPECT_EQ(prefix_route->prefsrc, Ip("10.234.0.1"));

  // Duplicate -> kAlreadyExists; replace is accepted.
  absl::Status dup = sa_->AddAddress(va_index_, Pfx("10.234.9.1/32"));
  EXPECT_THAT(dup,
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("add address '10.234.9.1/32'")));
  EXPECT_OK(sa_->AddAddress(va_index_, Pfx("10.234.9.1/32"), {.replace = true}));

  // All links: loopback's 127.0.0.1/8 (scope host) is there too once lo is up.
  absl::StatusOr<std::vector<Address>> all = sa_->ListAddresses();
  ASSERT_OK(all);
  EXPECT_TRUE(std::any_of(all->begin(), all->end(), [](const Address& a) {
    return a.prefix == Pfx("127.0.0.1/8") && a.scope == Scope::kHost;
  }));

  ASSERT_OK(sa_->DeleteAddress(va_index_, Pfx("10.234.9.1/32")));
  absl::Status gone = sa_->DeleteAddress(va_index_, Pfx("10.234.9.1/32"));
  EXPECT_THAT(gone, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(sa_->ListAddresses(va_index_)->size(), 2u);
  EXPECT_EQ(IpJson(InA("ip -4 -j addr show dev " + va_))
                .values(0)
                .struct_value()
                .fields()
                .at("addr_info")
                .list_value()
                .values_size(),
            2);
  // A bad ifindex.
  EXPECT_THAT(sa_->AddAddress(987654, Pfx("10.9.9.9/32")), StatusIs(absl::StatusCode::kNotFound));
}

// ---------------------------------------------------------------- routes

TEST_F(NetlinkRouteTest, RouteViaGatewayWithMetricMtuSrcProto) {
  Route r{.dst = Pfx("10.235.1.0/24"),
          .protocol = RouteProtocol::kStatic,
          .gateway = Ip("10.234.0.2"),
          .oif = va_index_,
          .prefsrc = Ip("10.234.0.1"),
          .priority = 50,
          .mtu = 1400};
  ASSERT_OK(sa_->AddRoute(r));

  // Our dump.
  std::optional<Route> listed = FindRoute("10.235.1.0/24");
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->table, kTableMain);
  EXPECT_EQ(listed->type, RouteType::kUnicast);
  EXPECT_EQ(listed->scope, Scope::kUniverse);
  EXPECT_EQ(listed->protocol, RouteProtocol::kStatic);
  EXPECT_EQ(listed->gateway, Ip("10.234.0.2"));
  EXPECT_EQ(listed->oif, va_index_);
  EXPECT_EQ(listed->prefsrc, Ip("10.234.0.1"));
  EXPECT_EQ(listed->priority, 50u);
  EXPECT_EQ(listed->mtu, 1400u);
  EXPECT_FALSE(listed->onlink);

  // iproute2's view of the same route.
  PbList j = IpJson(InA("ip -j route show 10.235.1.0/24"));
  ASSERT_EQ(j.values_size(), 1);
  const PbStruct& jr = j.values(0).struct_value();
  EXPECT_EQ(Str(jr, "gateway"), "10.234.0.2");
  EXPECT_EQ(Str(jr, "dev"), va_);
  EXPECT_EQ(Str(jr, "protocol"), "static");
  EXPECT_EQ(Str(jr, "prefsrc"), "10.234.0.1");
  EXPECT_EQ(Num(jr, "metric"), 50);
  EXPECT_EQ(Num(jr.fields().at("metrics").list_value().values(0).struct_value(), "mtu"), 1400);

  // The kernel's own lookup agrees with `ip route get`.
  absl::StatusOr<Route> got = sa_->GetRoute(Ip("10.235.1.7"));
  ASSERT_OK(got);
  EXPECT_EQ(got->dst, Pfx("10.235.1.7/32"));
  EXPECT_EQ(got->oif, va_index_);
  EXPECT_EQ(got->gateway, Ip("10.234.0.2"));
  EXPECT_EQ(got->prefsrc, Ip("10.234.0.1"));
  EXPECT_EQ(got->table, kTableMain);
  EXPECT_EQ(got->type, RouteType::kUnicast);
  PbList jg = IpJson(InA("ip -j route get 10.235.1.7"));
  ASSERT_EQ(jg.values_size(), 1);
  EXPECT_EQ(Str(jg.values(0).struct_value(), "dev"), va_);
  EXPECT_EQ(Str(jg.values(0).struct_value(), "gateway"), "10.234.0.2");
  EXPECT_EQ(Str(jg.values(0).struct_value(), "prefsrc"), "10.234.0.1");
  // fibmatch returns the FIB entry itself.
  absl::StatusOr<Route> fib = sa_->GetRoute(Ip("10.235.1.7"), {.fib_match = true});
  ASSERT_OK(fib);
  EXPECT_EQ(fib->dst, Pfx("10.235.1.0/24"));
  EXPECT_EQ(fib->protocol, RouteProtocol::kStatic);
  EXPECT_EQ(fib->priority, 50u);

  // Add again -> kAlreadyExists; replace changes the gateway.
  absl::Status dup = sa_->AddRoute(r);
  EXPECT_THAT(dup, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(std::string(dup.message()), HasSubstr("add route '10.235.1.0/24': File exists"));
  Route r2 = r;
  r2.gateway = Ip("10.234.0.3");
  ASSERT_OK(sa_->ReplaceRoute(r2));
  EXPECT_EQ(sa_->GetRoute(Ip("10.235.1.7"))->gateway, Ip("10.234.0.3"));
  EXPECT_EQ(Str(IpJson(InA("ip -j route show 10.235.1.0/24")).values(0).struct_value(), "gateway"),
            "10.234.0.3");

  // Delete (matching dst + metric), then the route is gone and a second delete is kNotFound.
  ASSERT_OK(sa_->DeleteRoute({.dst = Pfx("10.235.1.0/24"), .priority = 50}));
  EXPECT_FALSE(FindRoute("10.235.1.0/24").has_value());
  EXPECT_EQ(IpJson(InA("ip -j route show 10.235.1.0/24")).values_size(), 0);
  absl::Status again = sa_->DeleteRoute({.dst = Pfx("10.235.1.0/24")});
  EXPECT_THAT(again, StatusIs(absl::StatusCode::kNotFound));
  // With the route gone, 10.235.1.7 has no route at all.
  absl::StatusOr<Route> none = sa_->GetRoute(Ip("10.235.1.7"));
  EXPECT_THAT(none, StatusIs(absl::StatusCode::kNotFound, HasSubstr("Network is unreachable")));
}

TEST_F(NetlinkRouteTest, ScopeLinkRouteInOtherTableWithRule) {
  // Calico-style: a /32 to a local workload, scope link, proto bird, in table 100.
  ASSERT_TRUE(sa_->AddRoute({.dst = Pfx("10.236.0.5/32"),
                             .table = 100,
                             .scope = Scope::kLink,
                             .protocol = RouteProtocol::kBird,
                             .oif = va_index_})
                  .ok());
  std::optional<Route> listed = FindRoute("10.236.0.5/32", 100);
  ASSERT_TRUE(listed.has_value());
  EXPECT_EQ(listed->table, 100u);
  EXPECT_EQ(listed->scope, Scope::kLink);
  EXPECT_EQ(listed->protocol, RouteProtocol::kBird);
  EXPECT_FALSE(listed->gateway.has_value());
  EXPECT_FALSE(FindRoute("10.236.0.5/32", kTableMain).has_value());
  // Every table.
  absl::StatusOr<std::vector<Route>> all = sa_->ListRoutes({.table = std::nullopt});
  ASSERT_OK(all);
  EXPECT_TRUE(std::any_of(all->begin(), all->end(), [](const Route& r) {
    return r.table == kTableLocal && r.type == RouteType::kLocal && r.dst == Pfx("10.234.0.1/32");
  }));
  EXPECT_TRUE(std::any_of(all->begin(), all->end(), [](const Route& r) { return r.table == 100; }));
  // Filter by oif.
  absl::StatusOr<std::vector<Route>> by_oif = sa_->ListRoutes({.oif = va_index_});
  ASSERT_OK(by_oif);
  for (const Route& r : *by_oif) EXPECT_EQ(r.oif, va_index_);

  PbList j = IpJson(InA("ip -j route show table 100"));
  ASSERT_EQ(j.values_size(), 1);
  EXPECT_EQ(Str(j.values(0).struct_value(), "dst"), "10.236.0.5");
  EXPECT_EQ(Str(j.values(0).struct_value(), "protocol"), "bird");
  EXPECT_EQ(Str(j.values(0).struct_value(), "scope"), "link");

  // Without a rule, table 100 is not consulted.
  EXPECT_THAT(sa_->GetRoute(Ip("10.236.0.5")), StatusIs(absl::StatusCode::kNotFound));
  // A policy rule sends 10.236.0.0/16 to table 100.
  Rule rule{.priority = 1000, .dst = Pfx("10.236.0.0/16"), .table = 100};
  ASSERT_OK(sa_->AddRule(rule));
  absl::StatusOr<Route> got = sa_->GetRoute(Ip("10.236.0.5"));
  ASSERT_OK(got);
  EXPECT_EQ(got->table, 100u);
  EXPECT_EQ(got->oif, va_index_);
  EXPECT_FALSE(got->gateway.has_value());
  PbList jg = IpJson(InA("ip -j route get 10.236.0.5"));
  EXPECT_EQ(Str(jg.values(0).struct_value(), "dev"), va_);
  EXPECT_EQ(Str(jg.values(0).struct_value(), "table"), "100");
  ASSERT_OK(sa_->DeleteRule(rule));
  ASSERT_OK(sa_->DeleteRoute({.dst = Pfx("10.236.0.5/32"), .table = 100}));
  EXPECT_FALSE(FindRoute("10.236.0.5/32", 100).has_value());
}

TEST_F(NetlinkRouteTest, BlackholeUnreachableProhibitTypes) {
  ASSERT_OK(sa_->AddRoute({.dst = Pfx("10.237.0.0/16"), .type = RouteType::kBlackhole}));
  ASSERT_OK(sa_->AddRoute({.dst = Pfx("10.238.0.0/16"), .type = RouteType::kUnreachable}));
  ASSERT_OK(sa_->AddRoute({.dst = Pfx("10.239.0.0/16"), .type = RouteType::kProhibit}));
  EXPECT_EQ(FindRoute("10.237.0.0/16")->type, RouteType::kBlackhole);
  EXPECT_EQ(FindRoute("10.238.0.0/16")->type, RouteType::kUnreachable);
  EXPECT_EQ(FindRoute("10.239.0.0/16")->type, RouteType::kProhibit);
  EXPECT_EQ(Str(IpJson(InA("ip -j route show 10.237.0.0/16")).values(0).struct_value(), "type"),
            "blackhole");
  EXPECT_EQ(Str(IpJson(InA("ip -j route show 10.238.0.0/16")).values(0).struct_value(), "type"),
            "unreachable");

  // The kernel's lookup refuses each with its own errno.
  absl::StatusOr<Route> bh = sa_->GetRoute(Ip("10.237.1.1"));
  EXPECT_THAT(bh, StatusIs(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<Route> un = sa_->GetRoute(Ip("10.238.1.1"));
  EXPECT_THAT(un, StatusIs(absl::StatusCode::kNotFound, HasSubstr("No route to host")));
  absl::StatusOr<Route> pr = sa_->GetRoute(Ip("10.239.1.1"));
  EXPECT_THAT(pr, StatusIs(absl::StatusCode::kPermissionDenied));

  // Delete with the default type (matches any type) and with the exact type.
  ASSERT_OK(sa_->DeleteRoute({.dst = Pfx("10.237.0.0/16")}));
  // A wrong explicit type does not match.
  EXPECT_EQ(sa_->DeleteRoute({.dst = Pfx("10.238.0.0/16"), .type = RouteType::kBlackhole}).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(
      sa_->DeleteRoute({.dst = Pfx("10.238.0.0/16"), .type = RouteType::kUnreachable}).ok());
  EXPECT_FALSE(FindRoute("10.237.0.0/16").has_value());
  EXPECT_FALSE(FindRoute("10.238.0.0/16").has_value());
}

TEST_F(NetlinkRouteTest, OnlinkGatewayAndKernelExtackErrors) {
  // 10.240.0.1 is on no subnet of va: the kernel refuses it as a gateway, with extack text.
  Route r{.dst = Pfx("10.241.0.0/24"), .gateway = Ip("10.240.0.1"), .oif = va_index_};
  absl::Status bad = sa_->AddRoute(r);
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(bad.message()), HasSubstr("add route '10.241.0.0/24': "));
  EXPECT_THAT(std::string(bad.message()), HasSubstr("Network is unreachable (errno 101)"));
  EXPECT_THAT(std::string(bad.message()), HasSubstr("Nexthop has invalid gateway")) << bad;

  // onlink makes the kernel accept it (Calico-style "via GW dev X onlink").
  r.onlink = true;
  ASSERT_OK(sa_->AddRoute(r));
  std::optional<Route> listed = FindRoute("10.241.0.0/24");
  ASSERT_TRUE(listed.has_value());
  EXPECT_TRUE(listed->onlink);
  EXPECT_EQ(listed->gateway, Ip("10.240.0.1"));
  PbList j = IpJson(InA("ip -j route show 10.241.0.0/24"));
  EXPECT_TRUE(ListHas(j.values(0).struct_value(), "flags", "onlink"));
  absl::StatusOr<Route> got = sa_->GetRoute(Ip("10.241.0.9"));
  ASSERT_OK(got);
  EXPECT_EQ(got->gateway, Ip("10.240.0.1"));
  EXPECT_EQ(got->oif, va_index_);

  // Host bits set in the destination prefix: EINVAL with the kernel's explanation.
  absl::Status host_bits = sa_->AddRoute({.dst = Pfx("10.242.0.5/24"), .oif = va_index_});
  EXPECT_THAT(host_bits, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(host_bits.message()),
              HasSubstr("Invalid prefix for given prefix length"));
  // A missing output device.
  absl::Status no_dev = sa_->AddRoute({.dst = Pfx("10.242.0.0/24"), .oif = 987654});
  EXPECT_THAT(no_dev, StatusIs(absl::StatusCode::kNotFound));

  // A default route inside this isolated namespace (B has no uplink) is reported as /0.
  ASSERT_OK(sa_->AddRoute({.dst = Pfx("0.0.0.0/0"), .gateway = Ip("10.234.0.2")}));
  std::optional<Route> def = FindRoute("0.0.0.0/0");
  ASSERT_TRUE(def.has_value());
  EXPECT_EQ(def->gateway, Ip("10.234.0.2"));
  EXPECT_EQ(Str(IpJson(InA("ip -j route show default")).values(0).struct_value(), "dst"),
            "default");
  absl::StatusOr<Route> via_default = sa_->GetRoute(Ip("10.250.0.1"));
  ASSERT_OK(via_default);
  EXPECT_EQ(via_default->gateway, Ip("10.234.0.2"));
}

// ---------------------------------------------------------------- rules

TEST_F(NetlinkRouteTest, RulesAddListDelete) {
  absl::StatusOr<std::vector<Rule>> rules = sa_->ListRules();
  ASSERT_OK(rules);
  // The kernel's three defaults: 0 local, 32766 main, 32767 default.
  ASSERT_EQ(rules->size(), 3u);
  EXPECT_EQ((*rules)[0].priority, 0u);
  EXPECT_EQ((*rules)[0].table, kTableLocal);
  EXPECT_EQ((*rules)[1].priority, 32766u);
  EXPECT_EQ((*rules)[1].table, kTableMain);
  EXPECT_EQ((*rules)[2].priority, 32767u);

  Rule from{.priority = 1000, .src = Pfx("10.234.0.0/24"), .table = 100};
  Rule iif{.priority = 1001, .table = 101, .iif = va_, .fwmark = 0x40, .fwmask = 0xff};
  Rule unreachable{.priority = 1002,
                   .dst = Pfx("10.243.0.0/16"),
                   .action = RuleAction::kUnreachable,
                   .table = kTableUnspec};
  ASSERT_OK(sa_->AddRule(from));
  ASSERT_OK(sa_->AddRule(iif));
  ASSERT_OK(sa_->AddRule(unreachable));
  absl::Status dup = sa_->AddRule(from);
  EXPECT_THAT(dup, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(std::string(dup.message()),
              HasSubstr("add rule '1000: from 10.234.0.0/24 lookup 100'"));

  rules = sa_->ListRules();
  ASSERT_OK(rules);
  ASSERT_EQ(rules->size(), 6u);
  const Rule& r0 = (*rules)[1];
  EXPECT_EQ(r0.priority, 1000u);
  EXPECT_EQ(r0.src, Pfx("10.234.0.0/24"));
  EXPECT_FALSE(r0.dst.has_value());
  EXPECT_EQ(r0.table, 100u);
  EXPECT_EQ(r0.action, RuleAction::kToTable);
  const Rule& r1 = (*rules)[2];
  EXPECT_EQ(r1.iif, va_);
  EXPECT_EQ(r1.fwmark, 0x40u);
  EXPECT_EQ(r1.fwmask, 0xffu);
  EXPECT_EQ(r1.table, 101u);
  const Rule& r2 = (*rules)[3];
  EXPECT_EQ(r2.action, RuleAction::kUnreachable);
  EXPECT_EQ(r2.dst, Pfx("10.243.0.0/16"));

  PbList j = IpJson(InA("ip -4 -j rule show"));
  ASSERT_EQ(j.values_size(), 6);
  const PbStruct& j1 = j.values(1).struct_value();
  EXPECT_EQ(Num(j1, "priority"), 1000);
  EXPECT_EQ(Str(j1, "src"), "10.234.0.0");
  EXPECT_EQ(Num(j1, "srclen"), 24);
  EXPECT_EQ(Str(j1, "table"), "100");
  EXPECT_EQ(Str(j.values(2).struct_value(), "iif"), va_);
  EXPECT_EQ(Str(j.values(3).struct_value(), "action"), "unreachable");

  // The unreachable rule shows in the kernel's lookup.
  EXPECT_THAT(sa_->GetRoute(Ip("10.243.0.1")), StatusIs(absl::StatusCode::kNotFound));

  ASSERT_OK(sa_->DeleteRule(from));
  ASSERT_OK(sa_->DeleteRule(iif));
  ASSERT_OK(sa_->DeleteRule({.priority = 1002, .table = kTableUnspec}));
  absl::Status gone = sa_->DeleteRule(from);
  EXPECT_THAT(gone, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(sa_->ListRules()->size(), 3u);
  EXPECT_EQ(IpJson(InA("ip -4 -j rule show")).values_size(), 3);
}

// ---------------------------------------------------------------- neighbours

TEST_F(NetlinkRouteTest, PermanentNeighboursAddReplaceDelete) {
  ASSERT_OK(sa_->AddNeighbor(va_index_, Ip("10.234.0.9"), Mac("02:00:00:00:00:09")));
  absl::StatusOr<std::vector<Neighbor>> neigh = sa_->ListNeighbors(va_index_);
  ASSERT_OK(neigh);
  auto it = std::find_if(neigh->begin(), neigh->end(),
                         [](const Neighbor& n) { return n.ip == Ip("10.234.0.9"); });
  ASSERT_NE(it, neigh->end());
  EXPECT_EQ(it->state, NeighState::kPermanent);
  ASSERT_TRUE(it->mac.has_value());
  EXPECT_EQ(net::FormatMac(*it->mac), "02:00:00:00:00:09");
  EXPECT_EQ(it->ifindex, va_index_);

  PbList j = IpJson(InA("ip -j neigh show dev " + va_ + " 10.234.0.9"));
  ASSERT_EQ(j.values_size(), 1);
  EXPECT_EQ(Str(j.values(0).struct_value(), "lladdr"), "02:00:00:00:00:09");
  EXPECT_TRUE(ListHas(j.values(0).struct_value(), "state", "PERMANENT"));
  EXPECT_EQ(ToString(it->state), "PERMANENT");

  absl::Status dup = sa_->AddNeighbor(va_index_, Ip("10.234.0.9"), Mac("02:00:00:00:00:0a"));
  EXPECT_THAT(dup, StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_TRUE(
      sa_->AddNeighbor(va_index_, Ip("10.234.0.9"), Mac("02:00:00:00:00:0a"), {.replace = true})
          .ok());
  EXPECT_EQ(Str(IpJson(InA("ip -j neigh show dev " + va_ + " 10.234.0.9")).values(0).struct_value(),
                "lladdr"),
            "02:00:00:00:00:0a");
  // A reachable (non-permanent) entry too.
  ASSERT_TRUE(sa_->AddNeighbor(va_index_, Ip("10.234.0.10"), Mac("02:00:00:00:00:10"),
                               {.state = NeighState::kReachable})
                  .ok());
  neigh = sa_->ListNeighbors(va_index_);
  ASSERT_OK(neigh);
  EXPECT_TRUE(std::any_of(neigh->begin(), neigh->end(), [](const Neighbor& n) {
    return n.ip == Ip("10.234.0.10") && n.state == NeighState::kReachable;
  }));
  // The neighbour table of all links includes both.
  EXPECT_GE(sa_->ListNeighbors()->size(), 2u);

  ASSERT_OK(sa_->DeleteNeighbor(va_index_, Ip("10.234.0.9")));
  absl::Status gone = sa_->DeleteNeighbor(va_index_, Ip("10.234.0.9"));
  EXPECT_THAT(gone, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(IpJson(InA("ip -j neigh show dev " + va_ + " 10.234.0.9")).values_size(), 0);
  EXPECT_EQ(sa_->AddNeighbor(987654, Ip("10.234.0.11"), Mac("02:00:00:00:00:11")).code(),
            absl::StatusCode::kNotFound);
}

// The permanent neighbour is what lets A talk to B without ARP: a real packet crosses.
TEST_F(NetlinkRouteTest, ConfiguredPathCarriesRealTraffic) {
  absl::StatusOr<Link> vb = sb_->GetLink(vb_index_);
  ASSERT_OK(vb);
  ASSERT_OK(sa_->AddNeighbor(va_index_, Ip("10.234.0.2"), vb->mac));
  // B answers pings for an address behind it; A routes there via B.
  ASSERT_OK(sb_->AddAddress(1, Pfx("10.244.7.7/32")));
  ASSERT_TRUE(sa_->AddRoute({.dst = Pfx("10.244.7.0/24"),
                             .gateway = Ip("10.234.0.2"),
                             .oif = va_index_,
                             .prefsrc = Ip("10.234.0.1")})
                  .ok());
  // A TCP handshake from A to a listener in B: real packets cross the configured path.
  absl::StatusOr<int> listener = RunInWithResult(*nb_, []() -> absl::StatusOr<int> {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(7777);
    sa.sin_addr.s_addr = net::ToBe32(Ip("10.244.7.7"));
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        listen(fd, 1) != 0) {
      return absl::InternalError(absl::StrCat("listen: errno ", errno));
    }
    return fd;
  });
  ASSERT_OK(listener);
  UniqueFd server(*listener);
  UniqueFd client;
  absl::Status connected = RunIn(*na_, [&]() -> absl::Status {
    client.Reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    timeval tv{.tv_sec = 3, .tv_usec = 0};
    setsockopt(client.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(7777);
    sa.sin_addr.s_addr = net::ToBe32(Ip("10.244.7.7"));
    if (connect(client.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      return absl::InternalError(absl::StrCat("connect: errno ", errno));
    }
    return absl::OkStatus();
  });
  ASSERT_OK(connected);
  sockaddr_in peer{};
  socklen_t len = sizeof peer;
  UniqueFd accepted(accept4(server.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted.valid());
  // The source is the route's prefsrc.
  EXPECT_EQ(net::FromBe32(peer.sin_addr.s_addr), Ip("10.234.0.1"));
}

}  // namespace
}  // namespace sarena::nl
