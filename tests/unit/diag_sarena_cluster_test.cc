// The sarena plugin across nodes (libsarena/diag/sarena_cluster.h) on the sarena-cluster fixture
// (tests/data/cases/_gen/sarena-cluster.py: node-a <-> node-b tunnel, node-a <-> node-c native,
// node-b <-> node-c tunnel, pods pod-a/b/c, ClusterIP default/web -> pod-b), mutated one fault at
// a time. Every suspicion has a test where it must be raised and one where it must not.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "libsarena/model/sarena_cluster.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
using testing::CaseDir;
using testing::FindHop;
using testing::FindSuspicion;
using testing::HopOf;
using testing::Scratch;
using testing::Str;
using testing::TraceLib;

constexpr const char* kFixture = "sarena-cluster";

std::string ClusterFile(const std::string& node) {
  return absl::StrCat("nodes/", node, "/sarena-cluster.json");
}

// The list `key` of a node's sarena-cluster.json, for `edit` to change.
void EditClusterList(Scratch& s, const std::string& node, const std::string& key,
                     const std::function<void(google::protobuf::ListValue*)>& edit) {
  s.EditJson(ClusterFile(node), [&](Value* v) {
    auto& f = *v->mutable_struct_value()->mutable_fields();
    ASSERT_TRUE(f.count(key)) << key;
    edit(f[key].mutable_list_value());
  });
}

// Sets field `field` of the entry of list `key` whose `match_field` is `match_value`.
void SetInEntry(Scratch& s, const std::string& node, const std::string& key,
                const std::string& match_field, const std::string& match_value,
                const std::string& field, const Value& value) {
  bool found = false;
  EditClusterList(s, node, key, [&](google::protobuf::ListValue* l) {
    for (auto& e : *l->mutable_values()) {
      if (Str(e.struct_value(), match_field) != match_value) continue;
      (*e.mutable_struct_value()->mutable_fields())[field] = value;
      found = true;
    }
  });
  ASSERT_TRUE(found) << key << " entry " << match_field << "=" << match_value << " on " << node;
}

void RemoveEntry(Scratch& s, const std::string& node, const std::string& key,
                 const std::string& match_field, const std::string& match_value) {
  int removed = 0;
  EditClusterList(s, node, key, [&](google::protobuf::ListValue* l) {
    google::protobuf::ListValue kept;
    for (const auto& e : l->values()) {
      if (Str(e.struct_value(), match_field) == match_value) {
        ++removed;
      } else {
        *kept.add_values() = e;
      }
    }
    *l = kept;
  });
  ASSERT_EQ(removed, 1) << key << " " << match_value << " on " << node;
}

void SetOverlay(Scratch& s, const std::string& node, const std::string& field, const Value& v) {
  s.EditJson(ClusterFile(node), [&](Value* root) {
    auto& f = *root->mutable_struct_value()->mutable_fields();
    (*f["overlay"].mutable_struct_value()->mutable_fields())[field] = v;
  });
}

Value Num(double n) {
  Value v;
  v.set_number_value(n);
  return v;
}
Value Text(const std::string& t) {
  Value v;
  v.set_string_value(t);
  return v;
}

int RemoveRoute(Scratch& s, const std::string& node, const std::string& dst) {
  return s.RemoveFromList(absl::StrCat("nodes/", node, "/ip-route.json"),
                          [&](const Struct& r) { return Str(r, "dst") == dst; });
}

// Appends `rule` to the filter table of a node's iptables-save.txt.
void AddFilterRule(Scratch& s, const std::string& node, const std::string& rule) {
  std::string rel = absl::StrCat("nodes/", node, "/iptables-save.txt");
  std::string text = testing::ReadAll(s.Path(rel));
  size_t filter = text.find("*filter");
  ASSERT_NE(filter, std::string::npos);
  size_t commit = text.find("COMMIT", filter);
  ASSERT_NE(commit, std::string::npos);
  text.insert(commit, rule + "\n");
  s.Write(rel, text);
}

