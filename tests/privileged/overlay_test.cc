// datapath::Overlay on the real kernel, in a node namespace of its own: sarena_vxlan as a
// collect-metadata VXLAN device, the programs attached to it and to the uplink, the overlay
// config, and Sync making the tunnel map, the peer map and the kSarena routes equal to a desired
// peer list (idempotent, removing what no peer claims, skipping a bad peer without withdrawing
// the others). Packets across nodes are tested by tests/privileged/multinode_test.sh.
#include "libsarena/datapath/overlay.h"

#include <net/if.h>

#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/datapath/node.h"
#include "tests/bpf/bpf_test_env.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::datapath {
namespace {

using ::sarena::testing::RunOk;
using ::sarena::testing::ScopedNetns;
using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;

net::Ipv4 Ip(const char* s) { return boost::asio::ip::make_address_v4(s); }
net::Ipv4Prefix Cidr(const char* s) { return *net::ParseIpv4Prefix(s); }

class OverlayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(::sarena::testing::IsRoot()) << "privileged tier needs root";
    node_.emplace("sov");
    // The uplink: one end of a veth whose other end stays in the node netns (nothing leaves it).
    RunOk(node_->Exec("ip link add eth0 mtu 1500 type veth peer name eth0p"));
    RunOk(node_->Exec("ip addr add 192.168.77.2/24 dev eth0"));
    RunOk(node_->Exec("ip link set eth0 up"));
    RunOk(node_->Exec("ip link set eth0p up"));
    RunOk(node_->Exec("sysctl -qw net.ipv4.conf.all.rp_filter=1"));
    enter_.emplace(node_->path());
  }
  void TearDown() override {
    overlay_.reset();
    node_dp_.reset();
    enter_.reset();
    node_.reset();
  }

  absl::Status Bring(RoutingMode mode, absl::Duration resync = absl::Seconds(60)) {
    absl::StatusOr<std::unique_ptr<Node>> n =
        Node::Create({.node_ip = Ip("10.99.1.1"),
                      .pod_cidr = Cidr("10.99.1.0/24"),
                      .mtu = 1450,
                      .datapath = {.bpffs = bpffs_.path()}});
    if (!n.ok()) return n.status();
    node_dp_ = *std::move(n);
    absl::StatusOr<std::unique_ptr<Overlay>> o =
        Overlay::Setup({.mode = mode,
                        .uplink = "eth0",
                        .vni = 7,
                        .tunnel_port = 8472,
                        .cluster_cidr = Cidr("10.99.0.0/16"),
                        .node_ip = Ip("10.99.1.1"),
                        .node_id = 3,
                        .resync_interval = resync,
                        .pod_cidr = Cidr("10.99.1.0/24")},
                       node_dp_->datapath());
    if (!o.ok()) return o.status();
    overlay_ = *std::move(o);
    return absl::OkStatus();
  }

  std::string Routes() { return RunOk(node_->Exec("ip route show proto 93")); }

  ::sarena::testing::ScopedBpffs bpffs_;
  std::optional<ScopedNetns> node_;
  std::optional<::sarena::testing::ScopedNetnsEnter> enter_;
  std::unique_ptr<Node> node_dp_;
  std::unique_ptr<Overlay> overlay_;
};

TEST_F(OverlayTest, TunnelSetupCreatesAnExternalVxlanAndAttachesThePrograms) {
  ASSERT_OK(Bring(RoutingMode::kTunnel));
  const std::string link = RunOk(node_->Exec("ip -d link show sarena_vxlan"));
  EXPECT_THAT(link, HasSubstr("external"));
  EXPECT_THAT(link, HasSubstr("dstport 8472"));
  EXPECT_THAT(link, HasSubstr("mtu 1450"));  // uplink 1500 - 50
  EXPECT_THAT(link, HasSubstr("NOARP"));
  EXPECT_THAT(link, HasSubstr("noudpcsum"));
  EXPECT_EQ(overlay_->pod_mtu(), 1450u);
  const int vx = static_cast<int>(if_nametoindex("sarena_vxlan"));
  const int up = static_cast<int>(if_nametoindex("eth0"));
  Datapath& dp = node_dp_->datapath();
  EXPECT_TRUE(*dp.IsAttached(Program::kFromOverlay, vx, bpf::Direction::kIngress));
  EXPECT_TRUE(*dp.IsAttached(Program::kToOverlay, vx, bpf::Direction::kEgress));
  EXPECT_TRUE(*dp.IsAttached(Program::kFromNetdev, up, bpf::Direction::kIngress));
  absl::StatusOr<OverlayConfig> cfg = dp.maps().overlay_config.Read();
  ASSERT_OK(cfg);
  EXPECT_EQ(cfg->vni, 7u);
  EXPECT_EQ(cfg->node_id, 3u);
  EXPECT_EQ(cfg->vxlan_ifindex, static_cast<uint32_t>(vx));
  EXPECT_EQ(cfg->uplink_ifindex, static_cast<uint32_t>(up));
  EXPECT_EQ(cfg->flags, SARENA_OVL_F_TUNNEL);
  EXPECT_EQ(cfg->underlay_family, SARENA_FAMILY_IPV4);
  EXPECT_THAT(Routes(), HasSubstr("unreachable 10.99.0.0/16"));
  // A second Setup (a restarted daemon) adopts the device without recreating it.
  overlay_.reset();
  absl::StatusOr<std::unique_ptr<Overlay>> again =
      Overlay::Setup({.mode = RoutingMode::kTunnel,
                      .uplink = "eth0",
                      .vni = 7,
                      .cluster_cidr = Cidr("10.99.0.0/16"),
                      .node_ip = Ip("10.99.1.1"),
                      .node_id = 3},
                     dp);
  ASSERT_OK(again);
  EXPECT_EQ(static_cast<int>(if_nametoindex("sarena_vxlan")), vx);
}

