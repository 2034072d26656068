// sarena-diag collect's cluster-map dump (libsarena/collect/cluster_maps.h) against the real maps
// the datapath objects pin (tunnel LPM trie, peer hash, overlay config, node config, per-CPU node
// counters), written with the datapath's own map classes, read back through the pins, formatted
// as sarena-cluster.json and parsed by the snapshot reader (model/sarena_cluster.h): what a
// node's maps hold is what the diagnoser sees, byte order included.
#include <arpa/inet.h>

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "libsarena/collect/cluster_maps.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/model/sarena_cluster.h"
#include "tests/bpf/bpf_test_env.h"

namespace sarena::collect {
namespace {

net::Ipv4 Ip(const char* s) { return *net::ParseIpv4(s); }
net::Ipv4Prefix Cidr(const char* s) { return *net::ParseIpv4Prefix(s); }

TEST(CollectClusterMaps, DumpsWhatThePinnedMapsHold) {
  ::sarena::testing::ScopedBpffs fs;
  auto objs = datapath::Objects::Load({.pin_root = fs.path()});
  ASSERT_TRUE(objs.ok()) << objs.status();
  const datapath::Maps& m = objs->maps();

  ASSERT_TRUE(m.tunnels.Put(Cidr("10.20.1.0/24"),
                            datapath::MakeTunnel(Ip("192.168.5.11"), 2, SARENA_MODE_TUNNEL))
                  .ok());
  ASSERT_TRUE(m.tunnels.Put(Cidr("10.20.2.0/24"),
                            datapath::MakeTunnel(Ip("192.168.5.12"), 3, SARENA_MODE_NATIVE))
                  .ok());
  ASSERT_TRUE(m.tunnels.Put(Cidr("10.20.0.0/16"),
                            datapath::MakeTunnel(Ip("192.168.5.13"), 4, SARENA_MODE_TUNNEL))
                  .ok());
  ASSERT_TRUE(m.peers.Put(Ip("192.168.5.11"), 2).ok());
  ASSERT_TRUE(m.peers.Put(Ip("192.168.5.12"), 3).ok());

  datapath::OverlayConfig ovl{};
  ovl.flags = SARENA_OVL_F_TUNNEL | SARENA_OVL_F_NATIVE;
  ovl.vni = 4242;
  ovl.vxlan_ifindex = 7;
  ovl.uplink_ifindex = 2;
  ovl.node_id = 1;
  const uint8_t vmac[6] = {0x02, 0, 0, 0, 0, 0x07};
  std::memcpy(ovl.vxlan_mac, vmac, 6);
  uint32_t under = net::ToBe32(Ip("192.168.5.10"));
  std::memcpy(ovl.underlay, &under, 4);
  ovl.underlay_family = SARENA_FAMILY_IPV4;
  ovl.cluster_cidr_be = net::ToBe32(Ip("10.20.0.0"));
  ovl.cluster_cidr_len = 16;
  ASSERT_TRUE(m.overlay_config.Write(ovl).ok());
  datapath::Config cfg{};
  cfg.node_ip_be = net::ToBe32(Ip("10.20.0.1"));
  cfg.pod_cidr_be = net::ToBe32(Ip("10.20.0.0"));
  cfg.pod_cidr_len = 24;
  cfg.net_ifindex = 5;
  ASSERT_TRUE(m.config.Write(cfg).ok());
  // Node 2's counters on every CPU: the dump is their sum.
  std::vector<datapath::NodeCounters> per_cpu(m.node_counters.num_cpus());
  for (auto& c : per_cpu) c = {.tx_packets = 3, .tx_bytes = 300, .rx_packets = 1, .rx_bytes = 100};
  ASSERT_TRUE(m.node_counters.Update(2, per_cpu).ok());

  std::vector<std::string> notes;
  auto maps = ReadClusterMaps(fs.path(), &notes);
  ASSERT_TRUE(maps.ok()) << maps.status();
  EXPECT_TRUE(notes.empty()) << notes.front();
  ASSERT_FALSE(maps->empty());
  std::string json = FormatClusterMaps(*maps);
  auto c = model::ParseSarenaCluster(json, "sarena-cluster.json");
  ASSERT_TRUE(c.ok()) << c.status() << "\n" << json;

  ASSERT_TRUE(c->overlay) << json;
  EXPECT_EQ(c->overlay->flags, 3u);
  EXPECT_EQ(c->overlay->vni, 4242u);
  EXPECT_EQ(c->overlay->vxlan_ifindex, 7u);
  EXPECT_EQ(c->overlay->uplink_ifindex, 2u);
  EXPECT_EQ(c->overlay->node_id, 1u);
  EXPECT_EQ(net::FormatMac(*c->overlay->vxlan_mac), "02:00:00:00:00:07");
  EXPECT_EQ(c->overlay->underlay->to_string(), "192.168.5.10");
  EXPECT_EQ(c->overlay->cluster_cidr->to_string(), "10.20.0.0/16");
  EXPECT_EQ(c->pod_cidr->to_string(), "10.20.0.0/24");
  EXPECT_EQ(c->node_ip->to_string(), "10.20.0.1");

  ASSERT_EQ(c->tunnels.size(), 3u) << json;
  const model::SarenaTunnel* t = c->LookupTunnel(Ip("10.20.2.9"));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->cidr.to_string(), "10.20.2.0/24");
  EXPECT_EQ(t->underlay.to_string(), "192.168.5.12");
  EXPECT_EQ(t->mode, model::SarenaMode::kNative);
  EXPECT_EQ(t->node_id, 3u);
  // The reader's longest-prefix match agrees with the kernel's LPM trie.
  for (const char* ip : {"10.20.1.200", "10.20.2.1", "10.20.77.1"}) {
    auto kernel = m.tunnels.Match(Ip(ip));
    ASSERT_TRUE(kernel.ok()) << ip << ": " << kernel.status();
    const model::SarenaTunnel* mine = c->LookupTunnel(Ip(ip));
    ASSERT_NE(mine, nullptr) << ip;
    EXPECT_EQ(mine->node_id, kernel->node_id) << ip;
  }

  ASSERT_EQ(c->peers.size(), 2u);
  ASSERT_NE(c->FindPeer(Ip("192.168.5.12")), nullptr);
  EXPECT_EQ(c->FindPeer(Ip("192.168.5.12"))->node_id, 3u);

  ASSERT_EQ(c->node_counters.size(), 1u) << json;
  EXPECT_EQ(c->node_counters[0].node_id, 2u);
  EXPECT_EQ(c->node_counters[0].tx_packets, 3u * per_cpu.size());
  EXPECT_EQ(c->node_counters[0].rx_bytes, 100u * per_cpu.size());
}

TEST(CollectClusterMaps, NothingPinnedIsEmptyWithNotes) {
  ::sarena::testing::ScopedBpffs fs;
  std::vector<std::string> notes;
  auto maps = ReadClusterMaps(fs.path(), &notes);
  ASSERT_TRUE(maps.ok()) << maps.status();
  EXPECT_TRUE(maps->empty());
  EXPECT_EQ(notes.size(), 5u);
  for (const std::string& n : notes) EXPECT_NE(n.find("not pinned"), std::string::npos) << n;
}

}  // namespace
}  // namespace sarena::collect
