// sarena's own node files (model/proto/sarena_node.proto): each message round-trips through the
// file text collect writes (model::PrintProtoJson) and the readers; every such file under
// tests/data still loads; older shapes are read alike; a malformed file is an error naming the
// file and the field.
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "libsarena/base/file.h"
#include "libsarena/model/proto_json.h"
#include "libsarena/model/sarena_cluster.h"
#include "libsarena/model/sarena_node.pb.h"
#include "libsarena/model/snapshot.h"
#include "libsarena/model/snapshot_layout.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

namespace v1 = ::sarena::snapshot::v1;
using ::google::protobuf::util::MessageDifferencer;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

v1::SarenaEndpointsFile SampleEndpoints() {
  v1::SarenaEndpointsFile f;
  v1::Endpoint* e = f.add_endpoints();
  e->mutable_ref()->set_container_id("c0ffee");
  e->mutable_ref()->set_ifname("eth0");
  e->set_netns("/var/run/netns/cni-1");
  e->set_ip("10.20.0.10");
  e->set_prefix_len(32);
  e->set_gateway("10.20.0.1");
  e->set_pod_mac("02:00:00:00:00:0a");
  e->set_host_ifname("lxc0123456789a");
  e->set_host_ifindex(6);
  e->set_host_mac("02:00:00:00:01:0a");
  e->set_endpoint_id(1);
  e->set_mtu(1450);
  e->set_pod_namespace("default");
  e->set_pod_name("pod-a");
  e->mutable_counters()->set_rx_bytes(uint64_t{1} << 40);
  e->set_network_name("sarena");
  f.add_endpoints()->set_ip("10.20.0.11");  // only what the map knows
  return f;
}

v1::SarenaProgramsFile SamplePrograms() {
  v1::SarenaProgramsFile f;
  v1::AttachedProgram* p = f.add_programs();
  p->set_ifname("sarena_host");
  p->set_ifindex(3);
  p->set_direction("egress");
  p->set_mode("tcx");
  p->set_prog("from_host");
  p->set_id(4242);
  return f;
}

v1::SarenaClusterFile SampleCluster() {
  v1::SarenaClusterFile f;
  v1::OverlayConfig* o = f.mutable_overlay();
  o->set_flags(3);
  o->set_vni(0xffffff);
  o->set_vxlan_ifindex(7);
  o->set_uplink_ifindex(2);
  o->set_node_id(16383);
  o->set_vxlan_mac("02:00:00:00:00:07");
  o->set_uplink_mac("02:00:00:00:00:02");
  o->set_underlay("192.168.5.10");
  o->set_cluster_cidr("10.20.0.0/16");
  f.mutable_config()->set_pod_cidr("10.20.0.0/24");
  f.mutable_config()->set_node_ip("10.20.0.1");
  v1::TunnelEntry* t = f.add_tunnels();
  t->set_family("ipv4");
  t->set_cidr("10.20.1.0/24");
  t->set_underlay("192.168.5.11");
  t->set_mode("native");
  t->set_node_id(2);
  t->set_flags(1);
  v1::PeerEntry* p = f.add_peers();
  p->set_family("ipv4");
  p->set_underlay("192.168.5.11");
  p->set_node_id(2);
  v1::NodeCounters* n = f.add_node_counters();
  n->set_node_id(2);
  n->set_tx_packets(uint64_t{1} << 60);
  n->set_rx_bytes(5);
  return f;
}

std::string Read(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_OK(text);
  return text.value_or("");
}

template <typename M>
void ExpectRoundTrip(const M& m) {
  const std::string text = PrintProtoJson(m);
  M back;
  ASSERT_OK(ParseProtoJson(text, "x.json", &back)) << text;
  EXPECT_TRUE(MessageDifferencer::Equals(m, back)) << text << "\nvs\n" << back.DebugString();
}

TEST(SarenaNodeFiles, EachMessageRoundTrips) {
  ExpectRoundTrip(SampleEndpoints());
  ExpectRoundTrip(SamplePrograms());
  ExpectRoundTrip(SampleCluster());
  ExpectRoundTrip(v1::SarenaClusterFile());
}

TEST(SarenaNodeFiles, WrittenTextIsSnakeCaseWithEveryScalar) {
  const std::string text = PrintProtoJson(SamplePrograms());
  EXPECT_THAT(text, HasSubstr("\"ifname\": \"sarena_host\""));
  EXPECT_THAT(text, HasSubstr("\"id\": 4242"));  // a uint32: a JSON number
  EXPECT_EQ(text.find("\"name\""), std::string::npos) << text;  // the legacy key: never written
  const std::string cluster = PrintProtoJson(SampleCluster());
  EXPECT_THAT(cluster, HasSubstr("\"node_counters\""));
  EXPECT_THAT(cluster, HasSubstr("\"tx_packets\": \"1152921504606846976\""));  // 64-bit: text
  EXPECT_THAT(PrintProtoJson(v1::SarenaClusterFile()), HasSubstr("\"tunnels\": []"));
  EXPECT_EQ(cluster.back(), '\n');
}