TEST_F(OverlayTest, AForeignSarenaVxlanIsLeftAlone) {
  RunOk(node_->Exec("ip link add sarena_vxlan type vxlan id 42 dstport 4789 nolearning"));
  absl::Status st = Bring(RoutingMode::kTunnel);
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not ours")));
  EXPECT_THAT(RunOk(node_->Exec("ip -d link show sarena_vxlan")), HasSubstr("id 42"));
}

TEST_F(OverlayTest, BadOptionsNameTheField) {
  absl::StatusOr<std::unique_ptr<Node>> n = Node::Create(
      {.node_ip = Ip("10.99.1.1"), .pod_cidr = Cidr("10.99.1.0/24"), .datapath = {.bpffs = bpffs_.path()}});
  ASSERT_OK(n);
  OverlayOptions o{.uplink = "eth0", .cluster_cidr = Cidr("10.99.0.0/16"), .node_ip = Ip("10.99.1.1")};
  o.uplink = "nosuch0";
  EXPECT_THAT(Overlay::Setup(o, (*n)->datapath()).status().message(), HasSubstr("'nosuch0'"));
  o.uplink = "eth0";
  o.vni = 1u << 24;
  EXPECT_THAT(Overlay::Setup(o, (*n)->datapath()).status().message(), HasSubstr("--vni"));
  o.vni = 1;
  o.node_ip = Ip("10.1.1.1");
  EXPECT_THAT(Overlay::Setup(o, (*n)->datapath()).status().message(),
              HasSubstr("outside --cluster-cidr"));
  EXPECT_EQ(RunOk(node_->Exec("ip link show sarena_vxlan 2>/dev/null || true")), "");
}

