// Snapshot directories: lazy per-node loading, every file optional (missing files recorded),
// malformed files named with the field, pod netns directories, sarena-endpoints.json.
// Each test assembles its snapshot in a fresh temporary directory from the fixtures in
// tests/data/model.
#include "libsarena/model/snapshot.h"

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

using ::sarena::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string Data(const std::string& rel) {
  return sarena::testing::SourceDir() + "/tests/data/model/" + rel;
}

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()); }
  void Copy(const std::string& from_rel, const std::string& to_rel) {
    fs::create_directories(fs::path(dir_.Path(to_rel)).parent_path());
    fs::copy_file(Data(from_rel), dir_.Path(to_rel), fs::copy_options::overwrite_existing);
  }
  void Write(const std::string& rel, const std::string& text) { dir_.Write(rel, text); }
  // cluster/ (legacy endpoints, no ippools) + node-a complete + node-b routes only + a pod netns.
  void BuildBasic() {
    for (const char* f : {"pods.json", "nodes.json", "services.json", "endpoints.json"}) {
      Copy(std::string("cluster/") + f, std::string("cluster/") + f);
    }
    for (const char* f : {"ip-link.json", "ip-addr.json", "ip-route.json", "ip-rule.json",
                          "ip-neigh.json", "bridge-fdb.json", "sysctl.txt"}) {
      Copy(std::string("iproute2/") + f, std::string("nodes/node-a/") + f);
    }
    Copy("iptables/kube-proxy.iptables-save.txt", "nodes/node-a/iptables-save.txt");
    Copy("ipset/ipset-save.txt", "nodes/node-a/ipset-save.txt");
    Write("nodes/node-a/sarena-endpoints.json",
          R"({"endpoints":[{"ref":{"containerId":"abc123","ifname":"eth0"},"netns":"/run/netns/x",
              "ip":"10.244.1.5","prefixLen":32,"gateway":"10.244.1.1","podMac":"02:00:00:00:00:05",
              "hostIfname":"lxc0123456789a","hostIfindex":12,"hostMac":"02:00:00:00:01:05",
              "endpointId":3,"mtu":1500,"podNamespace":"default","podName":"client"}]})");
    for (const char* f : {"ip-link.json", "ip-addr.json", "ip-route.json"}) {
      Copy(std::string("iproute2/pod-") + f, std::string("nodes/node-a/pods/default/client/") + f);
    }
    Copy("iproute2/ip-route.json", "nodes/node-b/ip-route.json");
  }
  sarena::testing::TempDir dir_{"sarena-model-snap-"};
};