// The route JSON objects are printed by `ip -j route`: replace a route by another device/gateway.
void RerouteVia(Scratch& s, const std::string& node, const std::string& dst,
                const std::string& dev, const std::string& gateway) {
  bool found = false;
  s.EditJson(absl::StrCat("nodes/", node, "/ip-route.json"), [&](Value* v) {
    for (auto& r : *v->mutable_list_value()->mutable_values()) {
      auto& f = *r.mutable_struct_value()->mutable_fields();
      if (f["dst"].string_value() != dst) continue;
      found = true;
      f["dev"] = Text(dev);
      if (gateway.empty()) {
        f.erase("gateway");
        f["scope"] = Text("link");
      } else {
        f["gateway"] = Text(gateway);
        f.erase("scope");
      }
    }
  });
  ASSERT_TRUE(found) << dst << " on " << node;
}

struct Q {
  const char* src;
  const char* dst;
};

TEST(DiagSarenaCluster, HealthyPathsAcrossNodes) {
  std::string dir = CaseDir(kFixture);
  for (const Q& q : {Q{"pod:default/pod-a", "pod:default/pod-b:8080/tcp"},   // tunnel
                     Q{"pod:default/pod-a", "pod:default/pod-c:8080/tcp"},   // native
                     Q{"pod:default/pod-b", "pod:default/pod-c:8080/tcp"},   // tunnel
                     Q{"pod:default/pod-c", "pod:default/pod-a:8080/tcp"},   // native
                     Q{"node:node-a", "pod:default/pod-b:8080/tcp"},         // host -> tunnel
                     Q{"node:node-a", "pod:default/pod-c:8080/tcp"},         // host -> native
                     Q{"pod:default/pod-a", "svc:default/web:80/tcp"}}) {    // remote backend
    auto t = TraceLib(dir, q.src, q.dst);
    ASSERT_TRACED(t);
    EXPECT_EQ(t.plugin, "sarena");
    EXPECT_EQ(t.report.verdict(), "reachable") << q.src << " -> " << q.dst << "\n" << t.text;
    EXPECT_TRUE(testing::OnlyInfo(t.report)) << q.src << " -> " << q.dst << "\n" << t.text;
    for (const char* code : {"tunnel_entry_missing", "remote_cidr_misrouted", "stale_underlay",
                             "overlay_mtu_too_big", "tunnel_port_blocked", "unknown_peer",
                             "wrong_vni", "overlay_source_mismatch", "fib_lookup_failed"}) {
      EXPECT_EQ(FindSuspicion(t.report, code), nullptr) << code << "\n" << t.text;
    }
  }
}

