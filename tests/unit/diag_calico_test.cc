// The Calico plugin, one behaviour per test, on snapshot fixtures generated from real network
// namespaces (tests/data/cases/_gen/calico-*.py) and mutated one fault at a time.
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

const char* kClientToFiles[] = {"pod:default/client", "10.65.2.8:8080/tcp"};

TEST(DiagCalico, AutoDetectAndIpipHealthy) {
  auto t = TraceLib(CaseDir("calico-ipip"), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.plugin, "calico");
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_TRUE(testing::OnlyInfo(t.report)) << t.text;
  const v1::Hop* a = FindHop(t.report, "node-a");
  ASSERT_NE(a, nullptr) << t.text;
  EXPECT_EQ(a->iif(), CalicoVethName("default", "client"));
  EXPECT_EQ(a->oif(), "tunl0");  // ipipMode Always: encapsulated
  const v1::Hop* b = FindHop(t.report, "node-b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->iif(), "tunl0");  // decapsulated on tunl0
  EXPECT_EQ(b->oif(), CalicoVethName("default", "files"));
  ASSERT_NE(FindHop(t.report, "default/files@reply"), nullptr) << "reply walked";
}

TEST(DiagCalico, CrossSubnetUsesBgpInsideTheSubnetAndIpipAcross) {
  auto near =
      TraceLib(CaseDir("calico-crosssubnet"), "pod:default/client", "pod:default/near:8080/tcp");
  ASSERT_TRACED(near);
  EXPECT_EQ(near.report.verdict(), "reachable") << near.text;
  EXPECT_EQ(FindHop(near.report, "node-a")->oif(), "eth0") << near.text;
  auto far =
      TraceLib(CaseDir("calico-crosssubnet"), "pod:default/client", "pod:default/far:8080/tcp");
  ASSERT_TRACED(far);
  EXPECT_EQ(far.report.verdict(), "reachable") << far.text;
  EXPECT_EQ(FindHop(far.report, "node-a")->oif(), "tunl0") << far.text;
}

TEST(DiagCalico, CrossSubnetRouteThroughTheTunnelInsideTheSubnetIsFlagged) {
  Scratch s("calico-crosssubnet");
  s.EditJson("nodes/node-a/ip-route.json", [](google::protobuf::Value* v) {
    for (auto& r : *v->mutable_list_value()->mutable_values()) {
      auto& f = *r.mutable_struct_value()->mutable_fields();
      if (f["dst"].string_value() == "10.67.2.0/26") {
        f["dev"].set_string_value("tunl0");
        f["flags"].mutable_list_value()->add_values()->set_string_value("onlink");
      }
    }
  });
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/near:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "route_mismatch", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("BGP"), std::string::npos) << m->message();
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
}

// calico-crosssubnet-32 (tests/data/cases/_gen/calico-crosssubnet-32.py): node addresses are /32
// leases although node-a and node-b look like one /24. Calico decides CrossSubnet from the
// address's real prefix length, so node-b is another subnet: IPIP via tunl0, not eth0.
TEST(DiagCalico, CrossSubnetSlash32NodeAddressTunnelsToEveryPeer) {
  auto t = TraceLib(CaseDir("calico-crosssubnet-32-fixed"), "pod:default/client",
                    "pod:default/near:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_TRUE(testing::OnlyInfo(t.report)) << t.text;
  EXPECT_EQ(FindHop(t.report, "node-a")->oif(), "tunl0") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "cross_subnet", "INFO");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("/32"), std::string::npos) << m->message();
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
}

