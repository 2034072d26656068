// Non-node namespaces of a snapshot and the way out of the cluster (issue 11 item 2): a router
// namespace walked both ways, BIRD's recursive next hop through it, a kind node's veth uplink as
// the cluster exit, and veth peers told apart when ifindexes collide across namespaces. On the
// fixtures tests/data/cases/{router-noreturn,kind-veth-uplink,calico-crosssubnet-router}[-fixed]
// (and calico-crosssubnet-router-wide), built from real network
// namespaces by tests/data/cases/_gen/.
#include <string>

#include "gtest/gtest.h"
#include "tests/lib/diag_testing.h"

namespace sarena::diag {
namespace {

using testing::CaseDir;
using testing::FindHop;
using testing::FindSuspicion;
using testing::HopOf;
using testing::Scratch;

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The router lost its route to node-a's block: the request reaches far, far's reply dies on
// the router (the kernel: SKB_DROP_REASON_IP_INNOROUTES there).
TEST(DiagUplink, RouterWithoutReturnRouteIsFatalAtTheRouterOnTheReply) {
  auto t = testing::TraceLib(CaseDir("router-noreturn"), "pod:default/client",
                             "pod:default/far:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.plugin, "calico");
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* s = FindSuspicion(t.report, "no_route", "FATAL");
  ASSERT_NE(s, nullptr) << t.text;
  EXPECT_EQ(s->hop(), "router@reply") << t.text;
  EXPECT_EQ(HopOf(t.report, s)->node(), "router");
  EXPECT_TRUE(Has(s->message(), "10.67.1.5")) << s->message();
  // The request crossed the router and was delivered.
  ASSERT_NE(FindHop(t.report, "router"), nullptr) << t.text;
  EXPECT_EQ(FindHop(t.report, "router")->oif(), "rc");
  ASSERT_NE(FindHop(t.report, "default/far"), nullptr) << t.text;
  // BIRD's recursive next hop (the block via the router, not via node-c) is Calico's own route.
  EXPECT_EQ(FindSuspicion(t.report, "route_mismatch"), nullptr) << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "snapshot_incomplete"), nullptr) << t.text;
}

TEST(DiagUplink, RouterWithReturnRouteIsReachableBothWays) {
  auto t = testing::TraceLib(CaseDir("router-noreturn-fixed"), "pod:default/client",
                             "pod:default/far:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_TRUE(testing::OnlyInfo(t.report)) << t.text;
  const v1::Hop* back = FindHop(t.report, "router@reply");
  ASSERT_NE(back, nullptr) << t.text;
  EXPECT_EQ(back->iif(), "rc");
  EXPECT_EQ(back->oif(), "ra");
  ASSERT_NE(FindHop(t.report, "default/client@reply"), nullptr) << t.text;
  // The router is told apart from a node, once, on the hop where the walk enters it.
  const v1::Suspicion* r = FindSuspicion(t.report, "router", "INFO");
  ASSERT_NE(r, nullptr) << t.text;
  EXPECT_EQ(r->hop(), "router") << t.text;
  EXPECT_TRUE(Has(r->message(), "not a Kubernetes node")) << r->message();
}

// A namespace that nodes.json lists is a node, not a router; without nodes.json (a live
// collect) nothing is called a router.
TEST(DiagUplink, NodesAreNotRouters) {
  auto t = testing::TraceLib(CaseDir("kind-veth-uplink-fixed"), "pod:default/client",
                             "pod:default/web:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(FindSuspicion(t.report, "router"), nullptr) << t.text;
  Scratch s("router-noreturn-fixed");
  s.Remove("cluster/nodes.json");
  auto live = testing::TraceLib(s.dir(), "pod:default/client", "pod:default/far:8080/tcp");
  ASSERT_TRACED(live);
  EXPECT_EQ(FindSuspicion(live.report, "router"), nullptr) << live.text;
}

// A route via the router that is NOT the recursive resolution of the peer's address (node-a's
// own route to node-c's address goes elsewhere) is still flagged.
TEST(DiagUplink, RouteViaAnotherGatewayThanThePeersIsStillFlagged) {
  Scratch s("router-noreturn-fixed");
  s.EditJson("nodes/node-a/ip-route.json", [](google::protobuf::Value* v) {
    google::protobuf::Value r;
    auto& f = *r.mutable_struct_value()->mutable_fields();
    f["dst"].set_string_value("10.30.0.13");
    f["gateway"].set_string_value("10.20.0.99");
    f["dev"].set_string_value("eth0");
    f["flags"].mutable_list_value();
    *v->mutable_list_value()->add_values() = r;
  });
  auto t = testing::TraceLib(s.dir(), "pod:default/client", "pod:default/far:8080/tcp");
  ASSERT_TRACED(t);
  const v1::Suspicion* m = FindSuspicion(t.report, "route_mismatch");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(m->hop(), "node-a") << t.text;
}

// kind: eth0 is a veth into Docker's bridge network. A healthy cluster's pod -> internet query
// leaves the cluster there (masqueraded by kindnet), and is reachable.
TEST(DiagUplink, KindVethUplinkIsTheWayOut) {
  auto t = testing::TraceLib(CaseDir("kind-veth-uplink-fixed"), "pod:default/client",
                             "93.184.216.34:443/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_TRUE(testing::OnlyInfo(t.report)) << t.text;
  const v1::Suspicion* exit = FindSuspicion(t.report, "cluster_exit", "INFO");
  ASSERT_NE(exit, nullptr) << t.text;
  EXPECT_EQ(exit->hop(), "kind-worker") << t.text;
  EXPECT_TRUE(Has(exit->message(), "uplink eth0")) << exit->message();
  EXPECT_EQ(FindHop(t.report, "kind-worker")->oif(), "eth0");
  ASSERT_NE(FindHop(t.report, "external:93.184.216.34"), nullptr) << t.text;
  ASSERT_NE(FindHop(t.report, "default/client@reply"), nullptr) << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "snapshot_incomplete"), nullptr) << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "neighbor_missing", "FATAL"), nullptr) << t.text;
}

