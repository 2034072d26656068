// model::Topology on a snapshot written to a temporary directory: two nodes joined by a veth
// "cable" (ifindex pairs across namespaces), a pod behind a veth, a pod directory that
// cluster/pods.json lacks, addresses owned through nodes.json and through a scan, the scan's
// node bound, and a malformed node file reported instead of skipped.
#include "libsarena/model/topology.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

namespace fs = std::filesystem;

// One device as both `ip -j link` and `ip -j addr` print it (each parser reads its fields).
struct Dev {
  int ifindex;
  std::string name;
  std::string kind;  // "" = none (lo, dummy)
  int link_index = 0;
  int link_netnsid = -1;
  std::string addr;  // "" = none
  int prefixlen = 32;
};

std::string DevJson(const Dev& d) {
  std::string j = absl::StrCat(R"({"ifindex":)", d.ifindex, R"(,"ifname":")", d.name, R"(",)");
  if (d.link_index) absl::StrAppend(&j, R"("link_index":)", d.link_index, ",");
  if (d.link_netnsid >= 0) absl::StrAppend(&j, R"("link_netnsid":)", d.link_netnsid, ",");
  bool lo = d.name == "lo";
  absl::StrAppend(&j, R"("flags":[)", lo ? R"("LOOPBACK","UP","LOWER_UP")" : R"("BROADCAST","UP","LOWER_UP")",
                  R"(],"mtu":1500,"operstate":")", lo ? "UNKNOWN" : "UP", R"(","link_type":")",
                  lo ? "loopback" : "ether", R"(","address":"02:00:00:00:00:)", d.ifindex < 10 ? "0" : "",
                  d.ifindex, R"(",)");
  if (!d.kind.empty()) absl::StrAppend(&j, R"("linkinfo":{"info_kind":")", d.kind, R"("},)");
  absl::StrAppend(&j, R"("addr_info":[)");
  if (!d.addr.empty()) {
    absl::StrAppend(&j, R"({"family":"inet","local":")", d.addr, R"(","prefixlen":)", d.prefixlen,
                    R"(,"scope":"global","label":")", d.name, R"("})");
  }
  absl::StrAppend(&j, "]}");
  return j;
}

net::Ipv4 Ip(const char* text) { return *net::ParseIpv4(text); }