// The same nodes with calico-node's annotations still at /24 and node-b's block routed directly
// via eth0: the interface's real /32 decides (calico-node rewrites the annotation from it), the
// direct route is not Calico's, and the finding sits on node-a, whose route it is.
TEST(DiagCalico, CrossSubnetDecidedFromTheInterfacePrefixNotAStaleAnnotation) {
  auto t = TraceLib(CaseDir("calico-crosssubnet-32"), "pod:default/client",
                    "pod:default/near:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "route_mismatch", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("tunl0"), std::string::npos) << m->message();
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
  const v1::Suspicion* why = FindSuspicion(t.report, "cross_subnet", "INFO");
  ASSERT_NE(why, nullptr) << t.text;
  EXPECT_NE(why->message().find("eth0 10.20.0.11/32"), std::string::npos) << why->message();
  EXPECT_NE(why->message().find("10.20.0.11/24"), std::string::npos) << why->message();
  EXPECT_EQ(HopOf(t.report, why)->node(), "node-a");
  // Towards node-c (really another subnet) nothing changes.
  auto far = TraceLib(CaseDir("calico-crosssubnet-32"), "pod:default/client",
                      "pod:default/far:8080/tcp");
  ASSERT_TRACED(far);
  EXPECT_EQ(FindHop(far.report, "node-a")->oif(), "tunl0") << far.text;
  EXPECT_EQ(FindSuspicion(far.report, "route_mismatch"), nullptr) << far.text;
}

// neigh-stale (tests/data/cases/_gen/neigh-stale.py): node-a holds a permanent neighbour entry
// for pod default/server with the MAC of the pod before it was recreated. The kernel sends the
// frames to that MAC and the pod's eth0 drops them (PACKET_OTHERHOST); the finding sits on
// node-a, which holds the entry. The twin names the live MAC.
TEST(DiagCalico, PermanentNeighbourWithAStaleMacDropsAtTheHopHoldingIt) {
  auto t = TraceLib(CaseDir("neigh-stale"), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "neighbor_stale", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(m->hop(), "node-a") << t.text;
  EXPECT_NE(m->message().find("02:00:00:00:0a:06"), std::string::npos) << m->message();
  EXPECT_NE(m->message().find("02:00:00:00:01:06"), std::string::npos) << m->message();
  EXPECT_NE(m->message().find("permanent"), std::string::npos) << m->message();
  // The node itself sends through the same entry.
  auto node = TraceLib(CaseDir("neigh-stale"), "node:node-a", "pod:default/server:8080/tcp");
  ASSERT_TRACED(node);
  EXPECT_NE(FindSuspicion(node.report, "neighbor_stale", "FATAL"), nullptr) << node.text;
  // The server's own connections reach the client, and their replies die on the same entry.
  auto back = TraceLib(CaseDir("neigh-stale"), "pod:default/server", "pod:default/client:8080/tcp");
  ASSERT_TRACED(back);
  const v1::Suspicion* r = FindSuspicion(back.report, "neighbor_stale", "FATAL");
  ASSERT_NE(r, nullptr) << back.text;
  EXPECT_EQ(r->hop(), "node-a@reply") << back.text;
  auto fixed =
      TraceLib(CaseDir("neigh-stale-fixed"), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(fixed);
  EXPECT_EQ(fixed.report.verdict(), "reachable") << fixed.text;
  EXPECT_EQ(FindSuspicion(fixed.report, "neighbor_stale"), nullptr) << fixed.text;
}

// A learnt (REACHABLE) entry with the old MAC is re-resolved by the kernel: a WARNING, not a drop.
TEST(DiagCalico, LearntNeighbourWithAStaleMacIsAWarning) {
  Scratch s("neigh-stale");
  s.EditJson("nodes/node-a/ip-neigh.json", [](google::protobuf::Value* v) {
    for (auto& e : *v->mutable_list_value()->mutable_values()) {
      auto& st = *(*e.mutable_struct_value()->mutable_fields())["state"].mutable_list_value();
      st.clear_values();
      st.add_values()->set_string_value("REACHABLE");
    }
  });
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "neighbor_stale", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(m->hop(), "node-a");
  EXPECT_NE(t.report.verdict(), "unreachable") << t.text;
}

TEST(DiagCalico, MissingRemoteBlockRouteIsFatal) {
  Scratch s("calico-ipip");
  int n = s.RemoveFromList("nodes/node-a/ip-route.json", [](const google::protobuf::Struct& r) {
    return Str(r, "dst") == "10.65.2.0/26";
  });
  ASSERT_EQ(n, 1);
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "route_mismatch", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
  EXPECT_NE(m->message().find("10.65.2.0/26"), std::string::npos) << m->message();
  EXPECT_NE(m->message().find("tunl0"), std::string::npos) << m->message();
}

TEST(DiagCalico, MissingTunnelDeviceIsTunnelMissing) {
  Scratch s("calico-ipip");
  for (const char* f : {"nodes/node-a/ip-link.json", "nodes/node-a/ip-addr.json"}) {
    s.RemoveFromList(f,
                     [](const google::protobuf::Struct& l) { return Str(l, "ifname") == "tunl0"; });
  }
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  ASSERT_NE(FindSuspicion(t.report, "tunnel_missing", "FATAL"), nullptr) << t.text;
}

TEST(DiagCalico, DecapsulationNeedsTunl0OnTheRemoteNode) {
  Scratch s("calico-ipip");
  for (const char* f : {"nodes/node-b/ip-link.json", "nodes/node-b/ip-addr.json"}) {
    s.RemoveFromList(f,
                     [](const google::protobuf::Struct& l) { return Str(l, "ifname") == "tunl0"; });
  }
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "tunnel_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-b");
}

TEST(DiagCalico, ProxyArpAnswersThePodGateway) {
  Scratch s("calico-ipip");
  std::string veth = CalicoVethName("default", "client");
  s.SetSysctl("nodes/node-a/sysctl.txt", absl::StrCat("net.ipv4.conf.", veth, ".proxy_arp"), "0");
  auto cached = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(cached);
  EXPECT_EQ(cached.report.verdict(), "degraded") << cached.text;
  const v1::Suspicion* m = FindSuspicion(cached.report, "neighbor_missing", "CRITICAL");
  ASSERT_NE(m, nullptr) << cached.text;
  EXPECT_EQ(HopOf(cached.report, m)->id(), "default/client");
  s.RemoveFromList("nodes/node-a/pods/default/client/ip-neigh.json",
                   [](const google::protobuf::Struct&) { return true; });
  auto gone = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(gone);
  EXPECT_EQ(gone.report.verdict(), "unreachable") << gone.text;
  EXPECT_NE(FindSuspicion(gone.report, "neighbor_missing", "FATAL"), nullptr) << gone.text;
}

TEST(DiagCalico, VxlanWalksWithoutThePluginToo) {
  auto t = TraceLib(CaseDir("calico-vxlan"), "pod:default/client", "pod:default/server:8080/tcp",
                    "generic");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.plugin, "generic");
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
}

TEST(DiagCalico, LocalPodRouteMustUseItsCaliVeth) {
  auto ok = TraceLib(CaseDir("calico-ipip"), "pod:default/client", "pod:default/web-1:8080/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(ok.report.verdict(), "reachable") << ok.text;
  EXPECT_EQ(FindHop(ok.report, "node-a")->oif(), CalicoVethName("default", "web-1"));

  Scratch s("calico-ipip");
  s.Replace("nodes/node-a/ip-route.json",
            absl::StrCat("\"dev\": \"", CalicoVethName("default", "web-1"), "\""),
            absl::StrCat("\"dev\": \"", CalicoVethName("default", "client"), "\""));
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/web-1:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "route_mismatch", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find(CalicoVethName("default", "web-1")), std::string::npos);
}

// Adds `json` (one route object) to the front of node-a's ip-route.json, so it wins over the
// fixture's own routes of the same prefix.
void AddRouteFirst(Scratch& s, const std::string& json) {
  const std::string f = "nodes/node-a/ip-route.json";
  std::string text = testing::ReadAll(s.Path(f));
  size_t open = text.find('[');
  ASSERT_NE(open, std::string::npos) << f;
  text.insert(open + 1, absl::StrCat(json, ","));
  s.Write(f, text);
}

TEST(DiagCalico, RouteViaAMissingDeviceIsLinkMissingNotRouteMismatch) {
  // An inconsistent snapshot: a route to the remote pod names ghost0, which ip-link.json lacks
  // (the kernel deletes a device's routes with it). The walk says link_missing; Calico's route
  // check must not call it a wrong Calico route.
  Scratch s("calico-ipip");
  AddRouteFirst(s, R"({"dst": "10.65.2.8", "dev": "ghost0", "scope": "link", "flags": []})");
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "link_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
  EXPECT_NE(m->message().find("uses device 'ghost0' which does not exist"), std::string::npos)
      << m->message();
  EXPECT_EQ(FindSuspicion(t.report, "route_mismatch"), nullptr) << t.text;

  // A local pod's route via ghost0 likewise.
  Scratch l("calico-ipip");
  AddRouteFirst(l, R"({"dst": "10.65.1.7", "dev": "ghost0", "scope": "link", "flags": []})");
  auto lt = TraceLib(l.dir(), "pod:default/client", "pod:default/web-1:8080/tcp");
  ASSERT_TRACED(lt);
  EXPECT_EQ(lt.report.verdict(), "unreachable") << lt.text;
  ASSERT_NE(FindSuspicion(lt.report, "link_missing", "FATAL"), nullptr) << lt.text;
  EXPECT_EQ(FindSuspicion(lt.report, "route_mismatch"), nullptr) << lt.text;
}

TEST(DiagCalico, LocalTableRouteViaAMissingDeviceIsLinkMissing) {
  // "local 10.65.2.8 dev ghost0 table local": the kernel removes a device's local routes with
  // its addresses, so this is an inconsistent snapshot, not a delivery to node-a.
  Scratch s("calico-ipip");
  AddRouteFirst(s, R"({"type": "local", "dst": "10.65.2.8", "dev": "ghost0", "table": "local",
                      "protocol": "kernel", "scope": "host", "prefsrc": "10.65.2.8", "flags": []})");
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "link_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
  EXPECT_NE(m->message().find("ghost0"), std::string::npos) << m->message();
  EXPECT_EQ(FindSuspicion(t.report, "route_mismatch"), nullptr) << t.text;
}