TEST_F(OverlayTest, SyncWritesOnlyWhatDiffersAndRemovesWithdrawnPeers) {
  ASSERT_OK(Bring(RoutingMode::kTunnel));
  std::vector<PeerRoute> peers = {
      {.name = "n2", .node_id = 4, .underlay = Ip("192.168.77.3"), .pod_cidrs = {Cidr("10.99.2.0/24")}},
      {.name = "n3", .node_id = 5, .underlay = Ip("192.168.88.3"), .pod_cidrs = {Cidr("10.99.3.0/24")}},
  };
  absl::StatusOr<SyncStats> s = overlay_->Sync(peers);
  ASSERT_OK(s);
  EXPECT_EQ(s->tunnels_written, 4);  // two pod CIDRs + the two peers' own addresses
  EXPECT_EQ(s->peers_written, 2);
  EXPECT_EQ(s->routes_written, 2);
  EXPECT_TRUE(s->problems.empty());
  const std::string routes = Routes();
  EXPECT_THAT(routes, HasSubstr("10.99.2.0/24 dev sarena_vxlan scope link src 10.99.1.1"));
  EXPECT_THAT(routes, HasSubstr("10.99.3.0/24 dev sarena_vxlan scope link src 10.99.1.1"));
  // The kernel's own answer: a remote pod goes out sarena_vxlan, an unknown one is unreachable.
  EXPECT_THAT(RunOk(node_->Exec("ip route get 10.99.2.9")), HasSubstr("dev sarena_vxlan"));
  const ::sarena::testing::CommandResult unknown =
      ::sarena::testing::Run(node_->Exec("ip route get 10.99.200.9"));
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("No route to host"));  // EHOSTUNREACH: type unreachable
  const Maps& maps = node_dp_->datapath().maps();
  absl::StatusOr<Tunnel> t = maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.2.77")));
  ASSERT_OK(t);
  EXPECT_EQ(t->node_id, 4u);
  EXPECT_EQ(t->mode, SARENA_MODE_TUNNEL);
  EXPECT_EQ(net::FromBe32(*reinterpret_cast<const uint32_t*>(t->underlay)), Ip("192.168.77.3"));
  EXPECT_EQ(t->flags, 0u);
  // The peer's own address is in the tunnel map too (pod -> that node goes through the tunnel),
  // with no kernel route: the underlay address stays on the uplink.
  absl::StatusOr<Tunnel> node = maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("192.168.77.3")));
  ASSERT_OK(node);
  EXPECT_EQ(node->flags, SARENA_TUN_F_NODE);
  EXPECT_EQ(node->node_id, 4u);
  EXPECT_THAT(Routes(), ::testing::Not(HasSubstr("192.168.77.3")));
  EXPECT_THAT(RunOk(node_->Exec("ip route get 192.168.77.3")), HasSubstr("dev eth0"));

  // Same list again: nothing written.
  s = overlay_->Sync(peers);
  ASSERT_OK(s);
  EXPECT_EQ(s->tunnels_written + s->peers_written + s->routes_written, 0);

  // n3 withdrawn, n2 moves (in-place address change), a bad peer is skipped and named.
  peers.pop_back();
  peers[0].underlay = Ip("192.168.77.9");
  peers.push_back({.name = "bad", .node_id = 6, .underlay = Ip("192.168.77.10"),
                   .pod_cidrs = {Cidr("10.1.0.0/24")}});
  s = overlay_->Sync(peers);
  ASSERT_OK(s);
  // n2's CIDR re-pointed, n2's new address, and 'bad''s address: the node is a member, only its
  // out-of-cluster pod CIDR is refused.
  EXPECT_EQ(s->tunnels_written, 3);
  EXPECT_EQ(s->tunnels_removed, 3);  // n3's CIDR and address, n2's old address
  EXPECT_EQ(s->routes_removed, 1);
  ASSERT_EQ(s->problems.size(), 1u);
  EXPECT_THAT(s->problems[0], HasSubstr("'bad'"));
  EXPECT_THAT(Routes(), ::testing::Not(HasSubstr("10.99.3.0/24")));
  EXPECT_FALSE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.3.1"))).ok());
  t = maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.2.77")));
  ASSERT_OK(t);
  EXPECT_EQ(net::FromBe32(*reinterpret_cast<const uint32_t*>(t->underlay)), Ip("192.168.77.9"));
  EXPECT_FALSE(maps.peers.Lookup(MakePeerKey(Ip("192.168.88.3"))).ok());
  EXPECT_TRUE(maps.peers.Lookup(MakePeerKey(Ip("192.168.77.9"))).ok());
  EXPECT_FALSE(maps.peers.Lookup(MakePeerKey(Ip("192.168.77.3"))).ok());
  // The unreachable cluster route is never withdrawn by a sync.
  EXPECT_THAT(Routes(), HasSubstr("unreachable 10.99.0.0/16"));
}

