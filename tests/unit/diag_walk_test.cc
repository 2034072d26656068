// The generic walk (no CNI knowledge): routes and their types, policy rules, links, MTU,
// forwarding, rp_filter, netfilter, neighbours, TTL, loops, missing files, bridged traffic and
// the reply direction — on fixtures generated from real network namespaces, one fault at a time.
#include <string>

#include "absl/strings/match.h"
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

constexpr const char* kExternal = "203.0.113.44:443/tcp";

google::protobuf::Value Json(absl::string_view text) {
  google::protobuf::Value v;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(text), &v).ok()) << text;
  return v;
}

void AddRoute(Scratch& s, const std::string& file, absl::string_view json) {
  s.EditJson(file, [&](google::protobuf::Value* v) {
    auto* list = v->mutable_list_value()->mutable_values();
    list->Add()->CopyFrom(Json(json));
    std::rotate(list->rbegin(), list->rbegin() + 1, list->rend());
  });
}

TEST(DiagWalk, BridgeNodePaths) {
  std::string dir = CaseDir("bridge-node");
  auto same = TraceLib(dir, "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(same);
  EXPECT_EQ(same.plugin, "generic");
  EXPECT_EQ(same.report.verdict(), "reachable") << same.text;
  const v1::Hop* br = FindHop(same.report, "node-a");
  ASSERT_NE(br, nullptr);
  EXPECT_EQ(br->iif(), "veth3f9a2c1d");  // switched between two bridge ports
  EXPECT_EQ(br->oif(), "veth81c0e2aa");

  auto ext = TraceLib(dir, "pod:default/client", kExternal);
  ASSERT_TRACED(ext);
  EXPECT_EQ(ext.report.verdict(), "reachable") << ext.text;
  EXPECT_EQ(FindHop(ext.report, "node-a")->packet().src(), "10.0.4.10") << "MASQUERADE";
  ASSERT_NE(FindHop(ext.report, "external:203.0.113.44"), nullptr);
  const v1::Hop* back = FindHop(ext.report, "node-a@reply");
  ASSERT_NE(back, nullptr) << ext.text;
  EXPECT_EQ(back->iif(), "eth0");
  EXPECT_EQ(back->packet().dst(), "10.244.0.9") << "conntrack reversed the MASQUERADE";

  auto node = TraceLib(dir, "node:node-a", "pod:default/server:8080/tcp");
  ASSERT_TRACED(node);
  EXPECT_EQ(node.report.verdict(), "reachable") << node.text;
}

TEST(DiagWalk, RouteTypesAreFatal) {
  for (const char* type : {"blackhole", "unreachable", "prohibit"}) {
    Scratch s("bridge-node");
    AddRoute(
        s, "nodes/node-a/ip-route.json",
        absl::StrCat("{\"type\": \"", type, "\", \"dst\": \"203.0.113.0/24\", \"flags\": []}"));
    auto t = TraceLib(s.dir(), "pod:default/client", kExternal);
    ASSERT_TRACED(t);
    EXPECT_EQ(t.report.verdict(), "unreachable") << type << "\n" << t.text;
    const v1::Suspicion* m = FindSuspicion(t.report, "no_route", "FATAL");
    ASSERT_NE(m, nullptr) << type << "\n" << t.text;
    EXPECT_NE(m->message().find(type), std::string::npos) << m->message();
    EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
  }
}

TEST(DiagWalk, NoRouteAtAll) {
  Scratch s("bridge-node");
  ASSERT_EQ(s.RemoveFromList(
                "nodes/node-a/ip-route.json",
                [](const google::protobuf::Struct& r) { return Str(r, "dst") == "default"; }),
            1);
  auto t = TraceLib(s.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  ASSERT_NE(FindSuspicion(t.report, "no_route", "FATAL"), nullptr) << t.text;
}

TEST(DiagWalk, PolicyRuleIsFollowedAndReported) {
  Scratch s("bridge-node");
  s.EditJson("nodes/node-a/ip-rule.json", [](google::protobuf::Value* v) {
    auto* list = v->mutable_list_value()->mutable_values();
    list->Add()->CopyFrom(Json(R"({"priority": 100, "src": "10.244.0.0", "srclen": 24,
                                   "table": "100"})"));
    std::rotate(list->begin() + 1, list->end() - 1, list->end());
  });
  AddRoute(s, "nodes/node-a/ip-route.json",
           R"({"type": "prohibit", "dst": "default", "table": "100", "flags": []})");
  auto t = TraceLib(s.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "no_route", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("prohibit"), std::string::npos) << m->message();
  // The node's own traffic is not matched by the rule.
  auto node = TraceLib(s.dir(), "node:node-a", kExternal);
  EXPECT_EQ(node.report.verdict(), "reachable") << node.text;

  // A rule to a table with a usable route: followed, reported as INFO.
  Scratch u("bridge-node");
  u.EditJson("nodes/node-a/ip-rule.json", [](google::protobuf::Value* v) {
    auto* list = v->mutable_list_value()->mutable_values();
    list->Add()->CopyFrom(Json(R"({"priority": 100, "src": "10.244.0.0", "srclen": 24,
                                   "table": "100"})"));
    std::rotate(list->begin() + 1, list->end() - 1, list->end());
  });
  AddRoute(u, "nodes/node-a/ip-route.json",
           R"({"dst": "default", "gateway": "10.0.4.1", "dev": "eth0", "table": "100",
               "flags": []})");
  auto p = TraceLib(u.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(p);
  EXPECT_EQ(p.report.verdict(), "reachable") << p.text;
  const v1::Suspicion* pr = FindSuspicion(p.report, "policy_route_unexpected", "INFO");
  ASSERT_NE(pr, nullptr) << p.text;
  EXPECT_NE(pr->message().find("100"), std::string::npos);
}

TEST(DiagWalk, EgressLinkDown) {
  Scratch s("bridge-node");
  s.EditJson("nodes/node-a/ip-link.json", [](google::protobuf::Value* v) {
    for (auto& l : *v->mutable_list_value()->mutable_values()) {
      auto& f = *l.mutable_struct_value()->mutable_fields();
      if (f["ifname"].string_value() != "eth0") continue;
      f["flags"].mutable_list_value()->clear_values();
      f["flags"].mutable_list_value()->add_values()->set_string_value("BROADCAST");
      f["operstate"].set_string_value("DOWN");
    }
  });
  auto t = TraceLib(s.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "link_down", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("eth0"), std::string::npos);
}

TEST(DiagWalk, PodVethDownOnTheHostSide) {
  Scratch s("bridge-node");
  s.EditJson("nodes/node-a/ip-link.json", [](google::protobuf::Value* v) {
    for (auto& l : *v->mutable_list_value()->mutable_values()) {
      auto& f = *l.mutable_struct_value()->mutable_fields();
      if (f["ifname"].string_value() != "veth81c0e2aa") continue;
      f["flags"].mutable_list_value()->clear_values();
      f["operstate"].set_string_value("DOWN");
    }
  });
  auto t = TraceLib(s.dir(), "node:node-a", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "link_down", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("veth81c0e2aa"), std::string::npos) << m->message();
}

TEST(DiagWalk, IpForwardOff) {
  Scratch s("bridge-node");
  std::string f = "nodes/node-a/sysctl.txt";
  std::string text = testing::ReadAll(s.Path(f));
  s.Write(f, absl::StrReplaceAll(text, {{"forwarding = 1", "forwarding = 0"},
                                        {"net.ipv4.ip_forward = 1", "net.ipv4.ip_forward = 0"}}));
  auto t = TraceLib(s.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "ip_forward_disabled", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->iif(), "cni0");
  // Bridged traffic between two pods does not need forwarding.
  auto same = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  EXPECT_EQ(same.report.verdict(), "reachable") << same.text;
}

TEST(DiagWalk, RpFilterKernelSemantics) {
  // RPF-05's node-b: decapsulated on tun-nodea, the route back to 192.168.10.10 uses eth0.
  // Effective mode = max(all, dev); 1 strict, 2 loose. tun-nodea has no IPv4 address, and for
  // such a device fib_validate_source fails even in loose mode when the reverse route does not
  // use it ("if (no_addr) goto last_resort"); with an address, loose mode passes.
  struct Case {
    const char* all;
    const char* dev;
    bool with_address;
    bool drop;
  };
  for (const Case& c :
       {Case{"1", "0", false, true}, Case{"0", "1", false, true}, Case{"2", "1", false, true},
        Case{"0", "0", false, false}, Case{"1", "0", true, true}, Case{"2", "1", true, false},
        Case{"1", "2", true, false}, Case{"0", "2", true, false}}) {
    Scratch s("RPF-05");
    s.SetSysctl("nodes/node-b/sysctl.txt", "net.ipv4.conf.all.rp_filter", c.all);
    s.SetSysctl("nodes/node-b/sysctl.txt", "net.ipv4.conf.tun-nodea.rp_filter", c.dev);
    if (c.with_address) {
      s.EditJson("nodes/node-b/ip-addr.json", [](google::protobuf::Value* v) {
        for (auto& l : *v->mutable_list_value()->mutable_values()) {
          auto& f = *l.mutable_struct_value()->mutable_fields();
          if (f["ifname"].string_value() != "tun-nodea") continue;
          f["addr_info"].mutable_list_value()->add_values()->CopyFrom(
              Json(R"({"family": "inet", "local": "10.32.2.254", "prefixlen": 32,
                       "scope": "global", "label": "tun-nodea"})"));
        }
      });
    }
    auto t = TraceLib(s.dir(), "node:node-a", "10.32.2.7:8080/tcp");
    ASSERT_TRACED(t);
    const v1::Suspicion* m = FindSuspicion(t.report, "rp_filter_drop", "FATAL");
    EXPECT_EQ(m != nullptr, c.drop)
        << "all=" << c.all << " dev=" << c.dev << " address=" << c.with_address << "\n"
        << t.text;
  }
}

TEST(DiagWalk, NetfilterDropAndRejectAreNamed) {
  Scratch s("bridge-node");
  s.Replace("nodes/node-a/iptables-save.txt", "-A FORWARD -m conntrack --ctstate NEW",
            "-A FORWARD -d 203.0.113.0/24 -j DROP\n-A FORWARD -m conntrack --ctstate NEW");
  auto t = TraceLib(s.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "netfilter_drop", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("filter FORWARD"), std::string::npos) << m->message();
  EXPECT_NE(m->message().find("-d 203.0.113.0/24 -j DROP"), std::string::npos) << m->message();

  Scratch r("bridge-node");
  r.Replace("nodes/node-a/iptables-save.txt", "-A INPUT -j KUBE-FIREWALL",
            "-A INPUT -p tcp -m tcp --dport 22 -j REJECT --reject-with icmp-port-unreachable\n"
            "-A INPUT -j KUBE-FIREWALL");
  auto u = TraceLib(r.dir(), "pod:default/client", "node:node-a:22/tcp");
  ASSERT_TRACED(u);
  EXPECT_EQ(u.report.verdict(), "unreachable") << u.text;
  const v1::Suspicion* n = FindSuspicion(u.report, "netfilter_drop", "FATAL");
  ASSERT_NE(n, nullptr) << u.text;
  EXPECT_NE(n->message().find("INPUT"), std::string::npos) << n->message();
  EXPECT_NE(n->message().find("REJECT"), std::string::npos) << n->message();
}

TEST(DiagWalk, GatewayNeighbour) {
  Scratch s("bridge-node");
  s.EditJson("nodes/node-a/ip-neigh.json", [](google::protobuf::Value* v) {
    for (auto& n : *v->mutable_list_value()->mutable_values()) {
      auto& f = *n.mutable_struct_value()->mutable_fields();
      if (f["dst"].string_value() != "10.0.4.1") continue;
      f.erase("lladdr");
      f["state"].mutable_list_value()->clear_values();
      f["state"].mutable_list_value()->add_values()->set_string_value("FAILED");
    }
  });
  auto t = TraceLib(s.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "neighbor_missing", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("FAILED"), std::string::npos);

  Scratch u("bridge-node");
  u.RemoveFromList("nodes/node-a/ip-neigh.json",
                   [](const google::protobuf::Struct& n) { return Str(n, "dst") == "10.0.4.1"; });
  auto v = TraceLib(u.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(v);
  EXPECT_EQ(v.report.verdict(), "reachable") << v.text;
  EXPECT_NE(FindSuspicion(v.report, "neighbor_missing", "INFO"), nullptr) << v.text;
}

TEST(DiagWalk, NotListening) {
  auto t = TraceLib(CaseDir("bridge-node"), "pod:default/client", "pod:default/server:9090/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "not_listening", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "default/server");
  EXPECT_NE(m->message().find("8080/tcp"), std::string::npos) << m->message();
}

TEST(DiagWalk, Mtu) {
  // An explicit packet size above a device MTU cannot pass with DF.
  auto big = TraceLib(CaseDir("bridge-node"), "pod:default/client", kExternal, "auto", 64, 1600);
  ASSERT_TRACED(big);
  EXPECT_EQ(big.report.verdict(), "unreachable") << big.text;
  ASSERT_NE(FindSuspicion(big.report, "mtu_mismatch", "FATAL"), nullptr) << big.text;

  // A node uplink smaller than the pod's MTU: full-size packets need PMTU discovery.
  Scratch s("bridge-node");
  s.EditJson("nodes/node-a/ip-link.json", [](google::protobuf::Value* v) {
    for (auto& l : *v->mutable_list_value()->mutable_values()) {
      auto& f = *l.mutable_struct_value()->mutable_fields();
      if (f["ifname"].string_value() == "eth0") f["mtu"].set_number_value(1400);
    }
  });
  auto t = TraceLib(s.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "mtu_mismatch", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
}

TEST(DiagWalk, TtlAndLoops) {
  auto t = TraceLib(CaseDir("bridge-node"), "pod:default/client", kExternal, "auto", /*ttl=*/1);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "ttl_exceeded", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");

  // Two nodes of one subnet routing 10.67.99.0/24 at each other.
  Scratch s("calico-crosssubnet");
  AddRoute(s, "nodes/node-a/ip-route.json",
           R"({"dst": "10.67.99.0/24", "gateway": "10.20.0.12", "dev": "eth0", "flags": []})");
  AddRoute(s, "nodes/node-b/ip-route.json",
           R"({"dst": "10.67.99.0/24", "gateway": "10.20.0.11", "dev": "eth0", "flags": []})");
  auto loop = TraceLib(s.dir(), "pod:default/client", "10.67.99.9:80/tcp", "generic");
  ASSERT_TRACED(loop);
  EXPECT_EQ(loop.report.verdict(), "unreachable") << loop.text;
  const v1::Suspicion* l = FindSuspicion(loop.report, "ttl_exceeded", "FATAL");
  ASSERT_NE(l, nullptr) << loop.text;
  EXPECT_NE(l->message().find("loop"), std::string::npos) << l->message();
  EXPECT_LT(loop.report.hops_size(), 10);
}

TEST(DiagWalk, MissingFilesAreReportedNeverSilent) {
  Scratch s("bridge-node");
  s.Remove("nodes/node-a/sysctl.txt");
  auto t = TraceLib(s.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "file_missing", "INFO");
  ASSERT_NE(m, nullptr) << t.text;
  bool named = false;
  for (const auto& sus : t.report.suspicions()) {
    if (sus.code() == "file_missing" &&
        sus.message().find("nodes/node-a/sysctl.txt") != std::string::npos &&
        sus.message().find("cannot check") != std::string::npos) {
      named = true;
    }
  }
  EXPECT_TRUE(named) << t.text;

  Scratch r("bridge-node");
  r.Remove("nodes/node-a/ip-route.json");
  auto u = TraceLib(r.dir(), "pod:default/client", kExternal);
  ASSERT_TRACED(u);
  EXPECT_NE(u.report.verdict(), "reachable") << "no routes: nothing can be asserted\n" << u.text;
  EXPECT_NE(FindSuspicion(u.report, "snapshot_incomplete", "WARNING"), nullptr) << u.text;
}

TEST(DiagWalk, BridgedReplyNeedsBrNetfilter) {
  auto ok = TraceLib(CaseDir("kp-01-fixed"), "pod:web/client", "10.96.120.40:80/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(ok.report.verdict(), "reachable") << ok.text;

  Scratch s("kp-01-fixed");
  s.SetSysctl("nodes/node-a/sysctl.txt", "net.bridge.bridge-nf-call-iptables", "0");
  auto t = TraceLib(s.dir(), "pod:web/client", "10.96.120.40:80/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "asymmetric_return", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "web/client@reply");
  EXPECT_NE(FindSuspicion(t.report, "bridge_netfilter", "INFO"), nullptr) << t.text;
}

TEST(DiagWalk, VethPeersFoundByIfindexNotName) {
  // Rename the host-side veth in the node's files only: the pod's eth0 still points at its
  // ifindex, so the walk must still find the way.
  Scratch s("bridge-node");
  for (const char* f : {"nodes/node-a/ip-link.json", "nodes/node-a/ip-addr.json"}) {
    std::string text = testing::ReadAll(s.Path(f));
    s.Write(f, absl::StrReplaceAll(text, {{"veth81c0e2aa", "renamed0"}}));
  }
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_EQ(FindHop(t.report, "node-a")->oif(), "renamed0") << t.text;
}

// An encapsulated packet crossing a node-to-node veth must fit the RECEIVING device with the
// tunnel's whole overhead (is_skb_forwardable): WireGuard adds 60 bytes (model/tunnel.h), not
// IPIP's 20. diff-vxlan's nodes are cabled by veths (eth0 <-> eth0); its tunnel device becomes
// a WireGuard device and vx2's end of the cable gets MTU 1460.
TEST(DiagWalk, WireguardOuterPacketMustFitTheReceivingVethEnd) {
  Scratch s("diff-vxlan");
  for (const std::string node : {"vx1", "vx2"}) {
    s.EditJson(absl::StrCat("nodes/", node, "/ip-link.json"), [&](google::protobuf::Value* v) {
      for (auto& l : *v->mutable_list_value()->mutable_values()) {
        auto& f = *l.mutable_struct_value()->mutable_fields();
        if (f["ifname"].string_value() == "vxlan.calico") {
          f["linkinfo"].CopyFrom(Json(R"({"info_kind": "wireguard"})"));
        }
        if (node == "vx2" && f["ifname"].string_value() == "eth0") f["mtu"].set_number_value(1460);
      }
    });
  }
  // 1430 + 60 = 1490 bytes leave vx1's eth0 (MTU 1500); vx2's eth0 takes at most 1460 + 4.
  // Counted as IPIP (1450 bytes) the packet would pass.
  auto t = TraceLib(s.dir(), "10.93.1.2", "10.93.2.2:8080/udp", "auto", 64, 1430);
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "mtu_mismatch", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->id(), "vx1") << t.text;
  EXPECT_TRUE(absl::StrContains(m->message(), "1490-byte packets")) << m->message();
  EXPECT_TRUE(absl::StrContains(m->message(), "other end of the veth has MTU 1460")) << m->message();
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;

  // 1400 + 60 = 1460 fits.
  auto ok = TraceLib(s.dir(), "10.93.1.2", "10.93.2.2:8080/udp", "auto", 64, 1400);
  ASSERT_TRACED(ok);
  const v1::Suspicion* none = FindSuspicion(ok.report, "mtu_mismatch", "FATAL");
  EXPECT_TRUE(none == nullptr || HopOf(ok.report, none)->id() != "vx1") << ok.text;
}

// A plugin that breaks PluginAction's contract: kDeliverToPod without a pod.
class DeliverToNoPod : public Plugin {
 public:
  absl::string_view name() const override { return "deliver-to-no-pod"; }
  PluginAction OnIngress(const PluginContext&, const Where&, absl::string_view,
                         PathGraph::Vertex, const HookPacket&) override {
    PluginAction a;
    a.kind = PluginAction::Kind::kDeliverToPod;
    a.label = "bpf redirect_peer";
    return a;
  }
};

// The walk reports the plugin's bug as an error (sarena-diag exits 2) instead of dereferencing
// the missing pod.
TEST(DiagWalk, DeliverToPodWithoutAPodIsAnError) {
  auto snap = model::Snapshot::Open(CaseDir("bridge-node"));
  ASSERT_TRUE(snap.ok()) << snap.status();
  auto q = ParseQuery("pod:default/client", kExternal);
  ASSERT_TRUE(q.ok()) << q.status();
  DeliverToNoPod plugin;
  auto r = Trace(**snap, *q, plugin);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(),
                                "plugin deliver-to-no-pod: action kDeliverToPod (bpf redirect_peer)"))
      << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "names no pod")) << r.status();
}

}  // namespace
}  // namespace sarena::diag