TEST(DiagCalico, RemoteNodeWithoutIpv4AddressAnnotation) {
  Scratch s("calico-ipip");
  s.EditJson("cluster/nodes.json", [](google::protobuf::Value* v) {
    for (auto& n : *v->mutable_struct_value()
                        ->mutable_fields()
                        ->at("items")
                        .mutable_list_value()
                        ->mutable_values()) {
      auto& meta = *n.mutable_struct_value()
                        ->mutable_fields()
                        ->at("metadata")
                        .mutable_struct_value()
                        ->mutable_fields();
      if (meta["name"].string_value() == "node-b") {
        meta["annotations"].mutable_struct_value()->mutable_fields()->clear();
      }
    }
  });
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "node_address_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("node-b"), std::string::npos);
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
}

TEST(DiagCalico, PodOutsideEveryPool) {
  Scratch s("calico-ipip");
  s.Replace("cluster/ippools.json", "\"cidr\": \"10.65.0.0/16\"", "\"cidr\": \"10.99.0.0/16\"");
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "ippool_not_found", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("10.65.1.3"), std::string::npos) << m->message();
}

TEST(DiagCalico, NatOutgoing) {
  const char* ext = "198.51.100.7:443/tcp";
  auto ok = TraceLib(CaseDir("calico-ipip"), "pod:default/client", ext);
  ASSERT_TRACED(ok);
  EXPECT_EQ(ok.report.verdict(), "reachable") << ok.text;
  const v1::Hop* a = FindHop(ok.report, "node-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->packet().src(), "10.128.0.4") << "masqueraded\n" << ok.text;

  // Felix's MASQUERADE rule gone while the pool still says natOutgoing.
  Scratch s("calico-ipip");
  s.Replace("nodes/node-a/iptables-save.txt",
            "--comment \"cali:flqWnvo8yq4ULQLa\" -j MASQUERADE --random-fully",
            "--comment \"cali:flqWnvo8yq4ULQLa\" -j RETURN");
  auto t = TraceLib(s.dir(), "pod:default/client", ext);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "nat_outgoing_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");

  // Pod to pod and pod to node are never masqueraded, with or without the rule.
  auto pod = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  EXPECT_EQ(FindSuspicion(pod.report, "nat_outgoing_missing"), nullptr) << pod.text;
  auto node = TraceLib(s.dir(), "pod:default/client", "10.128.0.5:22/tcp");
  EXPECT_EQ(FindSuspicion(node.report, "nat_outgoing_missing"), nullptr) << node.text;

  // natOutgoing false: no masquerade is expected.
  s.Replace("cluster/ippools.json", "\"natOutgoing\": true", "\"natOutgoing\": false");
  auto off = TraceLib(s.dir(), "pod:default/client", ext);
  EXPECT_EQ(FindSuspicion(off.report, "nat_outgoing_missing"), nullptr) << off.text;
}