class TopologyTest : public ::testing::Test {
 protected:
  void Write(const std::string& rel, const std::string& text) { dir_.Write(rel, text); }
  void Netns(const std::string& rel, const std::vector<Dev>& devs, const std::string& routes) {
    std::vector<std::string> js;
    for (const Dev& d : devs) js.push_back(DevJson(d));
    std::string all = absl::StrCat("[", absl::StrJoin(js, ","), "]");
    Write(rel + "/ip-link.json", all);
    Write(rel + "/ip-addr.json", all);
    Write(rel + "/ip-route.json", routes);
  }
  // node-a: eth0 (2) is one end of a veth whose other end is node-b's eth0 (7); lxcweb (5)
  // leads to pod default/web's eth0 (2). node-b also holds 203.0.113.9, an address nodes.json
  // does not list. Pod kube-system/dns has a directory on node-a but no pods.json entry.
  void Build() {
    Write("cluster/nodes.json", R"({"items":[
      {"metadata":{"name":"node-a"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.1.10"}]}},
      {"metadata":{"name":"node-b"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.1.11"}]}}]})");
    Write("cluster/pods.json", R"({"items":[
      {"metadata":{"namespace":"default","name":"web"},"spec":{"nodeName":"node-a"},
       "status":{"phase":"Running","podIP":"10.244.1.5","podIPs":[{"ip":"10.244.1.5"}]}}]})");
    Netns("nodes/node-a",
          {{1, "lo", ""}, {2, "eth0", "veth", 7, 0, "192.168.1.10", 24},
           {5, "lxcweb", "veth", 2, 1, ""}},
          R"([{"dst":"default","gateway":"192.168.1.1","dev":"eth0","flags":[]},
              {"dst":"192.168.1.0/24","dev":"eth0","scope":"link","prefsrc":"192.168.1.10","flags":[]},
              {"dst":"10.244.1.5","dev":"lxcweb","scope":"link","flags":[]}])");
    Netns("nodes/node-b",
          {{1, "lo", ""}, {7, "eth0", "veth", 2, 0, "192.168.1.11", 24},
           {3, "dummy0", "dummy", 0, -1, "203.0.113.9"}},
          R"([{"dst":"192.168.1.0/24","dev":"eth0","scope":"link","flags":[]}])");
    Netns("nodes/node-a/pods/default/web", {{1, "lo", ""}, {2, "eth0", "veth", 5, 0, "10.244.1.5"}},
          R"([{"dst":"default","dev":"eth0","scope":"link","flags":[]}])");
    Netns("nodes/node-a/pods/kube-system/dns",
          {{1, "lo", ""}, {2, "eth0", "veth", 6, 0, "10.244.1.9"}},
          R"([{"dst":"default","dev":"eth0","scope":"link","flags":[]}])");
  }
  const Snapshot& Open() {
    auto s = Snapshot::Open(dir_.path());
    EXPECT_TRUE(s.ok()) << s.status();
    snap_ = std::move(*s);
    return *snap_;
  }
  const Interface& DevOf(const NetnsRef& w, const std::string& name) {
    const Interface* i = w.ns->netstack.FindInterface(name);
    EXPECT_NE(i, nullptr) << name;
    return *i;
  }

  sarena::testing::TempDir dir_{"sarena-topology-"};
  std::unique_ptr<Snapshot> snap_;
};

TEST_F(TopologyTest, NamespacesOfNodesAndPods) {
  Build();
  Topology topo(Open());
  auto a = topo.NodeRef("node-a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_NE(a->ns, nullptr);
  EXPECT_EQ(a->node, a->ns);
  EXPECT_FALSE(a->in_pod());
  auto x = topo.NodeRef("node-x");  // no directory: known by name only, not an error
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->ns, nullptr);
  EXPECT_EQ(x->node_name, "node-x");

  ASSERT_OK_AND_ASSIGN(const Pod* web, topo.FindPod("default", "web"));
  ASSERT_NE(web, nullptr);
  auto pw = topo.PodRef(*web);
  ASSERT_TRUE(pw.ok()) << pw.status();
  EXPECT_TRUE(pw->in_pod());
  EXPECT_NE(pw->ns, pw->node);
  EXPECT_NE(pw->ns->netstack.FindInterface("eth0"), nullptr);
}

TEST_F(TopologyTest, PrimaryInterfaceAndOwnerOfAddresses) {
  Build();
  Topology topo(Open());
  auto a = topo.NodeRef("node-a");
  ASSERT_TRUE(a.ok());
  const Interface* p = topo.PrimaryInterface(*a);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "eth0");

  auto b_addr = topo.OwnerOf(Ip("192.168.1.11"));  // node-b's InternalIP
  ASSERT_TRUE(b_addr.ok()) << b_addr.status();
  ASSERT_TRUE(b_addr->has_value());
  EXPECT_EQ((*b_addr)->netns.node_name, "node-b");
  EXPECT_EQ((*b_addr)->ifname, "eth0");

  auto scanned = topo.OwnerOf(Ip("203.0.113.9"));  // not in nodes.json: found by scan
  ASSERT_TRUE(scanned.ok()) << scanned.status();
  ASSERT_TRUE(scanned->has_value());
  EXPECT_EQ((*scanned)->netns.node_name, "node-b");
  EXPECT_EQ((*scanned)->ifname, "dummy0");

  auto nobody = topo.OwnerOf(Ip("10.9.9.9"));
  ASSERT_TRUE(nobody.ok()) << nobody.status();
  EXPECT_FALSE(nobody->has_value());
  // Pod addresses are not owners in this sense.
  auto pod_ip = topo.OwnerOf(Ip("10.244.1.5"));
  ASSERT_TRUE(pod_ip.ok());
  EXPECT_FALSE(pod_ip->has_value());
}