TEST(DiagSarenaCluster, TunnelPathIsEncapsulatedAndDeliveredByFromOverlay) {
  auto t = TraceLib(CaseDir(kFixture), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Hop* a = FindHop(t.report, "node-a");
  ASSERT_NE(a, nullptr) << t.text;
  EXPECT_EQ(a->oif(), "sarena_vxlan");
  const v1::Hop* b = FindHop(t.report, "node-b");
  ASSERT_NE(b, nullptr) << t.text;
  EXPECT_EQ(b->iif(), "sarena_vxlan");
  EXPECT_NE(t.text.find("10.0.9.10 -> 10.0.9.11:8472/udp"), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("from_overlay: local_delivery"), std::string::npos) << t.text;
}

TEST(DiagSarenaCluster, NativePathIsRedirectedAndDeliveredByFromNetdev) {
  auto t = TraceLib(CaseDir(kFixture), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Hop* a = FindHop(t.report, "node-a");
  ASSERT_NE(a, nullptr) << t.text;
  EXPECT_EQ(a->oif(), "eth0");
  const v1::Hop* c = FindHop(t.report, "node-c");
  ASSERT_NE(c, nullptr) << t.text;
  EXPECT_EQ(c->iif(), "eth0");
  EXPECT_NE(t.text.find("from_netdev: local_delivery"), std::string::npos) << t.text;
  EXPECT_EQ(t.text.find("8472"), std::string::npos) << "native is not encapsulated\n" << t.text;
}

TEST(DiagSarenaCluster, PodToATunnelPeersNodeAddressGoesThroughTheTunnel) {
  // SARENA_TUN_F_NODE entries: a tunnel peer's own address, with no route of its own (the
  // host reaches it on the uplink): no misroute finding for either direction.
  std::string dir = CaseDir(kFixture);
  auto t = TraceLib(dir, "pod:default/pod-a", "10.0.9.11:22/tcp");
  ASSERT_TRACED(t);
  const v1::Hop* a = FindHop(t.report, "node-a");
  ASSERT_NE(a, nullptr) << t.text;
  EXPECT_EQ(a->oif(), "sarena_vxlan") << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "remote_cidr_misrouted"), nullptr) << t.text;
  auto h = TraceLib(dir, "node:node-a", "node:node-b:22/tcp");
  ASSERT_TRACED(h);
  EXPECT_EQ(h.report.verdict(), "reachable") << h.text;
  EXPECT_EQ(FindSuspicion(h.report, "remote_cidr_misrouted"), nullptr) << h.text;
  EXPECT_EQ(FindSuspicion(h.report, "tunnel_entry_missing"), nullptr) << h.text;
}

// ---- tunnel_entry_missing ----

TEST(DiagSarenaCluster, RouteWithoutTunnelEntryIsDroppedByToOverlay) {
  Scratch s(kFixture);
  RemoveEntry(s, "node-a", "tunnels", "cidr", "10.20.1.0/24");
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "tunnel_entry_missing", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-a");
  EXPECT_NE(sus->message().find("NO_TUNNEL_ENDPOINT"), std::string::npos) << sus->message();
  // The other peers are unaffected.
  auto ok = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(ok.report.verdict(), "reachable") << ok.text;
  EXPECT_EQ(FindSuspicion(ok.report, "tunnel_entry_missing"), nullptr) << ok.text;
}

TEST(DiagSarenaCluster, NativeRouteWithoutEntryTakesTheHostStack) {
  Scratch s(kFixture);
  RemoveEntry(s, "node-a", "tunnels", "cidr", "10.20.2.0/24");
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(t);
  // from_container passes it to the host, which routes it via the peer; from_netdev on node-c
  // still delivers it (its own entry for node-a's CIDR exists).
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const auto* sus = FindSuspicion(t.report, "tunnel_entry_missing", "WARNING");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-a");
}

TEST(DiagSarenaCluster, NeitherEntryNorRouteHitsTheClusterUnreachableRoute) {
  Scratch s(kFixture);
  RemoveEntry(s, "node-a", "tunnels", "cidr", "10.20.1.0/24");
  ASSERT_EQ(RemoveRoute(s, "node-a", "10.20.1.0/24"), 1);
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "tunnel_entry_missing", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_NE(sus->message().find("node node-b owns 10.20.1.0/24"), std::string::npos)
      << sus->message();
  EXPECT_NE(FindSuspicion(t.report, "no_route", "FATAL"), nullptr) << t.text;
}

// ---- remote_cidr_misrouted ----