// calico-natout-overlap (tests/data/cases/_gen/calico-natout-overlap.py): pool 10.66.0.0/16 with
// natOutgoing overlaps a VM network 10.66.250.0/24 outside the cluster. Felix's MASQUERADE skips
// destinations inside any pool, so the pod's packet leaves node-a with the pod address: the
// finding is on node-a (where the exemption applies), FATAL because natOutgoing says nothing
// routes pod addresses back. The twin narrows the pool to /17: masqueraded, reachable.
TEST(DiagCalico, NatOutgoingSkipsPoolDestinationsOutsideTheCluster) {
  const char* vm = "10.66.250.10:443/tcp";
  auto t = TraceLib(CaseDir("calico-natout-overlap"), "pod:default/client", vm);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "nat_outgoing_pool_destination", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a") << t.text;
  EXPECT_EQ(HopOf(t.report, m)->kind(), "node") << t.text;
  EXPECT_NE(m->message().find("10.66.0.0/16"), std::string::npos) << t.text;
  EXPECT_EQ(FindHop(t.report, "node-a")->packet().src(), "10.66.1.195") << "not masqueraded\n"
                                                                          << t.text;

  auto fixed = TraceLib(CaseDir("calico-natout-overlap-fixed"), "pod:default/client", vm);
  ASSERT_TRACED(fixed);
  EXPECT_EQ(fixed.report.verdict(), "reachable") << fixed.text;
  EXPECT_EQ(FindSuspicion(fixed.report, "nat_outgoing_pool_destination"), nullptr) << fixed.text;
  EXPECT_EQ(FindHop(fixed.report, "node-a")->packet().src(), "10.10.0.11") << fixed.text;

  // Inside the pool but Calico's own paths: a pod, the other node's tunnel address, and a
  // pool address in node-b's block (no pod: node-b's blackhole drops it, no_route there).
  auto pod = TraceLib(CaseDir("calico-natout-overlap"), "pod:default/client",
                      "pod:default/server:8080/tcp");
  EXPECT_EQ(pod.report.verdict(), "reachable") << pod.text;
  auto vtep = TraceLib(CaseDir("calico-natout-overlap"), "pod:default/client", "10.66.2.192:22/tcp");
  EXPECT_EQ(FindSuspicion(vtep.report, "nat_outgoing_pool_destination"), nullptr) << vtep.text;
  auto hole = TraceLib(CaseDir("calico-natout-overlap"), "pod:default/client", "10.66.2.250:80/tcp");
  EXPECT_EQ(FindSuspicion(hole.report, "nat_outgoing_pool_destination"), nullptr) << hole.text;
  const v1::Suspicion* nr = FindSuspicion(hole.report, "no_route", "FATAL");
  ASSERT_NE(nr, nullptr) << hole.text;
  EXPECT_EQ(HopOf(hole.report, nr)->node(), "node-b") << hole.text;

  // Without natOutgoing the operator routes pod addresses back: no FATAL, the reply's route is
  // the network's to provide (a warning).
  Scratch s("calico-natout-overlap");
  s.Replace("cluster/ippools.json", "\"natOutgoing\": true", "\"natOutgoing\": false");
  auto off = TraceLib(s.dir(), "pod:default/client", vm);
  EXPECT_EQ(FindSuspicion(off.report, "nat_outgoing_pool_destination"), nullptr) << off.text;
  EXPECT_NE(off.report.verdict(), "unreachable") << off.text;
}