TEST_F(TopologyTest, PodsOnSynthesizesPodsThatPodsJsonLacks) {
  Build();
  Topology topo(Open());
  ASSERT_OK_AND_ASSIGN(const std::vector<const Pod*>* on_a, topo.PodsOn("node-a"));
  const std::vector<const Pod*>& pods = *on_a;
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0]->Key(), "default/web");
  EXPECT_EQ(pods[1]->Key(), "kube-system/dns");
  EXPECT_EQ(pods[1]->phase, "Running");
  EXPECT_TRUE(pods[1]->ready);
  ASSERT_TRUE(pods[1]->pod_ip.has_value());
  EXPECT_EQ(pods[1]->pod_ip->to_string(), "10.244.1.9");
  ASSERT_OK_AND_ASSIGN(const Pod* dns, topo.FindPod("kube-system", "dns"));
  EXPECT_EQ(dns, pods[1]);  // the same synthesized pod
  ASSERT_OK_AND_ASSIGN(const std::vector<const Pod*>* again, topo.PodsOn("node-a"));
  EXPECT_EQ(again, on_a);  // computed once
  ASSERT_OK_AND_ASSIGN(const std::vector<const Pod*>* on_b, topo.PodsOn("node-b"));
  EXPECT_TRUE(on_b->empty());
  ASSERT_OK_AND_ASSIGN(const Pod* nope, topo.FindPod("kube-system", "nope"));
  EXPECT_EQ(nope, nullptr);
}

TEST_F(TopologyTest, VethEndsArePairedByIfindexAcrossNamespaces) {
  Build();
  Topology topo(Open());
  auto a = topo.NodeRef("node-a");
  ASSERT_TRUE(a.ok());

  auto web = topo.PodByIfindex(*a, /*ifindex=*/2, /*peer_ifindex=*/5);
  ASSERT_TRUE(web.ok()) << web.status();
  ASSERT_TRUE(web->has_value());
  EXPECT_EQ((*web)->netns.pod->Key(), "default/web");
  EXPECT_EQ((*web)->ifname, "eth0");
  auto wrong_peer = topo.PodByIfindex(*a, 2, 9);  // eth0's peer is 5, not 9
  ASSERT_TRUE(wrong_peer.ok());
  EXPECT_FALSE(wrong_peer->has_value());

  auto to_pod = topo.VethPeerIsPod(*a, DevOf(*a, "lxcweb"));
  ASSERT_TRUE(to_pod.ok());
  EXPECT_TRUE(*to_pod);
  auto cable_to_pod = topo.VethPeerIsPod(*a, DevOf(*a, "eth0"));
  ASSERT_TRUE(cable_to_pod.ok());
  EXPECT_FALSE(*cable_to_pod);

  auto peer = topo.NodeVethPeer(*a, DevOf(*a, "eth0"), Ip("192.168.1.11"));
  ASSERT_TRUE(peer.ok()) << peer.status();
  ASSERT_TRUE(peer->has_value());
  EXPECT_EQ((*peer)->netns.node_name, "node-b");
  EXPECT_EQ((*peer)->ifname, "eth0");
  auto into_pod = topo.NodeVethPeer(*a, DevOf(*a, "lxcweb"), Ip("10.244.1.5"));
  ASSERT_TRUE(into_pod.ok());
  EXPECT_FALSE(into_pod->has_value());  // leads into node-a's own pod, not to a node

  auto uplink = topo.IsUplink(*a, DevOf(*a, "eth0"));
  ASSERT_TRUE(uplink.ok());
  EXPECT_TRUE(*uplink);
  auto lxc = topo.IsUplink(*a, DevOf(*a, "lxcweb"));
  ASSERT_TRUE(lxc.ok());
  EXPECT_FALSE(*lxc);
}

TEST_F(TopologyTest, AMalformedNodeFileIsReportedNotSkipped) {
  Build();
  Write("nodes/node-c/ip-addr.json", "[{\"ifindex\": \"two\"}]");
  Topology topo(Open());
  // 203.0.113.9 is on node-b, before node-c: found without touching node-c.
  auto found = topo.OwnerOf(Ip("203.0.113.9"));
  ASSERT_TRUE(found.ok()) << found.status();
  // An address nobody has makes the scan reach node-c, whose file does not parse.
  EXPECT_THAT(topo.OwnerOf(Ip("198.51.100.1")),
              sarena::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                        ::testing::HasSubstr("nodes/node-c/ip-addr.json")));
}