// A hostile or stale record in etcd: a peer claiming this node's own pod CIDR (or a part of
// it, or a CIDR containing it), or claiming this node's own underlay address, must not hijack
// this node's traffic: the node's own pod-CIDR route (dev sarena_host) stays, nothing of it
// enters the tunnel map, and the good peer is still applied.
TEST_F(OverlayTest, SyncRefusesPeersClaimingThisNodesPodCidrOrUnderlay) {
  ASSERT_OK(Bring(RoutingMode::kTunnel));
  const std::string own_route_before = RunOk(node_->Exec("ip route show 10.99.1.0/24"));
  ASSERT_THAT(own_route_before, HasSubstr("sarena_host"));
  std::vector<PeerRoute> peers = {
      {.name = "n2", .node_id = 4, .underlay = Ip("192.168.77.3"), .pod_cidrs = {Cidr("10.99.2.0/24")}},
      {.name = "same", .node_id = 5, .underlay = Ip("192.168.77.4"), .pod_cidrs = {Cidr("10.99.1.0/24")}},
      {.name = "part", .node_id = 6, .underlay = Ip("192.168.77.5"), .pod_cidrs = {Cidr("10.99.1.128/25")}},
      {.name = "wide", .node_id = 7, .underlay = Ip("192.168.77.6"), .pod_cidrs = {Cidr("10.99.0.0/23")}},
      {.name = "me", .node_id = 8, .underlay = Ip("192.168.77.2"), .pod_cidrs = {Cidr("10.99.8.0/24")}},
  };
  absl::StatusOr<SyncStats> s = overlay_->Sync(peers);
  ASSERT_OK(s);
  ASSERT_EQ(s->problems.size(), 4u) << ::testing::PrintToString(s->problems);
  EXPECT_THAT(s->problems[0], HasSubstr("'same': pod CIDR 10.99.1.0/24 overlaps this node's"));
  EXPECT_THAT(s->problems[1], HasSubstr("'part'"));
  EXPECT_THAT(s->problems[2], HasSubstr("'wide'"));
  EXPECT_THAT(s->problems[3], HasSubstr("'me': underlay address 192.168.77.2 is this node's own"));
  EXPECT_EQ(RunOk(node_->Exec("ip route show 10.99.1.0/24")), own_route_before);
  EXPECT_THAT(RunOk(node_->Exec("ip route get 10.99.1.200")), HasSubstr("dev sarena_host"));
  const Maps& maps = node_dp_->datapath().maps();
  EXPECT_FALSE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.1.1"))).ok());
  EXPECT_FALSE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.1.200"))).ok());
  EXPECT_FALSE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("192.168.77.2"))).ok());
  EXPECT_FALSE(maps.peers.Lookup(MakePeerKey(Ip("192.168.77.2"))).ok());
  EXPECT_THAT(Routes(), ::testing::Not(HasSubstr("10.99.8.0/24")));
  // The good peer is applied all the same.
  EXPECT_THAT(Routes(), HasSubstr("10.99.2.0/24 dev sarena_vxlan"));
  EXPECT_TRUE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.2.9"))).ok());
}

TEST_F(OverlayTest, SyncDiffsAgainstWhatItAppliedAndRereadsTheKernelOnResync) {
  const std::vector<PeerRoute> peers = {
      {.name = "n2", .node_id = 4, .underlay = Ip("192.168.77.3"), .pod_cidrs = {Cidr("10.99.2.0/24")}}};
  for (absl::Duration resync : {absl::Seconds(60), absl::ZeroDuration()}) {
    SCOPED_TRACE(absl::FormatDuration(resync));
    overlay_.reset();
    node_dp_.reset();
    RunOk(node_->Exec("ip link del sarena_host; ip link del sarena_vxlan; true"));
    ASSERT_OK(Bring(RoutingMode::kTunnel, resync));
    absl::StatusOr<SyncStats> s = overlay_->Sync(peers);
    ASSERT_OK(s);
    EXPECT_TRUE(s->full_read);  // the first Sync adopts whatever the pins hold
    // Someone deletes the route and the tunnel entry behind sarenad's back.
    RunOk(node_->Exec("ip route del 10.99.2.0/24"));
    ASSERT_OK(node_dp_->datapath().maps().tunnels.Remove(Cidr("10.99.2.0/24")));
    s = overlay_->Sync(peers);
    ASSERT_OK(s);
    if (resync == absl::ZeroDuration()) {
      // A resync reads the kernel back and repairs both.
      EXPECT_TRUE(s->full_read);
      EXPECT_EQ(s->routes_written, 1);
      EXPECT_EQ(s->tunnels_written, 1);
      EXPECT_THAT(Routes(), HasSubstr("10.99.2.0/24 dev sarena_vxlan"));
    } else {
      // Between resyncs an unchanged peer list costs nothing: no read, no write.
      EXPECT_FALSE(s->full_read);
      EXPECT_EQ(s->routes_written + s->tunnels_written + s->peers_written, 0);
    }
  }
}