TEST(DiagCalico, NatOutgoingModelledWithoutIptables) {
  Scratch s("calico-ipip");
  s.Remove("nodes/node-a/iptables-save.txt");
  auto t = TraceLib(s.dir(), "pod:default/client", "198.51.100.7:443/tcp");
  ASSERT_TRACED(t);
  EXPECT_NE(FindSuspicion(t.report, "file_missing", "INFO"), nullptr) << t.text;
  EXPECT_NE(FindSuspicion(t.report, "nat_outgoing", "INFO"), nullptr) << t.text;
  EXPECT_EQ(FindHop(t.report, "node-a")->packet().src(), "10.128.0.4") << t.text;
}

TEST(DiagCalico, ServiceBackendsOnBothNodes) {
  auto t = TraceLib(CaseDir("calico-ipip"), "pod:default/client", "svc:default/web:80/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  ASSERT_NE(FindHop(t.report, "node-a/svc:default/web@10.65.1.7:8080"), nullptr) << t.text;
  ASSERT_NE(FindHop(t.report, "node-a/svc:default/web@10.65.2.9:8080"), nullptr) << t.text;
  ASSERT_NE(FindHop(t.report, "default/web-1"), nullptr);
  ASSERT_NE(FindHop(t.report, "default/web-2"), nullptr);
}

TEST(DiagCalico, ServiceOneBrokenBackendIsCritical) {
  Scratch s("calico-ipip");
  ASSERT_EQ(s.RemoveFromList(
                "nodes/node-b/ip-route.json",
                [](const google::protobuf::Struct& r) { return Str(r, "dst") == "10.65.2.9"; }),
            1);
  auto t = TraceLib(s.dir(), "pod:default/client", "svc:default/web:80/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "no_route", "CRITICAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-b");
  EXPECT_NE(m->message().find("blackhole"), std::string::npos) << m->message();
}

TEST(DiagCalico, ServiceWithoutReadyEndpoints) {
  Scratch s("calico-ipip");
  s.Replace("cluster/endpointslices.json", "\"ready\": true", "\"ready\": false");
  auto t = TraceLib(s.dir(), "pod:default/client", "svc:default/web:80/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "service_no_endpoints", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->kind(), "service");
}

TEST(DiagCalico, LoadBalancerSourceRanges) {
  auto denied = TraceLib(CaseDir("calico-ipip"), "192.0.2.1", "203.0.113.10:80/tcp");
  ASSERT_TRACED(denied);
  EXPECT_EQ(denied.report.verdict(), "unreachable") << denied.text;
  const v1::Suspicion* m = FindSuspicion(denied.report, "source_range_denied", "FATAL");
  ASSERT_NE(m, nullptr) << denied.text;
  EXPECT_NE(m->message().find("198.51.100.0/24"), std::string::npos);
  auto allowed = TraceLib(CaseDir("calico-ipip"), "198.51.100.7", "203.0.113.10:80/tcp");
  ASSERT_TRACED(allowed);
  EXPECT_EQ(FindSuspicion(allowed.report, "source_range_denied"), nullptr) << allowed.text;
  EXPECT_EQ(allowed.report.verdict(), "reachable") << allowed.text;
}

TEST(DiagCalico, ExternalTrafficPolicyLocal) {
  auto drop = TraceLib(CaseDir("calico-ipip"), "192.0.2.50", "10.128.0.4:30090/tcp");
  ASSERT_TRACED(drop);
  EXPECT_EQ(drop.report.verdict(), "unreachable") << drop.text;
  const v1::Suspicion* m = FindSuspicion(drop.report, "external_traffic_policy_local_drop");
  ASSERT_NE(m, nullptr) << drop.text;
  EXPECT_EQ(m->level(), "FATAL");
  EXPECT_EQ(HopOf(drop.report, m)->node(), "node-a");
  auto ok = TraceLib(CaseDir("calico-ipip"), "192.0.2.50", "10.128.0.5:30090/tcp");
  ASSERT_TRACED(ok);
  EXPECT_EQ(ok.report.verdict(), "reachable") << ok.text;
}

TEST(DiagCalico, IpForwardOffOnTheRemoteNode) {
  Scratch s("calico-ipip");
  std::string f = "nodes/node-b/sysctl.txt";
  std::string text = testing::ReadAll(s.Path(f));
  s.Write(f, absl::StrReplaceAll(text, {{"forwarding = 1", "forwarding = 0"},
                                        {"net.ipv4.ip_forward = 1", "net.ipv4.ip_forward = 0"}}));
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "ip_forward_disabled", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-b");
}

TEST(DiagCalico, TunnelIngressForwardingOff) {
  Scratch s("calico-ipip");
  s.SetSysctl("nodes/node-b/sysctl.txt", "net.ipv4.conf.tunl0.forwarding", "0");
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "iface_forwarding_disabled", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  const v1::Hop* h = HopOf(t.report, m);
  EXPECT_EQ(h->node(), "node-b");
  EXPECT_EQ(h->iif(), "tunl0");
}

TEST(DiagCalico, PolicyRouteIsUnexpected) {
  Scratch s("calico-ipip");
  s.EditJson("nodes/node-a/ip-rule.json", [](google::protobuf::Value* v) {
    google::protobuf::Value rule;
    auto& f = *rule.mutable_struct_value()->mutable_fields();
    f["priority"].set_number_value(100);
    f["src"].set_string_value("10.65.1.0");
    f["srclen"].set_number_value(26);
    f["table"].set_string_value("100");
    auto* list = v->mutable_list_value()->mutable_values();
    list->Add()->CopyFrom(rule);
    std::rotate(list->rbegin(), list->rbegin() + 1, list->rend());
  });
  s.EditJson("nodes/node-a/ip-route.json", [](google::protobuf::Value* v) {
    google::protobuf::Value r;
    auto& f = *r.mutable_struct_value()->mutable_fields();
    f["dst"].set_string_value("10.65.2.0/26");
    f["gateway"].set_string_value("10.128.0.5");
    f["dev"].set_string_value("tunl0");
    f["table"].set_string_value("100");
    f["protocol"].set_string_value("static");
    f["flags"].mutable_list_value()->add_values()->set_string_value("onlink");
    v->mutable_list_value()->add_values()->CopyFrom(r);
  });
  auto t = TraceLib(s.dir(), kClientToFiles[0], kClientToFiles[1]);
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "policy_route_unexpected", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
}

TEST(DiagCalico, VxlanHealthy) {
  auto t = TraceLib(CaseDir("calico-vxlan"), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.plugin, "calico");
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_TRUE(testing::OnlyInfo(t.report)) << t.text;
  EXPECT_EQ(FindHop(t.report, "node-a")->oif(), "vxlan.calico");
  EXPECT_EQ(FindHop(t.report, "node-b")->iif(), "vxlan.calico");
}

TEST(DiagCalico, VxlanFdbEntryMissing) {
  Scratch s("calico-vxlan");
  ASSERT_EQ(s.RemoveFromList("nodes/node-a/bridge-fdb.json",
                             [](const google::protobuf::Struct& e) {
                               return Str(e, "ifname") == "vxlan.calico" && !Str(e, "dst").empty();
                             }),
            1);
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "vxlan_fdb_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(HopOf(t.report, m)->node(), "node-a");
}

TEST(DiagCalico, VxlanNeighbourMissing) {
  Scratch s("calico-vxlan");
  ASSERT_EQ(s.RemoveFromList(
                "nodes/node-a/ip-neigh.json",
                [](const google::protobuf::Struct& n) { return Str(n, "dev") == "vxlan.calico"; }),
            1);
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  ASSERT_NE(FindSuspicion(t.report, "neighbor_missing", "FATAL"), nullptr) << t.text;
}

TEST(DiagCalico, VxlanTunnelAddressAnnotationMissing) {
  Scratch s("calico-vxlan");
  s.Replace("cluster/nodes.json", "\"projectcalico.org/IPv4VXLANTunnelAddr\": \"10.66.2.192\"",
            "\"projectcalico.org/IPv4VXLANTunnelAddr\": \"\"");
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "node_address_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("IPv4VXLANTunnelAddr"), std::string::npos) << m->message();
}

TEST(DiagCalico, VxlanPodMtuTooLarge) {
  Scratch s("calico-vxlan");
  s.Replace("nodes/node-a/pods/default/client/ip-link.json", "\"mtu\": 1450", "\"mtu\": 1500");
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "mtu_mismatch", "WARNING");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_NE(m->message().find("1450"), std::string::npos) << m->message();
}

// multipath-ecmp (tests/data/cases/_gen/multipath-ecmp.py): node-a reaches node-b's block over an
// ECMP route with two next hops (eth0, eth1); node-b has forwarding off on eth1. Flows hashed onto
// eth1 die at node-b's ingress, the others get through: every next hop is walked, the failing
// one is CRITICAL (not FATAL) on node-b's eth1 branch with the share of flows, and the verdict is
// degraded. The twin (forwarding on) is reachable over both next hops.
TEST(DiagCalico, MultipathRouteWalksEveryNextHopAndNamesTheShareThatDies) {
  auto t = TraceLib(CaseDir("multipath-ecmp"), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Suspicion* mp = FindSuspicion(t.report, "multipath_route", "INFO");
  ASSERT_NE(mp, nullptr) << t.text;
  EXPECT_EQ(mp->hop(), "node-a") << t.text;
  EXPECT_NE(mp->message().find("2 live next hops"), std::string::npos) << mp->message();
  EXPECT_NE(mp->message().find("layer 4"), std::string::npos) << mp->message();  // policy 1
  ASSERT_NE(FindHop(t.report, "node-a@eth0"), nullptr) << t.text;
  ASSERT_NE(FindHop(t.report, "node-a@eth1"), nullptr) << t.text;
  EXPECT_EQ(FindHop(t.report, "node-a@eth1")->oif(), "eth1") << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "iface_forwarding_disabled", "FATAL"), nullptr) << t.text;
  const v1::Suspicion* c = FindSuspicion(t.report, "iface_forwarding_disabled", "CRITICAL");
  ASSERT_NE(c, nullptr) << t.text;
  EXPECT_EQ(FindHop(t.report, c->hop())->iif(), "eth1") << t.text;
  EXPECT_NE(c->message().find("1 of 2 next hops"), std::string::npos) << c->message();
  EXPECT_NE(c->message().find("50% of flows"), std::string::npos) << c->message();

  auto fixed =
      TraceLib(CaseDir("multipath-ecmp-fixed"), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(fixed);
  EXPECT_EQ(fixed.report.verdict(), "reachable") << fixed.text;
  EXPECT_NE(FindSuspicion(fixed.report, "multipath_route", "INFO"), nullptr) << fixed.text;
}

// Weights set the share; with every next hop failing the FATAL stays FATAL.
TEST(DiagCalico, MultipathShareFollowsWeightsAndAllFailingIsFatal) {
  {
    Scratch s("multipath-ecmp");
    s.EditJson("nodes/node-a/ip-route.json", [](google::protobuf::Value* v) {
      for (auto& r : *v->mutable_list_value()->mutable_values()) {
        auto& f = *r.mutable_struct_value()->mutable_fields();
        if (f["dst"].string_value() != "10.67.2.0/26") continue;
        auto& nhs = *f["nexthops"].mutable_list_value()->mutable_values();
        (*nhs[1].mutable_struct_value()->mutable_fields())["weight"].set_number_value(3);
      }
    });
    auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
    ASSERT_TRACED(t);
    const v1::Suspicion* c = FindSuspicion(t.report, "iface_forwarding_disabled", "CRITICAL");
    ASSERT_NE(c, nullptr) << t.text;
    EXPECT_NE(c->message().find("75% of flows"), std::string::npos) << c->message();
  }
  {
    Scratch s("multipath-ecmp");
    s.SetSysctl("nodes/node-b/sysctl.txt", "net.ipv4.conf.eth0.forwarding", "0");
    auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
    ASSERT_TRACED(t);
    EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
    EXPECT_NE(FindSuspicion(t.report, "iface_forwarding_disabled", "FATAL"), nullptr) << t.text;
  }
}

// A FORWARD rule that matches the egress device (-o eth1) drops only the flows hashed onto that
// next hop: the walk forks right after the route lookup, so FORWARD sees each next hop's device
// (it used to see the first next hop's for every branch and said "reachable").
TEST(DiagCalico, MultipathForwardRuleOnOneNextHopDropsOnlyThatBranch) {
  Scratch s("multipath-ecmp-fixed");
  s.Replace("nodes/node-a/iptables-save.txt",
            "-A FORWARD -m comment --comment \"cali:wUHhoiAYhphO9Mso\" -j cali-FORWARD\n",
            "-A FORWARD -o eth1 -j DROP\n"
            "-A FORWARD -m comment --comment \"cali:wUHhoiAYhphO9Mso\" -j cali-FORWARD\n");
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "degraded") << t.text;
  const v1::Hop* eth1 = FindHop(t.report, "node-a@eth1");
  const v1::Hop* eth0 = FindHop(t.report, "node-a@eth0");
  ASSERT_NE(eth1, nullptr) << t.text;
  ASSERT_NE(eth0, nullptr) << t.text;
  bool dropped_on_eth1 = false;
  for (const v1::Suspicion& x : t.report.suspicions()) {
    if (x.level() != "CRITICAL" && x.level() != "FATAL") continue;
    EXPECT_EQ(x.level(), "CRITICAL") << x.code() << ": " << x.message();
    EXPECT_NE(x.hop(), "node-a@eth0") << x.code() << ": " << x.message();
    if (x.hop() == "node-a@eth1") {
      dropped_on_eth1 = true;
      EXPECT_NE(x.message().find("50% of flows"), std::string::npos) << x.message();
    }
  }
  EXPECT_TRUE(dropped_on_eth1) << t.text;
}

// A check made once per place (here Calico's per-pod gateway ARP check at the server) runs in
// every branch: a FATAL every next hop reaches is in each branch and stays FATAL instead of being
// taken for a failure of the first branch walked ("only 1 of 2 next hops fail").
TEST(DiagCalico, MultipathFatalSharedByEveryBranchStaysFatal) {
  Scratch s("multipath-ecmp-fixed");
  s.SetSysctl("nodes/node-b/sysctl.txt", "net.ipv4.conf.cali7715d358f22.proxy_arp", "0");
  EXPECT_EQ(s.RemoveFromList("nodes/node-b/pods/default/server/ip-neigh.json",
                             [](const google::protobuf::Struct& n) {
                               return n.fields().at("dst").string_value() == "169.254.1.1";
                             }),
            1);
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  EXPECT_NE(FindSuspicion(t.report, "neighbor_missing", "FATAL"), nullptr) << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "neighbor_missing", "CRITICAL"), nullptr) << t.text;
  // Calico's check is in both branches (the walk's own veth drop is too, which is why the
  // verdict was right even when the check ran only in the first branch).
  int proxy_arp_findings = 0;
  for (const v1::Suspicion& x : t.report.suspicions()) {
    EXPECT_EQ(x.message().find("next hops of the multipath route fail"), std::string::npos)
        << x.message();
    proxy_arp_findings += x.code() == "neighbor_missing" && x.level() == "FATAL" &&
                          absl::StartsWith(x.message(), "proxy_arp is off");
  }
  EXPECT_EQ(proxy_arp_findings, 2) << t.text;
}