TEST(DiagSarenaCluster, TunnelEntryWithoutRouteBreaksHostStackTraffic) {
  Scratch s(kFixture);
  ASSERT_EQ(RemoveRoute(s, "node-a", "10.20.1.0/24"), 1);
  // Pod to pod: from_container tunnels it by the map, the route is not used.
  auto pp = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(pp);
  EXPECT_EQ(pp.report.verdict(), "degraded") << pp.text;
  const auto* w = FindSuspicion(pp.report, "remote_cidr_misrouted", "WARNING");
  ASSERT_NE(w, nullptr) << pp.text;
  EXPECT_EQ(w->hop(), "node-a");
  EXPECT_NE(w->message().find("10.20.1.0/24 dev sarena_vxlan scope link src 10.20.0.1"),
            std::string::npos)
      << w->message();
  // Node to pod: the host routes it, the cluster CIDR's unreachable route answers.
  auto np = TraceLib(s.dir(), "node:node-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(np);
  EXPECT_EQ(np.report.verdict(), "unreachable") << np.text;
  const auto* f = FindSuspicion(np.report, "remote_cidr_misrouted", "FATAL");
  ASSERT_NE(f, nullptr) << np.text;
  EXPECT_EQ(f->hop(), "node-a");
  EXPECT_NE(np.text.find("unreachable"), std::string::npos) << np.text;
}

TEST(DiagSarenaCluster, TunnelPeerRoutedViaTheUplink) {
  Scratch s(kFixture);
  RerouteVia(s, "node-a", "10.20.1.0/24", "eth0", "10.0.9.11");
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  const auto* sus = FindSuspicion(t.report, "remote_cidr_misrouted", "WARNING");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-a");
  EXPECT_NE(sus->message().find("not onto sarena_vxlan"), std::string::npos) << sus->message();
  // The native peer's route is untouched.
  auto ok = TraceLib(s.dir(), "node:node-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(FindSuspicion(ok.report, "remote_cidr_misrouted"), nullptr) << ok.text;
}

TEST(DiagSarenaCluster, NativePeerRoutedOntoTheTunnelDeviceIsEncapsulated) {
  Scratch s(kFixture);
  RerouteVia(s, "node-a", "10.20.2.0/24", "sarena_vxlan", "");
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(t);
  const auto* sus = FindSuspicion(t.report, "remote_cidr_misrouted", "WARNING");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-a");
  // to_overlay encapsulates it by the native entry and node-c's from_overlay accepts it.
  const v1::Hop* c = FindHop(t.report, "node-c");
  ASSERT_NE(c, nullptr) << t.text;
  EXPECT_EQ(c->iif(), "sarena_vxlan");
  EXPECT_NE(t.report.verdict(), "unreachable") << t.text;
}

TEST(DiagSarenaCluster, NativePeerWithoutRouteFailsTheFibLookup) {
  Scratch s(kFixture);
  ASSERT_EQ(RemoveRoute(s, "node-a", "10.20.2.0/24"), 1);
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* fib = FindSuspicion(t.report, "fib_lookup_failed", "FATAL");
  ASSERT_NE(fib, nullptr) << t.text;
  EXPECT_EQ(fib->hop(), "node-a");
  EXPECT_NE(FindSuspicion(t.report, "remote_cidr_misrouted", "FATAL"), nullptr) << t.text;
  // The tunnel peer does not use that route.
  auto ok = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(FindSuspicion(ok.report, "fib_lookup_failed"), nullptr) << ok.text;
}

// ---- stale_underlay ----

TEST(DiagSarenaCluster, TunnelEntryWithAnOldUnderlayAddress) {
  Scratch s(kFixture);
  SetInEntry(s, "node-a", "tunnels", "cidr", "10.20.1.0/24", "underlay", Text("10.0.9.99"));
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "stale_underlay", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-a");
  EXPECT_NE(sus->message().find("now has underlay 10.0.9.11"), std::string::npos)
      << sus->message();
  auto ok = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(FindSuspicion(ok.report, "stale_underlay"), nullptr) << ok.text;
}

TEST(DiagSarenaCluster, UnderlayAddressNoRouteReaches) {
  Scratch s(kFixture);
  // A one-node view: node-b is not in the snapshot, its entry points where no route goes.
  ASSERT_EQ(sarena::testing::Run(absl::StrCat("rm -rf '", s.Path("nodes/node-b"), "'")).exit_code,
            0);
  ASSERT_EQ(RemoveRoute(s, "node-a", "default"), 1);
  SetInEntry(s, "node-a", "tunnels", "cidr", "10.20.1.0/24", "underlay", Text("192.168.77.7"));
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "10.20.1.10:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "stale_underlay", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_NE(sus->message().find("no underlay route reaches 192.168.77.7"), std::string::npos)
      << sus->message();
}

TEST(DiagSarenaCluster, PeerOutsideTheSnapshotNamesItsExpectations) {
  Scratch s(kFixture);
  ASSERT_EQ(sarena::testing::Run(absl::StrCat("rm -rf '", s.Path("nodes/node-b"), "'")).exit_code,
            0);
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "10.20.1.10:8080/tcp");
  ASSERT_TRACED(t);
  const auto* sus = FindSuspicion(t.report, "snapshot_incomplete", "WARNING");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_NE(sus->message().find("must have 10.0.9.10 in its peer map, VNI 1"), std::string::npos)
      << sus->message();
  EXPECT_EQ(FindSuspicion(t.report, "stale_underlay"), nullptr) << t.text;
}

// ---- overlay_mtu_too_big ----

TEST(DiagSarenaCluster, PodMtuTooBigForTheUnderlay) {
  Scratch s(kFixture);
  s.Replace("nodes/node-a/pods/default/pod-a/ip-link.json", "\"mtu\": 1450", "\"mtu\": 1500");
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  const auto* sus = FindSuspicion(t.report, "overlay_mtu_too_big", "WARNING");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-a");
  EXPECT_NE(sus->message().find("pod MTU 1500 + 50 (VXLAN) = 1550 exceeds the MTU 1500"),
            std::string::npos)
      << sus->message();
  // The outer packet has no DF: it is fragmented, not lost.
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  // Native: no encapsulation, no finding.
  auto n = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(n);
  EXPECT_EQ(FindSuspicion(n.report, "overlay_mtu_too_big"), nullptr) << n.text;
}

TEST(DiagSarenaCluster, UplinkMtuLoweredUnderTheTunnelDevice) {
  Scratch s(kFixture);
  s.EditJson("nodes/node-a/ip-link.json", [](Value* v) {
    for (auto& l : *v->mutable_list_value()->mutable_values()) {
      auto& f = *l.mutable_struct_value()->mutable_fields();
      if (f["ifname"].string_value() == "eth0") f["mtu"] = Num(1400);
    }
  });
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  const auto* sus = FindSuspicion(t.report, "overlay_mtu_too_big", "WARNING");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-a");
}

TEST(DiagSarenaCluster, NativeOversizeTakesTheHostStackOnlyWithAKnownNeighbour) {
  // bpf_fib_lookup with tot_len 0: FRAG_NEEDED (-> host stack) only after a successful lookup,
  // i.e. when the next hop's neighbour is known; NO_NEIGH redirects without an MTU check.
  for (bool neighbour : {false, true}) {
    Scratch s(kFixture);
    s.EditJson("nodes/node-a/ip-link.json", [](Value* v) {
      for (auto& l : *v->mutable_list_value()->mutable_values()) {
        auto& f = *l.mutable_struct_value()->mutable_fields();
        if (f["ifname"].string_value() == "eth0") f["mtu"] = Num(1400);
      }
    });
    if (neighbour) {
      s.Write("nodes/node-a/ip-neigh.json",
              R"([{"dst": "10.0.9.12", "dev": "eth0", "lladdr": "52:54:00:09:00:12",)"
              R"( "state": ["REACHABLE"]}])");
    }
    auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
    ASSERT_TRACED(t);
    bool host_stack = t.text.find("FRAG_NEEDED, passed to the host stack") != std::string::npos;
    EXPECT_EQ(host_stack, neighbour) << t.text;
    EXPECT_NE(FindSuspicion(t.report, "mtu_mismatch"), nullptr) << t.text;
    EXPECT_NE(t.report.verdict(), "unreachable") << t.text;
  }
}

// ---- tunnel_port_blocked ----

TEST(DiagSarenaCluster, VxlanPortBlockedOnTheReceiversInput) {
  Scratch s(kFixture);
  AddFilterRule(s, "node-b", "-A INPUT -p udp -m udp --dport 8472 -j DROP");
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "tunnel_port_blocked", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-b");
  EXPECT_NE(sus->message().find("netfilter INPUT on node-b"), std::string::npos) << sus->message();
  // Native traffic to node-c and tunnel traffic between a and c do not cross node-b.
  auto ok = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(ok.report.verdict(), "reachable") << ok.text;
}

TEST(DiagSarenaCluster, VxlanPortBlockedOnTheSendersOutput) {
  Scratch s(kFixture);
  AddFilterRule(s, "node-a", "-A OUTPUT -p udp -m udp --dport 8472 -j DROP");
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "tunnel_port_blocked", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-a");
  // A rule on another port does not block it.
  Scratch other(kFixture);
  AddFilterRule(other, "node-a", "-A OUTPUT -p udp -m udp --dport 4789 -j DROP");
  auto ok = TraceLib(other.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(FindSuspicion(ok.report, "tunnel_port_blocked"), nullptr) << ok.text;
  EXPECT_EQ(ok.report.verdict(), "reachable") << ok.text;
}

// ---- from_overlay's drops ----

TEST(DiagSarenaCluster, SenderNotInThePeerMap) {
  Scratch s(kFixture);
  RemoveEntry(s, "node-b", "peers", "underlay", "10.0.9.10");
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "unknown_peer", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-b");
  auto ok = TraceLib(s.dir(), "pod:default/pod-c", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(FindSuspicion(ok.report, "unknown_peer"), nullptr) << ok.text;
}

TEST(DiagSarenaCluster, PeerMapHasTheSendersOldAddress) {
  Scratch s(kFixture);
  SetInEntry(s, "node-b", "peers", "underlay", "10.0.9.10", "underlay", Text("10.0.9.50"));
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  const auto* sus = FindSuspicion(t.report, "unknown_peer", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_NE(sus->message().find("at 10.0.9.50, a stale underlay address"), std::string::npos)
      << sus->message();
}

TEST(DiagSarenaCluster, WrongVni) {
  Scratch s(kFixture);
  SetOverlay(s, "node-b", "vni", Num(2));
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "wrong_vni", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-b");
  EXPECT_NE(sus->message().find("carries VNI 1 but this node's is 2"), std::string::npos);
  auto ok = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-c:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(FindSuspicion(ok.report, "wrong_vni"), nullptr) << "native has no VNI\n" << ok.text;
}

TEST(DiagSarenaCluster, InnerSourceOfAnotherNode) {
  Scratch s(kFixture);
  SetInEntry(s, "node-b", "tunnels", "cidr", "10.20.0.0/24", "node_id", Num(3));
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "overlay_source_mismatch", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-b");
  auto ok = TraceLib(s.dir(), "pod:default/pod-c", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(FindSuspicion(ok.report, "overlay_source_mismatch"), nullptr) << ok.text;
}

TEST(DiagSarenaCluster, FromOverlayNotAttached) {
  Scratch s(kFixture);
  int removed = s.RemoveFromList("nodes/node-b/sarena-programs.json", [](const Struct& p) {
    return Str(p, "prog") == "from_overlay";
  });
  ASSERT_EQ(removed, 1);
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const auto* sus = FindSuspicion(t.report, "program_not_attached", "FATAL");
  ASSERT_NE(sus, nullptr) << t.text;
  EXPECT_EQ(sus->hop(), "node-b");
}

// ---- the file ----

TEST(SarenaClusterFile, ParsesTheFixture) {
  std::string text = testing::ReadAll(absl::StrCat(CaseDir(kFixture), "/", ClusterFile("node-a")));
  auto c = model::ParseSarenaCluster(text, "node-a/sarena-cluster.json");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->overlay);
  EXPECT_TRUE(c->overlay->tunnel());
  EXPECT_TRUE(c->overlay->native());
  EXPECT_EQ(c->overlay->vni, 1u);
  EXPECT_EQ(c->overlay->node_id, 1u);
  EXPECT_EQ(c->overlay->underlay->to_string(), "10.0.9.10");
  EXPECT_EQ(c->overlay->cluster_cidr->to_string(), "10.20.0.0/16");
  EXPECT_EQ(c->pod_cidr->to_string(), "10.20.0.0/24");
  ASSERT_EQ(c->tunnels.size(), 3u);
  const model::SarenaTunnel* t = c->LookupTunnel(*net::ParseIpv4("10.20.2.77"));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->mode, model::SarenaMode::kNative);
  EXPECT_EQ(t->node_id, 3u);
  EXPECT_EQ(c->LookupTunnel(*net::ParseIpv4("10.20.3.1")), nullptr);
  ASSERT_NE(c->FindPeer(*net::ParseIpv4("10.0.9.11")), nullptr);
  EXPECT_EQ(c->FindPeer(*net::ParseIpv4("10.0.9.11"))->node_id, 2u);
  EXPECT_EQ(c->node_counters.size(), 2u);
}

TEST(SarenaClusterFile, LongestPrefixWins) {
  auto c = model::ParseSarenaCluster(R"({"tunnels": [
      {"cidr": "10.20.0.0/16", "underlay": "10.0.0.1", "mode": "tunnel", "node_id": 1},
      {"cidr": "10.20.5.0/24", "underlay": "10.0.0.2", "mode": "native", "node_id": 2}]})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->LookupTunnel(*net::ParseIpv4("10.20.5.9"))->node_id, 2u);
  EXPECT_EQ(c->LookupTunnel(*net::ParseIpv4("10.20.6.9"))->node_id, 1u);
  EXPECT_FALSE(c->overlay);
  EXPECT_TRUE(c->peers.empty());
}