TEST(SarenaNodeFiles, ModelReadersTakeTheWrittenText) {
  auto eps = ParseSarenaEndpoints(PrintProtoJson(SampleEndpoints()));
  ASSERT_OK(eps);
  ASSERT_EQ(eps->size(), 2u);
  const SarenaEndpoint& e = (*eps)[0];
  EXPECT_EQ(e.container_id, "c0ffee");
  EXPECT_EQ(e.ifname, "eth0");
  EXPECT_EQ(e.ip->to_string(), "10.20.0.10");
  EXPECT_EQ(e.gateway->to_string(), "10.20.0.1");
  EXPECT_EQ(net::FormatMac(*e.pod_mac), "02:00:00:00:00:0a");
  EXPECT_EQ(net::FormatMac(*e.host_mac), "02:00:00:00:01:0a");
  EXPECT_EQ(e.host_ifname, "lxc0123456789a");
  EXPECT_EQ(e.host_ifindex, 6u);
  EXPECT_EQ(e.endpoint_id, 1u);
  EXPECT_EQ(e.mtu, 1450u);
  EXPECT_EQ(e.pod_namespace, "default");
  EXPECT_EQ(e.pod_name, "pod-a");
  EXPECT_FALSE((*eps)[1].pod_mac);  // "" reads as absent
  EXPECT_FALSE((*eps)[1].gateway);

  auto c = ParseSarenaCluster(PrintProtoJson(SampleCluster()));
  ASSERT_OK(c);
  ASSERT_TRUE(c->overlay);
  EXPECT_EQ(c->overlay->vni, 0xffffffu);
  EXPECT_EQ(c->overlay->node_id, 16383u);
  EXPECT_EQ(c->overlay->cluster_cidr->to_string(), "10.20.0.0/16");
  EXPECT_EQ(c->node_ip->to_string(), "10.20.0.1");
  ASSERT_EQ(c->tunnels.size(), 1u);
  EXPECT_EQ(c->tunnels[0].mode, SarenaMode::kNative);
  EXPECT_TRUE(c->tunnels[0].node_address());
  ASSERT_EQ(c->peers.size(), 1u);
  ASSERT_EQ(c->node_counters.size(), 1u);
  EXPECT_EQ(c->node_counters[0].tx_packets, uint64_t{1} << 60);
}

// Every sarena node file of the test data (hand-written and generated fixtures) still loads.
TEST(SarenaNodeFiles, EveryFileUnderTestsDataLoads) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(sarena::testing::SourceDir() + "/tests")) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    const std::string path = entry.path().string();
    if (name == kSarenaEndpointsFile) {
      auto eps = ParseSarenaEndpoints(Read(path), path);
      EXPECT_OK(eps);
      EXPECT_FALSE(eps.ok() && eps->empty()) << path;
    } else if (name == kSarenaClusterFile) {
      auto c = ParseSarenaCluster(Read(path), path);
      EXPECT_OK(c);
    } else if (name == kSarenaProgramsFile) {
      v1::SarenaProgramsFile f;
      absl::Status st = ParseProtoJson(Read(path), path, &f);
      EXPECT_OK(st);
      EXPECT_GT(f.programs_size(), 0) << path;
    } else {
      continue;
    }
    ++files;
  }
  EXPECT_GE(files, 15);
}