TEST(DiagUplink, KindNodeToOutsideIsReachable) {
  auto t = testing::TraceLib(CaseDir("kind-veth-uplink-fixed"), "node:kind-control-plane",
                             "8.8.8.8:53/udp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  EXPECT_NE(FindSuspicion(t.report, "cluster_exit", "INFO"), nullptr) << t.text;
}

// kindnet's MASQUERADE is gone on kind-worker: the pod's address leaves through the uplink, and
// the Docker host neither masquerades it nor routes it back (the kernel, tests/privileged/
// diag_diff_test.sh family kind_masq: the SYN is delivered, the SYN-ACK finds no route,
// TcpExtListenDrops). FATAL on the node that should have masqueraded, and the walk ends there.
TEST(DiagUplink, KindPodLeavingWithoutMasqueradeIsFatalOnTheNode) {
  auto t = testing::TraceLib(CaseDir("kind-veth-uplink"), "pod:default/client",
                             "93.184.216.34:443/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "nat_outgoing_missing", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(m->hop(), "kind-worker") << t.text;
  EXPECT_TRUE(Has(m->message(), "without SNAT")) << m->message();
  EXPECT_TRUE(Has(m->message(), "10.244.1.2")) << m->message();
  EXPECT_NE(FindSuspicion(t.report, "cluster_exit", "INFO"), nullptr) << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "route_mismatch"), nullptr) << t.text;
  EXPECT_EQ(FindSuspicion(t.report, "snapshot_incomplete"), nullptr) << t.text;
  // The masquerading node is healthy: its pod's traffic leaves as the node.
  auto cp = testing::TraceLib(CaseDir("kind-veth-uplink"), "pod:default/web",
                              "93.184.216.34:443/tcp");
  ASSERT_TRACED(cp);
  EXPECT_EQ(cp.report.verdict(), "reachable") << cp.text;
  EXPECT_EQ(FindSuspicion(cp.report, "nat_outgoing_missing"), nullptr) << cp.text;
}