TEST(SarenaClusterFile, BadFieldsAreNamed) {
  struct Bad {
    const char* json;
    const char* field;
  };
  for (const Bad& b : {
           Bad{R"({"tunnels": [{"cidr": "10.20.0.0/24", "underlay": "10.0.0.1", "mode": "vxlan"}]})",
               "tunnels[0].mode"},
           Bad{R"({"tunnels": [{"cidr": "10.20.0/24", "underlay": "10.0.0.1", "mode": "tunnel"}]})",
               "tunnels[0].cidr"},
           Bad{R"({"tunnels": [{"cidr": "10.20.0.0/24", "mode": "tunnel"}]})",
               "tunnels[0].underlay"},
           Bad{R"({"overlay": {"vni": 16777216}})", "overlay"},
           Bad{R"({"peers": [{"underlay": "10.0.0.1", "node_id": 16384}]})", "peers[0]"},
           Bad{R"({"peers": [{"family": "ipx", "underlay": "10.0.0.1"}]})", "peers[0].family"},
           Bad{R"({"peers": {}})", "peers"},
       }) {
    auto c = model::ParseSarenaCluster(b.json, "x.json");
    ASSERT_FALSE(c.ok()) << b.json;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(b.field), std::string::npos) << c.status();
    EXPECT_NE(c.status().message().find("x.json"), std::string::npos) << c.status();
  }
  // IPv6 entries are skipped, not errors.
  auto v6 = model::ParseSarenaCluster(
      R"({"peers": [{"family": "ipv6", "underlay": "fd00::1", "node_id": 2}]})");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_TRUE(v6->peers.empty());
}

TEST(SarenaClusterFile, MalformedFileFailsTheTraceNamingIt) {
  Scratch s(kFixture);
  s.Replace(ClusterFile("node-b"), "\"mode\": \"tunnel\"", "\"mode\": \"ipip\"");
  auto t = TraceLib(s.dir(), "pod:default/pod-a", "pod:default/pod-b:8080/tcp");
  ASSERT_FALSE(t.status.ok());
  EXPECT_EQ(t.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status.message().find("nodes/node-b/sarena-cluster.json"), std::string::npos)
      << t.status;
}

}  // namespace
}  // namespace sarena::diag