TEST_F(SnapshotTest, OpensLazilyAndRecordsMissingFiles) {
  BuildBasic();
  ASSERT_OK_AND_ASSIGN(auto snap, Snapshot::Open(dir_.path()));
  const Snapshot& s = *snap;
  EXPECT_EQ(s.node_names(), (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_NE(s.cluster().FindPod("default", "client"), nullptr);
  EXPECT_FALSE(s.cluster().files().endpoint_slices);  // fell back to endpoints.json
  EXPECT_THAT(s.cluster().files().missing, Contains("cluster/ippools.json"));
  EXPECT_THAT(s.cluster().files().loaded, Contains("cluster/endpoints.json"));

  auto a = s.Node("node-a");
  ASSERT_OK(a);
  EXPECT_EQ((*a)->id, "node:node-a");
  EXPECT_TRUE((*a)->missing_files.empty()) << (*a)->missing_files[0];
  EXPECT_TRUE((*a)->netfilter.has_value());
  EXPECT_TRUE((*a)->netfilter->HasChain(NfTable::kNat, "KUBE-SERVICES"));
  ASSERT_NE((*a)->netfilter->ipsets(), nullptr);  // ipset-save.txt attached to the rules
  EXPECT_TRUE((*a)->netfilter->ipsets()->Has("KUBE-CLUSTER-IP"));
  EXPECT_TRUE((*a)->netstack.Lookup(Flow{.dst = net::Ipv4::from_string("10.65.1.3")}).ok());
  ASSERT_TRUE((*a)->sarena_endpoints.has_value());
  ASSERT_EQ((*a)->sarena_endpoints->size(), 1u);
  const SarenaEndpoint& ep = (*a)->sarena_endpoints->front();
  EXPECT_EQ(ep.container_id, "abc123");
  EXPECT_EQ(ep.host_ifname, "lxc0123456789a");
  EXPECT_EQ(ep.host_ifindex, 12u);
  EXPECT_EQ(net::FormatMac(*ep.pod_mac), "02:00:00:00:00:05");
  EXPECT_EQ(ep.pod_name, "client");
  // Cached: the same object comes back.
  EXPECT_EQ(*s.Node("node-a"), *a);

  auto b = s.Node("node-b");
  ASSERT_OK(b);
  const auto& missing = (*b)->missing_files;
  for (const char* f : {"nodes/node-b/ip-link.json", "nodes/node-b/ip-addr.json",
                        "nodes/node-b/ip-rule.json", "nodes/node-b/ip-neigh.json",
                        "nodes/node-b/sysctl.txt", "nodes/node-b/iptables-save.txt",
                        "nodes/node-b/sarena-endpoints.json", "nodes/node-b/bridge-fdb.json"}) {
    EXPECT_THAT(missing, Contains(f));
  }
  EXPECT_FALSE((*b)->netfilter.has_value());
  for (const auto& f : missing) EXPECT_EQ(f.find("ipset"), std::string::npos) << f;  // optional
  EXPECT_FALSE((*b)->sarena_endpoints.has_value());
  EXPECT_TRUE((*b)->netstack.Has(NetstackSource::kRoutes));
  EXPECT_FALSE((*b)->netstack.Has(NetstackSource::kSysctls));

  auto none = s.Node("node-z");
  ASSERT_THAT(none, StatusIs(absl::StatusCode::kNotFound, HasSubstr("no directory nodes/node-z")));
  EXPECT_FALSE(s.Node("../etc").ok());
}

TEST_F(SnapshotTest, PodNetnsFoundViaNodeName) {
  BuildBasic();
  ASSERT_OK_AND_ASSIGN(auto snap, Snapshot::Open(dir_.path()));
  auto pod = snap->PodNetns("default", "client");
  ASSERT_OK(pod);
  EXPECT_EQ((*pod)->id, "pod:default/client");
  EXPECT_EQ((*pod)->dir, "nodes/node-a/pods/default/client");
  const Interface* eth0 = (*pod)->netstack.FindInterface("eth0");
  ASSERT_NE(eth0, nullptr);
  EXPECT_EQ(eth0->link_index, 3);  // the host-side cali veth's ifindex
  RouteResult r = (*pod)->netstack.RouteOutput(Flow{.dst = net::Ipv4::from_string("10.96.0.100")});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.gateway, net::Ipv4::from_string("169.254.1.1"));
  EXPECT_EQ(r.prefsrc, net::Ipv4::from_string("10.65.1.3"));
  EXPECT_THAT((*pod)->missing_files, Contains("nodes/node-a/pods/default/client/sysctl.txt"));
  auto missing = snap->PodNetns("shop", "web-7c9f-abcde");
  ASSERT_THAT(missing, StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SnapshotTest, PodDirsAndNodesWithoutLinksAreKnownWithoutParsingANode) {
  BuildBasic();
  Write("nodes/node-a/pods/kube-system/coredns-1/ip-addr.json", "[]");  // not in pods.json
  Write("nodes/node-a/pods/stray-file", "x");                           // not a namespace dir
  Write("nodes/node-a/pods/default/notes.txt", "x");                    // a file, not a pod
  ASSERT_OK_AND_ASSIGN(auto snap, Snapshot::Open(dir_.path()));
  using Dirs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(snap->PodDirsOn("node-a"),
            (Dirs{{"default", "client"}, {"kube-system", "coredns-1"}}));
  EXPECT_EQ(snap->PodDirsOn("node-b"), Dirs{});  // no pods/ directory
  EXPECT_EQ(snap->PodDirsOn("node-z"), Dirs{});  // no such node
  // node-b has routes only: its devices are unknown, which Open() tells from the files.
  EXPECT_EQ(snap->nodes_without_links(), std::vector<std::string>{"node-b"});
  EXPECT_EQ(snap->cached_nodes(), 0u);
}

TEST_F(SnapshotTest, MalformedNodeFileNamesFileAndField) {
  BuildBasic();
  Write("nodes/node-b/ip-addr.json",
        R"([{"ifindex":2,"ifname":"eth0","addr_info":[{"family":"inet","local":"192.168.1.x","prefixlen":24}]}])");
  auto snap = Snapshot::Open(dir_.path());
  ASSERT_TRUE(snap.ok());  // node files are parsed lazily
  auto b = (*snap)->Node("node-b");
  ASSERT_THAT(b, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(b.status().message()),
              HasSubstr("parse nodes/node-b/ip-addr.json: [0].addr_info[0].local: invalid IPv4 address '192.168.1.x'"));
  Write("nodes/node-b/ip-addr.json", "[]");
  Write("nodes/node-b/iptables-save.txt", "*filter\n:INPUT ACCEPT [0:0]\n-A OUTPUT -j DROP\nCOMMIT\n");
  auto snap2 = Snapshot::Open(dir_.path());
  auto b2 = (*snap2)->Node("node-b");
  ASSERT_FALSE(b2.ok());
  EXPECT_THAT(std::string(b2.status().message()),
              HasSubstr("parse nodes/node-b/iptables-save.txt: line 3: rule for undeclared chain 'OUTPUT'"));
}

TEST_F(SnapshotTest, MalformedClusterFileFailsOpen) {
  BuildBasic();
  Write("cluster/services.json", R"({"items":[{"metadata":{"name":"s"},"spec":{"clusterIP":"10.96.0.999"}}]})");
  auto snap = Snapshot::Open(dir_.path());
  ASSERT_FALSE(snap.ok());
  EXPECT_THAT(std::string(snap.status().message()),
              HasSubstr("parse cluster/services.json: items[0].spec.clusterIP: invalid IPv4 address '10.96.0.999'"));
}

TEST_F(SnapshotTest, EmptyDirectoryAndMissingDirectory) {
  ASSERT_OK_AND_ASSIGN(auto snap, Snapshot::Open(dir_.path(), {.eager = true}));
  EXPECT_TRUE(snap->node_names().empty());
  EXPECT_THAT(snap->cluster().files().missing, Contains("cluster/pods.json"));
  auto none = Snapshot::Open(dir_.Path("nope"));
  ASSERT_THAT(none, StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SnapshotTest, ReadFileStaysInsideSnapshot) {
  BuildBasic();
  ASSERT_OK_AND_ASSIGN(auto snap, Snapshot::Open(dir_.path(), {.eager = true}));
  EXPECT_OK(snap->ReadFile("nodes/node-a/sysctl.txt"));
  EXPECT_THAT(snap->ReadFile("nodes/node-a/nope.json"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(snap->ReadFile("../x"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(snap->ReadFile("/etc/passwd"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(SarenaEndpoints, BareArraySnakeCaseAndErrors) {
  auto eps = ParseSarenaEndpoints(R"([{"ip":"10.1.1.1","pod_mac":"02:00:00:00:00:01","host_ifname":"lxcx","endpoint_id":"7"}])");
  ASSERT_OK(eps);
  EXPECT_EQ((*eps)[0].endpoint_id, 7u);  // uint32 fields may be JSON strings in protobuf JSON
  EXPECT_EQ((*eps)[0].host_ifname, "lxcx");
  auto bad = ParseSarenaEndpoints(R"({"endpoints":[{"podMac":"zz"}]})", "nodes/a/sarena-endpoints.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("nodes/a/sarena-endpoints.json: endpoints[0].pod_mac: invalid MAC 'zz'"));
}

}  // namespace
}  // namespace sarena::model