// kindnet's route to the peer's podCIDR is gone on kind-worker: the pod -> pod packet takes the
// default route into the Docker host, which has no route for pod addresses (the kernel, family
// kind_route: IP_INNOROUTES there). FATAL no_route on the node, not "reachable if the underlay
// routes pod addresses".
TEST(DiagUplink, KindPodToPodWithoutThePeersPodCidrRouteIsNoRouteOnTheNode) {
  Scratch s("kind-veth-uplink-fixed");
  EXPECT_EQ(s.RemoveFromList("nodes/kind-worker/ip-route.json",
                             [](const google::protobuf::Struct& r) {
                               auto it = r.fields().find("dst");
                               return it != r.fields().end() &&
                                      it->second.string_value() == "10.244.0.0/24";
                             }),
            1);
  auto t = testing::TraceLib(s.dir(), "pod:default/client", "pod:default/web:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* m = FindSuspicion(t.report, "no_route", "FATAL");
  ASSERT_NE(m, nullptr) << t.text;
  EXPECT_EQ(m->hop(), "kind-worker") << t.text;
  EXPECT_TRUE(Has(m->message(), "10.244.0.0/24")) << m->message();
  EXPECT_TRUE(Has(m->message(), "uplink veth eth0")) << m->message();
  EXPECT_EQ(FindSuspicion(t.report, "route_mismatch"), nullptr) << t.text;
  // The reply's route is the one missing (web's node routes client's podCIDR nowhere): the
  // request is delivered and the reply dies on kind-control-plane.
  Scratch r("kind-veth-uplink-fixed");
  EXPECT_EQ(r.RemoveFromList("nodes/kind-control-plane/ip-route.json",
                             [](const google::protobuf::Struct& e) {
                               auto it = e.fields().find("dst");
                               return it != e.fields().end() &&
                                      it->second.string_value() == "10.244.1.0/24";
                             }),
            1);
  auto back = testing::TraceLib(r.dir(), "pod:default/client", "pod:default/web:8080/tcp");
  ASSERT_TRACED(back);
  EXPECT_EQ(back.report.verdict(), "unreachable") << back.text;
  const v1::Suspicion* b = FindSuspicion(back.report, "no_route", "FATAL");
  ASSERT_NE(b, nullptr) << back.text;
  EXPECT_EQ(b->hop(), "kind-control-plane@reply") << back.text;
  ASSERT_NE(FindHop(back.report, "default/web"), nullptr) << back.text;
}

// ifindexes collide across namespaces: kind-worker's eth0 (ifindex 2, peer 4 in Docker's netns)
// and kind-control-plane's veth5e6f7a8b (ifindex 4, peer 2 = pod web's eth0) look like a pair
// by ifindex alone. The walk must cross the Docker segment by address, not into that pod veth.
TEST(DiagUplink, VethPeersAreNotMatchedAcrossCollidingIfindexes) {
  auto t = testing::TraceLib(CaseDir("kind-veth-uplink-fixed"), "pod:default/client",
                             "pod:default/web:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "reachable") << t.text;
  const v1::Hop* cp = FindHop(t.report, "kind-control-plane");
  ASSERT_NE(cp, nullptr) << t.text;
  EXPECT_EQ(cp->iif(), "eth0") << t.text;  // not veth5e6f7a8b
  EXPECT_EQ(cp->oif(), "veth5e6f7a8b") << t.text;
  const v1::Hop* back = FindHop(t.report, "kind-worker@reply");
  ASSERT_NE(back, nullptr) << t.text;
  EXPECT_EQ(back->iif(), "eth0") << t.text;  // not veth9c0d1e2f
}

// vxlanMode CrossSubnet across a router that routes only the nodes' subnets (a cloud VPC): a
// node that hands a bare pod packet to that router is the fault, not the router that cannot
// route it (the kernel: SKB_DROP_REASON_IP_INNOROUTES on the router).
TEST(DiagUplink, UnencapsulatedPodTrafficToAFabricRouterIsFatalAtTheNode) {
  auto t = testing::TraceLib(CaseDir("calico-crosssubnet-router"), "pod:default/client",
                             "pod:default/far:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* s = FindSuspicion(t.report, "route_mismatch", "FATAL");
  ASSERT_NE(s, nullptr) << t.text;
  EXPECT_EQ(s->hop(), "node-a") << t.text;
  EXPECT_TRUE(Has(s->message(), "unencapsulated to router router")) << s->message();
  EXPECT_TRUE(Has(s->message(), "vxlan.calico")) << s->message();
  EXPECT_EQ(FindSuspicion(t.report, "no_route", "FATAL"), nullptr) << t.text;
}

// node-a's eth0 is a /16 (its annotation says /24): Calico decides from the interface that
// node-c is in its subnet and does not encapsulate; node-c is behind the router, so ARP for it
// on eth0 gets no answer (the kernel: SKB_DROP_REASON_NEIGH_FAILED on node-a).
TEST(DiagUplink, CrossSubnetFromAWideInterfacePrefixSkipsEncapsulation) {
  auto t = testing::TraceLib(CaseDir("calico-crosssubnet-router-wide"), "pod:default/client",
                             "pod:default/far:8080/tcp");
  ASSERT_TRACED(t);
  EXPECT_EQ(t.report.verdict(), "unreachable") << t.text;
  const v1::Suspicion* s = FindSuspicion(t.report, "neighbor_missing", "FATAL");
  ASSERT_NE(s, nullptr) << t.text;
  EXPECT_EQ(s->hop(), "node-a") << t.text;
  EXPECT_TRUE(Has(s->message(), "10.20.1.13")) << s->message();
  const v1::Suspicion* x = FindSuspicion(t.report, "cross_subnet", "INFO");
  ASSERT_NE(x, nullptr) << t.text;
  EXPECT_EQ(x->hop(), "node-a") << t.text;
  EXPECT_TRUE(Has(x->message(), "10.20.0.11/16")) << x->message();
  EXPECT_TRUE(Has(x->message(), "in the same subnet")) << x->message();
  // BIRD's direct route is what Calico installs for a same-subnet peer: no route_mismatch.
  EXPECT_EQ(FindSuspicion(t.report, "route_mismatch"), nullptr) << t.text;
}

TEST(DiagUplink, CrossSubnetThroughAFabricRouterEncapsulatesBothWays) {
  for (const char* q : {"pod:default/client|pod:default/far:8080/tcp",
                        "pod:default/far|pod:default/client:8080/tcp"}) {
    std::string query(q);
    auto bar = query.find('|');
    auto t = testing::TraceLib(CaseDir("calico-crosssubnet-router-fixed"), query.substr(0, bar),
                               query.substr(bar + 1));
    ASSERT_TRACED(t);
    EXPECT_NE(t.report.verdict(), "unreachable") << t.text;
    EXPECT_EQ(FindSuspicion(t.report, "route_mismatch"), nullptr) << t.text;
    EXPECT_EQ(FindSuspicion(t.report, "neighbor_missing", "FATAL"), nullptr) << t.text;
    EXPECT_EQ(FindSuspicion(t.report, "neighbor_missing", "WARNING"), nullptr) << t.text;
    EXPECT_NE(FindHop(t.report, "router"), nullptr) << t.text;  // the outer packet's way
  }
}

}  // namespace
}  // namespace sarena::diag