TEST_F(OverlayTest, APodCidrClaimedByTwoPeersStaysWithItsHolderOrGoesToNoOne) {
  ASSERT_OK(Bring(RoutingMode::kTunnel));
  const PeerRoute n2 = {.name = "n2", .node_id = 4, .underlay = Ip("192.168.77.3"),
                        .pod_cidrs = {Cidr("10.99.2.0/24")}};
  ASSERT_OK(overlay_->Sync({n2}));
  // A record named to sort after n2 claims n2's CIDR (before the fix the last name won and
  // n2's pods were tunnelled to 192.168.77.66).
  const PeerRoute zzz = {.name = "zzz", .node_id = 9, .underlay = Ip("192.168.77.66"),
                         .pod_cidrs = {Cidr("10.99.2.0/24")}};
  absl::StatusOr<SyncStats> s = overlay_->Sync({n2, zzz});
  ASSERT_OK(s);
  ASSERT_EQ(s->problems.size(), 1u);
  EXPECT_THAT(s->problems[0], HasSubstr("also claimed by peer 'n2'"));
  const Maps& maps = node_dp_->datapath().maps();
  absl::StatusOr<Tunnel> t = maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.2.9")));
  ASSERT_OK(t);
  EXPECT_EQ(t->node_id, 4u);
  EXPECT_EQ(net::FromBe32(*reinterpret_cast<const uint32_t*>(t->underlay)), Ip("192.168.77.3"));
  // Contested CIDRs nobody holds yet (equal or nested) go to no one.
  const PeerRoute a = {.name = "a", .node_id = 5, .underlay = Ip("192.168.77.5"),
                       .pod_cidrs = {Cidr("10.99.5.0/24")}};
  const PeerRoute b = {.name = "b", .node_id = 6, .underlay = Ip("192.168.77.6"),
                       .pod_cidrs = {Cidr("10.99.5.0/24")}};
  const PeerRoute wide = {.name = "wide", .node_id = 7, .underlay = Ip("192.168.77.7"),
                          .pod_cidrs = {Cidr("10.99.128.0/17")}};
  const PeerRoute narrow = {.name = "narrow", .node_id = 8, .underlay = Ip("192.168.77.8"),
                            .pod_cidrs = {Cidr("10.99.130.0/24")}};
  s = overlay_->Sync({n2, a, b, wide, narrow});
  ASSERT_OK(s);
  EXPECT_EQ(s->problems.size(), 4u);
  EXPECT_FALSE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.5.1"))).ok());
  EXPECT_FALSE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.130.1"))).ok());
  EXPECT_FALSE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.200.1"))).ok());
  EXPECT_THAT(Routes(), ::testing::Not(HasSubstr("10.99.5.0/24")));
  // The dispute ends (b withdrawn): a gets its CIDR.
  s = overlay_->Sync({n2, a});
  ASSERT_OK(s);
  EXPECT_TRUE(s->problems.empty());
  EXPECT_EQ(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.5.1")))->node_id, 5u);
}

TEST_F(OverlayTest, HybridRoutesSameSubnetPeersNativelyAndOthersThroughTheTunnel) {
  ASSERT_OK(Bring(RoutingMode::kHybrid));
  absl::StatusOr<SyncStats> s = overlay_->Sync({
      {.name = "near", .node_id = 4, .underlay = Ip("192.168.77.3"), .pod_cidrs = {Cidr("10.99.2.0/24")}},
      {.name = "far", .node_id = 5, .underlay = Ip("192.168.88.3"), .pod_cidrs = {Cidr("10.99.3.0/24")}},
  });
  ASSERT_OK(s);
  const std::string routes = Routes();
  EXPECT_THAT(routes, HasSubstr("10.99.2.0/24 via 192.168.77.3 dev eth0 src 10.99.1.1"));
  EXPECT_THAT(routes, HasSubstr("10.99.3.0/24 dev sarena_vxlan scope link src 10.99.1.1"));
  const Maps& maps = node_dp_->datapath().maps();
  EXPECT_EQ(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.2.1")))->mode, SARENA_MODE_NATIVE);
  EXPECT_EQ(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("10.99.3.1")))->mode, SARENA_MODE_TUNNEL);
  // Only the tunnel peer's address is tunnelled; the native peer's is reached on the underlay.
  EXPECT_TRUE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("192.168.88.3"))).ok());
  EXPECT_FALSE(maps.tunnels.Lookup(MakeTunnelLookupKey(Ip("192.168.77.3"))).ok());
  EXPECT_EQ(node_dp_->datapath().maps().overlay_config.Read()->flags,
            SARENA_OVL_F_TUNNEL | SARENA_OVL_F_NATIVE);
}

TEST_F(OverlayTest, NativeModeHasNoTunnelDevice) {
  ASSERT_OK(Bring(RoutingMode::kNative));
  EXPECT_EQ(if_nametoindex("sarena_vxlan"), 0u);
  EXPECT_EQ(overlay_->pod_mtu(), 1500u);
  absl::StatusOr<SyncStats> s = overlay_->Sync(
      {{.name = "n2", .node_id = 4, .underlay = Ip("192.168.77.3"), .pod_cidrs = {Cidr("10.99.2.0/24")}}});
  ASSERT_OK(s);
  EXPECT_THAT(Routes(), HasSubstr("10.99.2.0/24 via 192.168.77.3 dev eth0 src 10.99.1.1"));
}

}  // namespace
}  // namespace sarena::datapath