TEST_F(TopologyTest, AMalformedPodDirectoryPodsJsonLacksIsReportedNotSkipped) {
  Build();
  Write("nodes/node-a/pods/kube-system/dns/ip-addr.json", "[{\"ifindex\": 1,");
  Topology topo(Open());
  EXPECT_THAT(topo.PodsOn("node-a"),
              sarena::testing::StatusIs(
                  ::testing::_, ::testing::HasSubstr("pods/kube-system/dns/ip-addr.json")));
  EXPECT_THAT(topo.FindPod("kube-system", "dns"),
              sarena::testing::StatusIs(
                  ::testing::_, ::testing::HasSubstr("pods/kube-system/dns/ip-addr.json")));
  // A pod pods.json lists is found without reading any pod directory.
  ASSERT_OK_AND_ASSIGN(const Pod* web, topo.FindPod("default", "web"));
  EXPECT_NE(web, nullptr);
}

// kind: node-a's pod veth lxcweb (5) is paired with the pod's eth0 (2). Give node-b an uplink
// with ifindex 2 whose peer is ifindex 5 (in the Docker host, outside the snapshot): the pair
// (2, 5) also matches node-a's lxcweb. With the pod's netns in the snapshot VethPeerIsPod rules lxcweb out; without
// it, node-a's /32 route to the pod over lxcweb does.
TEST_F(TopologyTest, APodVethIsNoNodeCableEvenWithoutThePodsNetns) {
  Build();
  Netns("nodes/node-b",
        {{1, "lo", ""}, {7, "eth0", "veth", 2, 0, "192.168.1.11", 24},
         {2, "uplink", "veth", 5, 0, "172.18.0.3", 16}},
        R"([{"dst":"172.18.0.0/16","dev":"uplink","scope":"link","flags":[]}])");
  for (bool with_pod_dir : {true, false}) {
    SCOPED_TRACE(with_pod_dir ? "pod netns present" : "pod netns absent");
    if (!with_pod_dir) fs::remove_all(dir_.Path("nodes/node-a/pods/default/web"));
    Topology topo(Open());
    auto b = topo.NodeRef("node-b");
    ASSERT_OK(b);
    ASSERT_OK_AND_ASSIGN(std::optional<DeviceRef> peer,
                         topo.NodeVethPeer(*b, DevOf(*b, "uplink"), Ip("172.18.0.1")));
    EXPECT_FALSE(peer.has_value()) << peer->netns.node_name << " " << peer->ifname;
  }
}

TEST_F(TopologyTest, ScansStopAtTheNodeBound) {
  Build();
  for (size_t i = 0; i + 2 < Topology::kMaxNodesScanned + 1; ++i) {
    fs::create_directories(absl::StrCat(dir_.path(), "/nodes/n", i < 10 ? "0" : "", i));
  }
  {
    Topology topo(Open());
    ASSERT_EQ(snap_->node_names().size(), Topology::kMaxNodesScanned + 1);
    auto scanned = topo.OwnerOf(Ip("203.0.113.9"));
    ASSERT_TRUE(scanned.ok());
    EXPECT_FALSE(scanned->has_value());  // beyond the bound: not scanned
    auto listed = topo.OwnerOf(Ip("192.168.1.11"));  // nodes.json still answers
    ASSERT_TRUE(listed.ok());
    ASSERT_TRUE(listed->has_value());
    EXPECT_EQ((*listed)->netns.node_name, "node-b");
    auto a = topo.NodeRef("node-a");
    ASSERT_TRUE(a.ok());
    auto peer = topo.NodeVethPeer(*a, DevOf(*a, "eth0"), Ip("192.168.1.11"));
    ASSERT_TRUE(peer.ok());
    EXPECT_FALSE(peer->has_value());
  }
  fs::remove_all(dir_.path() + "/nodes/n00");  // at the bound again: scanned
  Topology topo(Open());
  auto scanned = topo.OwnerOf(Ip("203.0.113.9"));
  ASSERT_TRUE(scanned.ok());
  EXPECT_TRUE(scanned->has_value());
}

}  // namespace
}  // namespace sarena::model