TEST(SarenaNodeFiles, OlderShapesReadAlike) {
  // A bare array, lowerCamelCase keys, numbers as text (protobuf JSON accepts both).
  auto bare = ParseSarenaEndpoints(
      R"([{"ip": "10.1.1.1", "podMac": "02:00:00:00:00:01", "hostIfindex": "7"}])");
  ASSERT_OK(bare);
  ASSERT_EQ(bare->size(), 1u);
  EXPECT_EQ((*bare)[0].host_ifindex, 7u);
  EXPECT_TRUE((*bare)[0].pod_mac);
  // The list under "items".
  auto items = ParseSarenaEndpoints(R"({"items": [{"ip": "10.1.1.2", "mtu": 1400}]})");
  ASSERT_OK(items);
  ASSERT_EQ(items->size(), 1u);
  EXPECT_EQ((*items)[0].mtu, 1400u);
  // No list at all: no endpoints. Unknown keys (a newer writer's) are skipped.
  auto none = ParseSarenaEndpoints(R"({"version": 2})");
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
  // An IPv6 pod address reads as absent (the walk models IPv4).
  ASSERT_OK_AND_ASSIGN(auto v6, ParseSarenaEndpoints(R"({"endpoints": [{"ip": "fd00::1"}]})"));
  EXPECT_FALSE(v6[0].ip);
  // Programs: the legacy "name" key and a bare array.
  v1::SarenaProgramsFile progs;
  ASSERT_TRUE(ParseProtoJson(R"([{"ifname": "eth0", "name": "from_net"}])", "p.json", &progs,
                             {.root_list_field = "programs"})
                  .ok());
  ASSERT_EQ(progs.programs_size(), 1);
  EXPECT_EQ(progs.programs(0).name(), "from_net");
  // Cluster: a number written as text, an absent family.
  auto c = ParseSarenaCluster(
      R"({"peers": [{"underlay": "10.0.0.1", "node_id": "3"}], "node_counters": [{"node_id": 3, "tx_bytes": 9}]})");
  ASSERT_OK(c);
  EXPECT_EQ(c->peers[0].node_id, 3u);
  EXPECT_EQ(c->node_counters[0].tx_bytes, 9u);
}

struct Bad {
  const char* json;
  const char* message;  // expected after "parse f.json: "
};