// A route with more next hops than the walk forks into (kMaxNexthopBranches = 16): the heaviest
// is walked and the INFO says the others are not checked.
TEST(DiagCalico, MultipathWithTooManyNextHopsWalksTheHeaviestAndSaysSo) {
  Scratch s("multipath-ecmp-fixed");
  s.EditJson("nodes/node-a/ip-route.json", [](google::protobuf::Value* v) {
    for (auto& r : *v->mutable_list_value()->mutable_values()) {
      auto& f = *r.mutable_struct_value()->mutable_fields();
      if (f["dst"].string_value() != "10.67.2.0/26") continue;
      auto& nhs = *f["nexthops"].mutable_list_value()->mutable_values();
      google::protobuf::Value first = nhs[0];
      google::protobuf::Value second = nhs[1];
      (*second.mutable_struct_value()->mutable_fields())["weight"].set_number_value(5);
      nhs.Clear();
      for (int i = 0; i < 16; ++i) *nhs.Add() = first;
      *nhs.Add() = second;
    }
  });
  auto t = TraceLib(s.dir(), "pod:default/client", "pod:default/server:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Suspicion* mp = FindSuspicion(t.report, "multipath_route", "INFO");
  ASSERT_NE(mp, nullptr) << t.text;
  EXPECT_NE(mp->message().find("17 live next hops"), std::string::npos) << mp->message();
  EXPECT_NE(mp->message().find("only via 10.21.0.12 dev eth1 is walked (more than 16 next hops)"),
            std::string::npos)
      << mp->message();
  EXPECT_NE(FindHop(t.report, "node-a@eth1"), nullptr) << t.text;
  EXPECT_EQ(FindHop(t.report, "node-a@eth0"), nullptr) << t.text;
  EXPECT_LT(t.report.hops_size(), 40) << t.text;
}

}  // namespace
}  // namespace sarena::diag