TEST(SarenaNodeFiles, MalformedEndpointsNameTheField) {
  for (const Bad& b : {
           Bad{R"({"endpoints": {}})", "endpoints: expected an array, got an object"},
           Bad{R"({"endpoints": [null]})", "endpoints[0]: expected a value, got null"},
           Bad{R"({"endpoints": [[]]})", "endpoints[0]: expected an object, got an array"},
           Bad{R"({"endpoints": [{"ref": "x"}]})", "endpoints[0].ref: expected an object, got a string"},
           Bad{R"({"endpoints": [{"ip": 10}]})", "endpoints[0].ip: expected a string, got a number"},
           Bad{R"({"endpoints": [{"ip": "10.0.0.999"}]})",
               "endpoints[0].ip: invalid IPv4 address '10.0.0.999'"},
           Bad{R"({"endpoints": [{}, {"hostMac": "zz"}]})", "endpoints[1].host_mac: invalid MAC 'zz'"},
           Bad{R"({"endpoints": [{"host_ifindex": -1}]})", "endpoints[0].host_ifindex: invalid value -1"},
           Bad{R"({"endpoints": [{"mtu": "lots"}]})", "endpoints[0].mtu: invalid value \"lots\""},
           Bad{R"([{"ip": true}])", "endpoints[0].ip: expected a string, got a boolean"},
           Bad{R"("endpoints")", "(root): expected an object, got a string"},
           Bad{R"({"endpoints": [)", "invalid JSON"},
       }) {
    auto eps = ParseSarenaEndpoints(b.json, "f.json");
    ASSERT_FALSE(eps.ok()) << b.json;
    EXPECT_THAT(eps, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(std::string(eps.status().message()), HasSubstr(absl::StrCat("parse f.json: ", b.message)))
        << b.json;
  }
}

TEST(SarenaNodeFiles, MalformedClusterNamesTheField) {
  for (const Bad& b : {
           Bad{R"({"tunnels": {}})", "tunnels: expected an array, got an object"},
           Bad{R"({"tunnels": [[]]})", "tunnels[0]: expected an object, got an array"},
           Bad{R"({"overlay": []})", "overlay: expected an object, got an array"},
           Bad{R"({"overlay": {"vni": 16777216}})", "overlay.vni: value 16777216 out of range [0, 16777215]"},
           Bad{R"({"overlay": {"vxlan_mac": "02:00"}})", "overlay.vxlan_mac: invalid MAC '02:00'"},
           Bad{R"({"config": {"pod_cidr": "10.20.0.0/33"}})", "config.pod_cidr: invalid IPv4 CIDR"},
           Bad{R"({"tunnels": [{"family": 7, "cidr": "10.0.0.0/8"}]})",
               "tunnels[0].family: expected a string, got a number"},
           Bad{R"({"tunnels": [{"family": "7", "cidr": "10.0.0.0/8"}]})",
               "tunnels[0].family: '7': expected ipv4 or ipv6"},
           Bad{R"({"tunnels": [{"cidr": "10.0.0.0/8", "underlay": "10.0.0.1"}]})",
               "tunnels[0].mode: missing"},
           Bad{R"({"tunnels": [{"cidr": "10.0.0.0/8", "underlay": "fd00::1", "mode": "tunnel"}]})",
               "tunnels[0].underlay: invalid IPv4 address 'fd00::1'"},
           Bad{R"({"peers": [{"underlay": "10.0.0.1", "node_id": 16384}]})",
               "peers[0].node_id: value 16384 out of range [0, 16383]"},
           Bad{R"({"node_counters": [{"node_id": 1, "tx_bytes": "-1"}]})",
               "node_counters[0].tx_bytes: invalid value \"-1\""},
       }) {
    auto c = ParseSarenaCluster(b.json, "f.json");
    ASSERT_FALSE(c.ok()) << b.json;
    EXPECT_THAT(c, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(absl::StrCat("parse f.json: ", b.message)))
        << b.json;
  }
}

TEST(SarenaNodeFiles, DuplicateKeysAreAnErrorNamingTheKey) {
  // Never resolved by order: the tunnel map has one entry per prefix, the endpoint map one per
  // address, sarenad one endpoint per ref, a host veth one pod.
  auto t = ParseSarenaCluster(
      R"({"tunnels": [{"cidr": "10.2.0.0/24", "underlay": "192.168.0.2", "mode": "tunnel"},
                      {"cidr": "10.3.0.0/24", "underlay": "192.168.0.3", "mode": "tunnel"},
                      {"cidr": "10.2.0.0/24", "underlay": "192.168.0.9", "mode": "native"}]})",
      "nodes/a/sarena-cluster.json");
  ASSERT_THAT(t, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("parse nodes/a/sarena-cluster.json: tunnels[2].cidr: duplicate key "
                        "'10.2.0.0/24': tunnels[0] has it too"));
  struct Case {
    const char* json;
    const char* want;
  };
  for (const Case& c : {
           Case{R"({"endpoints": [{"ref": {"container_id": "c1", "ifname": "eth0"}, "ip": "10.1.1.2"},
                                  {"ref": {"container_id": "c1", "ifname": "eth0"}, "ip": "10.1.1.3"}]})",
                "endpoints[1].ref: duplicate endpoint ref (containerId/ifname) 'c1/eth0': "
                "endpoints[0] has it too"},
           Case{R"({"endpoints": [{"ip": "10.1.1.2", "host_ifname": "lxc1"},
                                  {"ip": "10.1.1.2", "host_ifname": "lxc2"}]})",
                "endpoints[1].ip: duplicate address '10.1.1.2': endpoints[0] has it too"},
           Case{R"({"endpoints": [{"ip": "10.1.1.2", "host_ifname": "lxc1"},
                                  {"ip": "10.1.1.3", "host_ifname": "lxc1"}]})",
                "endpoints[1].host_ifname: duplicate host interface 'lxc1': endpoints[0] has it too"},
       }) {
    auto eps = ParseSarenaEndpoints(c.json, "nodes/a/sarena-endpoints.json");
    ASSERT_FALSE(eps.ok()) << c.json;
    EXPECT_THAT(eps, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(std::string(eps.status().message()),
                HasSubstr(absl::StrCat("parse nodes/a/sarena-endpoints.json: ", c.want)));
  }
}

TEST(SarenaNodeFiles, MalformedProgramsNameTheField) {
  for (const Bad& b : {
           Bad{R"({"programs": {"ifname": "eth0"}})", "programs: expected an array, got an object"},
           Bad{R"({"programs": [{"ifname": 3}]})", "programs[0].ifname: expected a string, got a number"},
           Bad{R"({"programs": [{"ifname": "eth0", "id": 1.5}]})", "programs[0].id: invalid value 1.5"},
           Bad{R"([1])", "(root): expected an object, got an array"},  // no legacy array here
       }) {
    v1::SarenaProgramsFile f;
    absl::Status st = ParseProtoJson(b.json, "f.json", &f);
    ASSERT_FALSE(st.ok()) << b.json;
    EXPECT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(std::string(st.message()), HasSubstr(absl::StrCat("parse f.json: ", b.message)))
        << b.json;
  }
}

TEST(SnapshotLayout, PathsOfTheLayout) {
  EXPECT_EQ(NodeDir("node-a"), "nodes/node-a");
  EXPECT_EQ(NodePath("node-a", kSarenaProgramsFile), "nodes/node-a/sarena-programs.json");
  EXPECT_EQ(PodDir("node-a", "default", "web"), "nodes/node-a/pods/default/web");
  EXPECT_EQ(ClusterPath(kEndpointSlicesFile), "cluster/endpointslices.json");
}

}  // namespace
}  // namespace sarena::model
