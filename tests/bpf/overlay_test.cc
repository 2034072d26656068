// The cluster datapath branches of the real programs (from_container's remote-pod branch,
// to_overlay, from_overlay, from_netdev) on crafted frames with BPF_PROG_TEST_RUN, plus the C++
// views of the cluster maps (TunnelMap, PeerMap, overlay config, node counters).
//
// The programs run inside a private network namespace, because native routing calls
// bpf_fib_lookup, which looks up the FIB of the skb's device's namespace (test_run puts the skb
// on the caller namespace's loopback): the namespace has a veth "uplink" up0 (192.0.2.1/24,
// forwarding on) and routes: 10.244.4.0/24 via 192.0.2.2 (native peer), 10.244.3.0/24
// blackhole, nothing for 10.244.6.0/24. bpf_redirect* only record their target in test_run, so
// where a frame goes is checked through the MACs written (and the netns tests check the real
// path). test_run classifies the frame against loopback's all-zero MAC (eth_type_trans): a
// frame to 00:00:00:00:00:00 is PACKET_HOST, any other unicast MAC PACKET_OTHERHOST.
// A tunnel key cannot be put on a test_run input skb: from_overlay's accepted paths and the
// key to_overlay sets are checked in overlay_netns_test.cc.
#include <arpa/inet.h>
#include <linux/pkt_cls.h>
#include <net/if.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "libsarena/bpf/test_run.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/objects.h"
#include "tests/bpf/bpf_test_env.h"
#include "tests/lib/test_util.h"

namespace sarena::bpf {
namespace {

using ::sarena::datapath::Config;
using ::sarena::datapath::DropReasonName;
using ::sarena::datapath::FlowKey;
using ::sarena::datapath::MakeEndpoint;
using ::sarena::datapath::MakeEndpointKey;
using ::sarena::datapath::MakeTunnel;
using ::sarena::datapath::Maps;
using ::sarena::datapath::NodeCounters;
using ::sarena::datapath::Objects;
using ::sarena::datapath::OverlayConfig;
using ::sarena::datapath::Program;
using ::sarena::datapath::Tunnel;
using ::sarena::testing::BuildArp;
using ::sarena::testing::BuildIpv4;
using ::sarena::testing::Get16;
using ::sarena::testing::InternetChecksum;
using ::sarena::testing::Ipv4Spec;
using ::sarena::testing::MacAt;
using ::sarena::testing::RunOk;
using ::sarena::testing::ScopedNetns;

constexpr uint32_t kLoopback = 1;
constexpr uint32_t kVni = 42;
constexpr uint32_t kVxlanIfindex = 777;  // only recorded by bpf_redirect in test_run
const net::Mac kVxlanMac = {0x02, 0, 0, 0, 0x77, 0x77};
const net::Mac kNeighMac = {0x02, 0, 0, 0, 0x22, 0x22};
const net::Mac kZeroMac = {0, 0, 0, 0, 0, 0};  // loopback's: PACKET_HOST in test_run
constexpr char kPodA[] = "10.244.1.10";
constexpr uint32_t kPodAIfindex = 1010;
const net::Mac kPodAMac = {0x0a, 0, 0, 0, 0, 0x10};
const net::Mac kPodAHostMac = {0x02, 0, 0, 0, 0xa0, 0x10};
constexpr uint32_t kPodAId = 10;

net::Ipv4 Ip(const std::string& s) { return boost::asio::ip::make_address_v4(s); }
net::Ipv4Prefix Cidr(const std::string& s) { return *net::ParseIpv4Prefix(s); }

class OverlayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(::sarena::testing::IsRoot()) << "the bpf tier needs root (CI runs as root)";
    ns_.emplace("sbo");
    const ScopedNetns& n = *ns_;
    RunOk(n.Exec("ip link add up0 type veth peer name up1"));
    RunOk(n.Exec("ip link set up0 up"));
    RunOk(n.Exec("ip link set up1 up"));
    RunOk(n.Exec("ip addr add 192.0.2.1/24 dev up0"));
    RunOk(n.Exec("sysctl -qw net.ipv4.conf.all.forwarding=1 net.ipv4.conf.up0.forwarding=1"));
    RunOk(n.Exec("ip route add 10.244.4.0/24 via 192.0.2.2 dev up0"));
    RunOk(n.Exec("ip route add blackhole 10.244.3.0/24"));
    enter_.emplace(n.path());
    uplink_ifindex_ = if_nametoindex("up0");
    ASSERT_GT(uplink_ifindex_, 0u);
    uplink_mac_ = MacOf("up0");

    auto objs = Objects::Load({.pin_root = bpffs_.path()});
    ASSERT_TRUE(objs.ok()) << objs.status();
    objs_.emplace(std::move(*objs));

    Config cfg = {};
    cfg.node_ip_be = net::ToBe32(Ip("10.244.1.1"));
    cfg.host_ifindex = 500;
    cfg.net_ifindex = 501;
    cfg.flags = SARENA_CFG_F_REDIRECT_PEER;
    cfg.pod_cidr_be = net::ToBe32(Ip("10.244.1.0"));
    cfg.pod_cidr_len = 24;
    ASSERT_TRUE(maps().config.Write(cfg).ok());
    ASSERT_TRUE(maps()
                    .endpoints
                    .Put(Ip(kPodA), MakeEndpoint(kPodAIfindex, kPodAMac, kPodAHostMac, kPodAId))
                    .ok());
    WriteOverlay(SARENA_OVL_F_TUNNEL | SARENA_OVL_F_NATIVE);

    // Peer 2: tunnel. Peer 3: native, blackholed. Peer 4: native, routed via 192.0.2.2.
    // Peer 5: an IPv6 underlay (not supported: no tunnel key). Peer 6: native, no route.
    ASSERT_TRUE(
        maps().tunnels.Put(Cidr("10.244.2.0/24"), MakeTunnel(Ip("192.0.2.2"), 2, SARENA_MODE_TUNNEL)).ok());
    ASSERT_TRUE(
        maps().tunnels.Put(Cidr("10.244.3.0/24"), MakeTunnel(Ip("192.0.2.3"), 3, SARENA_MODE_NATIVE)).ok());
    ASSERT_TRUE(
        maps().tunnels.Put(Cidr("10.244.4.0/24"), MakeTunnel(Ip("192.0.2.2"), 4, SARENA_MODE_NATIVE)).ok());
    Tunnel v6 = MakeTunnel(Ip("192.0.2.5"), 5, SARENA_MODE_TUNNEL);
    v6.underlay_family = SARENA_FAMILY_IPV6;
    ASSERT_TRUE(maps().tunnels.Put(Cidr("10.244.5.0/24"), v6).ok());
    ASSERT_TRUE(
        maps().tunnels.Put(Cidr("10.244.6.0/24"), MakeTunnel(Ip("192.0.2.6"), 6, SARENA_MODE_NATIVE)).ok());
  }

  void TearDown() override {
    objs_.reset();
    enter_.reset();
    ns_.reset();
  }

  void WriteOverlay(uint32_t flags) {
    OverlayConfig o = {};
    o.flags = flags;
    o.vni = kVni;
    o.vxlan_ifindex = kVxlanIfindex;
    o.uplink_ifindex = uplink_ifindex_;
    o.node_id = 1;
    std::memcpy(o.vxlan_mac, kVxlanMac.data(), 6);
    std::memcpy(o.uplink_mac, uplink_mac_.data(), 6);
    uint32_t be = net::ToBe32(Ip("192.0.2.1"));
    std::memcpy(o.underlay, &be, 4);
    o.underlay_family = SARENA_FAMILY_IPV4;
    o.cluster_cidr_be = net::ToBe32(Ip("10.244.0.0"));
    o.cluster_cidr_len = 16;
    ASSERT_TRUE(maps().overlay_config.Write(o).ok());
  }

  net::Mac MacOf(const std::string& dev) {
    std::string out = RunOk(ns_->Exec(absl::StrCat("cat /sys/class/net/", dev, "/address")));
    auto mac = net::ParseMac(absl::StripAsciiWhitespace(out));
    EXPECT_TRUE(mac.ok()) << out;
    return mac.ok() ? *mac : net::Mac{};
  }

  const Maps& maps() { return objs_->maps(); }

  TestRunResult Run(Program prog, const std::vector<uint8_t>& pkt, uint32_t ingress_ifindex) {
    auto r = TestRun(objs_->prog_fd(prog), pkt,
                     TestRunOptions{.ifindex = kLoopback, .ingress_ifindex = ingress_ifindex});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : TestRunResult{};
  }
  TestRunResult FromPodA(const std::vector<uint8_t>& pkt) {
    return Run(Program::kFromContainer, pkt, kPodAIfindex);
  }

  uint64_t Drops(enum sarena_drop_reason reason) {
    auto d = maps().drops.ReadAll();
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? (*d)[reason].packets : 0;
  }
  // Every drop counter is zero except `except` (which must be `count`).
  void ExpectOnlyDrop(enum sarena_drop_reason except, uint64_t count) {
    for (uint32_t r = 1; r < SARENA_DROP_REASON_MAX; ++r) {
      EXPECT_EQ(Drops(static_cast<sarena_drop_reason>(r)), r == except ? count : 0u)
          << DropReasonName(r);
    }
  }
  NodeCounters Node(uint32_t node_id) {
    auto c = maps().node_counters.Read(node_id);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : NodeCounters{};
  }
  bool HasFlow(const std::string& ip, uint16_t port, uint8_t proto) {
    FlowKey key = {};
    key.addr_be = net::ToBe32(Ip(ip));
    key.port_be = htons(port);
    key.proto = proto;
    return maps().host_flows.Lookup(key).ok();
  }
  void AddFlow(const std::string& ip, uint16_t port, uint8_t proto) {
    FlowKey key = {};
    key.addr_be = net::ToBe32(Ip(ip));
    key.port_be = htons(port);
    key.proto = proto;
    ASSERT_TRUE(maps().host_flows.Update(key, 1).ok());
  }

  // A forwarded frame: MACs as given, TTL - 1, header checksum valid, every other byte kept.
  void ExpectForwarded(const std::vector<uint8_t>& in, const TestRunResult& r, const net::Mac& dst,
                       const net::Mac& src) {
    ASSERT_EQ(r.retval, static_cast<uint32_t>(TC_ACT_REDIRECT));
    ASSERT_EQ(r.data_out.size(), in.size());
    EXPECT_EQ(MacAt(r.data_out, 0), dst);
    EXPECT_EQ(MacAt(r.data_out, 6), src);
    const size_t ip = testing::kEthHlen;
    EXPECT_EQ(r.data_out[ip + 8], in[ip + 8] - 1) << "TTL";
    std::vector<uint8_t> hdr(r.data_out.begin() + ip, r.data_out.begin() + ip + 20);
    uint16_t got = Get16(hdr, 10);
    hdr[10] = hdr[11] = 0;
    EXPECT_EQ(got, InternetChecksum(hdr.data(), hdr.size())) << "IP header checksum";
    for (size_t i = 12; i < in.size(); ++i) {
      if (i == ip + 8 || i == ip + 10 || i == ip + 11) continue;
      ASSERT_EQ(r.data_out[i], in[i]) << "byte " << i << " changed";
    }
  }
  void ExpectPassedUntouched(const std::vector<uint8_t>& in, const TestRunResult& r) {
    EXPECT_EQ(r.retval, static_cast<uint32_t>(TC_ACT_OK));
    EXPECT_EQ(r.data_out, in);
  }

  ::sarena::testing::ScopedBpffs bpffs_;
  std::optional<ScopedNetns> ns_;
  std::optional<::sarena::testing::ScopedNetnsEnter> enter_;
  std::optional<Objects> objs_;
  uint32_t uplink_ifindex_ = 0;
  net::Mac uplink_mac_ = {};
};

Ipv4Spec ToRemote(const std::string& dst) {
  return Ipv4Spec{.saddr = kPodA, .daddr = dst, .proto = testing::kIpprotoUdp, .dport = 53};
}

// ---- from_container: remote pods ----

TEST_F(OverlayTest, TunnelPeerGetsVxlanMacsTtlMinusOneAndNodeTxCount) {
  auto pkt = BuildIpv4(ToRemote("10.244.2.5"));
  auto r = FromPodA(pkt);
  ExpectForwarded(pkt, r, kVxlanMac, kVxlanMac);
  NodeCounters n = Node(2);
  EXPECT_EQ(n.tx_packets, 1u);
  EXPECT_EQ(n.tx_bytes, pkt.size());
  EXPECT_EQ(n.rx_packets, 0u);
  EXPECT_FALSE(HasFlow(kPodA, 40000, testing::kIpprotoUdp)) << "pod -> remote pod is no host flow";
  EXPECT_EQ(maps().ep_counters.Read(kPodAId)->tx_packets, 1u);
  ExpectOnlyDrop(SARENA_DROP_NONE, 0);
}

TEST_F(OverlayTest, RemotePodWithTtlOneIsDroppedTtlExceeded) {
  Ipv4Spec s = ToRemote("10.244.2.5");
  s.ttl = 1;
  auto r = FromPodA(BuildIpv4(s));
  EXPECT_EQ(r.retval, static_cast<uint32_t>(TC_ACT_SHOT));
  ExpectOnlyDrop(SARENA_DROP_TTL_EXCEEDED, 1);
  EXPECT_EQ(Node(2).tx_packets, 0u);
}

TEST_F(OverlayTest, OneNodeModePassesRemotePodsToTheHostAsHostFlows) {
  WriteOverlay(0);
  auto pkt = BuildIpv4(ToRemote("10.244.2.5"));
  ExpectPassedUntouched(pkt, FromPodA(pkt));
  EXPECT_TRUE(HasFlow(kPodA, 40000, testing::kIpprotoUdp));
  EXPECT_EQ(Node(2).tx_packets, 0u);
}

TEST_F(OverlayTest, AddressWithoutTunnelEntryGoesToTheHostAsAHostFlow) {
  auto pkt = BuildIpv4(ToRemote("10.250.0.1"));
  ExpectPassedUntouched(pkt, FromPodA(pkt));
  EXPECT_TRUE(HasFlow(kPodA, 40000, testing::kIpprotoUdp));
}

TEST_F(OverlayTest, HostFlowReplyToARemotePodGoesThroughTheHost) {
  // 10.244.2.5:53 opened a flow through this node's host stack (e.g. NodePort DNAT to pod A):
  // A's reply must be un-NAT'ed by the host's conntrack, not tunnelled.
  AddFlow("10.244.2.5", 53, testing::kIpprotoUdp);
  auto pkt = BuildIpv4(ToRemote("10.244.2.5"));
  ExpectPassedUntouched(pkt, FromPodA(pkt));
  EXPECT_EQ(Node(2).tx_packets, 0u);
}

TEST_F(OverlayTest, DirectSynToARemotePodForgetsAnOldHostFlowOfItsPort) {
  // Pod A once reached a ClusterIP from port 40000 (recorded); now it connects from the same
  // port straight to a remote pod. The replies must not be sent through the host stack.
  AddFlow(kPodA, 40000, testing::kIpprotoTcp);
  auto ack = BuildIpv4({.saddr = kPodA, .daddr = "10.244.2.5", .tcp_flags = 0x10});
  ASSERT_EQ(FromPodA(ack).retval, static_cast<uint32_t>(TC_ACT_REDIRECT));
  EXPECT_TRUE(HasFlow(kPodA, 40000, testing::kIpprotoTcp)) << "only a SYN clears it";
  auto syn = BuildIpv4({.saddr = kPodA, .daddr = "10.244.2.5", .tcp_flags = 0x02});
  ASSERT_EQ(FromPodA(syn).retval, static_cast<uint32_t>(TC_ACT_REDIRECT));
  EXPECT_FALSE(HasFlow(kPodA, 40000, testing::kIpprotoTcp));
  EXPECT_EQ(Node(2).tx_packets, 2u);
}

TEST_F(OverlayTest, PeerModeOffInTheConfigPasses) {
  WriteOverlay(SARENA_OVL_F_NATIVE);  // no VXLAN device: the tunnel peer is left to the host
  auto pkt = BuildIpv4(ToRemote("10.244.2.5"));
  ExpectPassedUntouched(pkt, FromPodA(pkt));
  WriteOverlay(SARENA_OVL_F_TUNNEL);  // no native routing: the native peer is left to the host
  auto native = BuildIpv4(ToRemote("10.244.4.5"));
  ExpectPassedUntouched(native, FromPodA(native));
  EXPECT_EQ(Node(2).tx_packets + Node(4).tx_packets, 0u);
  ExpectOnlyDrop(SARENA_DROP_NONE, 0);
}

TEST_F(OverlayTest, NonIpv4UnderlayIsDroppedTunnelKeyFailed) {
  auto r = FromPodA(BuildIpv4(ToRemote("10.244.5.5")));
  EXPECT_EQ(r.retval, static_cast<uint32_t>(TC_ACT_SHOT));
  ExpectOnlyDrop(SARENA_DROP_TUNNEL_KEY_FAILED, 1);
  EXPECT_EQ(Node(5).tx_packets, 0u);
}

TEST_F(OverlayTest, NativePeerWithoutNeighbourIsRedirectedThroughTheNeighbourSubsystem) {
  // No neighbour entry for 192.0.2.2 yet: NO_NEIGH -> bpf_redirect_neigh, MACs left for the
  // kernel to fill, TTL - 1.
  auto pkt = BuildIpv4(ToRemote("10.244.4.5"));
  auto r = FromPodA(pkt);
  ExpectForwarded(pkt, r, MacAt(pkt, 0), MacAt(pkt, 6));
  EXPECT_EQ(Node(4).tx_packets, 1u);
  ExpectOnlyDrop(SARENA_DROP_NONE, 0);
}

TEST_F(OverlayTest, NativePeerWithNeighbourGetsTheFibMacs) {
  RunOk(ns_->Exec(absl::StrCat("ip neigh replace 192.0.2.2 lladdr ", net::FormatMac(kNeighMac),
                               " dev up0 nud permanent")));
  auto pkt = BuildIpv4(ToRemote("10.244.4.5"));
  auto r = FromPodA(pkt);
  ExpectForwarded(pkt, r, kNeighMac, uplink_mac_);
  EXPECT_EQ(Node(4).tx_packets, 1u);
  EXPECT_EQ(Node(4).tx_bytes, pkt.size());
}

TEST_F(OverlayTest, NativePeerWithoutUsableRouteIsDroppedFibLookupFailed) {
  auto blackholed = FromPodA(BuildIpv4(ToRemote("10.244.3.5")));
  EXPECT_EQ(blackholed.retval, static_cast<uint32_t>(TC_ACT_SHOT));
  auto unrouted = FromPodA(BuildIpv4(ToRemote("10.244.6.5")));
  EXPECT_EQ(unrouted.retval, static_cast<uint32_t>(TC_ACT_SHOT));
  ExpectOnlyDrop(SARENA_DROP_FIB_LOOKUP_FAILED, 2);
  EXPECT_EQ(Node(3).tx_packets + Node(6).tx_packets, 0u);
}

TEST_F(OverlayTest, NativeFibResultsTheStackHandlesBetterPassUntouched) {
  RunOk(ns_->Exec(absl::StrCat("ip neigh replace 192.0.2.2 lladdr ", net::FormatMac(kNeighMac),
                               " dev up0 nud permanent")));
  // Larger than the uplink MTU: FRAG_NEEDED, the stack answers "fragmentation needed".
  RunOk(ns_->Exec("ip link set up0 mtu 1280"));
  Ipv4Spec big = ToRemote("10.244.4.5");
  big.payload = 1400;
  auto big_pkt = BuildIpv4(big);
  ExpectPassedUntouched(big_pkt, FromPodA(big_pkt));
  // Forwarding disabled on the uplink: FWD_DISABLED.
  RunOk(ns_->Exec("sysctl -qw net.ipv4.conf.up0.forwarding=0"));
  auto pkt = BuildIpv4(ToRemote("10.244.4.5"));
  ExpectPassedUntouched(pkt, FromPodA(pkt));
  EXPECT_EQ(Node(4).tx_packets, 0u);
  ExpectOnlyDrop(SARENA_DROP_NONE, 0);
  EXPECT_FALSE(HasFlow(kPodA, 40000, testing::kIpprotoUdp));
}

// ---- to_overlay ----

TEST_F(OverlayTest, ToOverlayKeysKnownCidrsAndDropsTheRest) {
  auto known = BuildIpv4({.saddr = "192.0.2.1", .daddr = "10.244.2.7"});
  ExpectPassedUntouched(known, Run(Program::kToOverlay, known, 0));
  EXPECT_EQ(Node(2).tx_packets, 1u);
  EXPECT_EQ(Node(2).tx_bytes, known.size());

  auto unknown = BuildIpv4({.saddr = "192.0.2.1", .daddr = "10.250.0.1"});
  EXPECT_EQ(Run(Program::kToOverlay, unknown, 0).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  ExpectOnlyDrop(SARENA_DROP_NO_TUNNEL_ENDPOINT, 1);

  auto v6 = BuildIpv4({.saddr = "192.0.2.1", .daddr = "10.244.5.7"});
  EXPECT_EQ(Run(Program::kToOverlay, v6, 0).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  EXPECT_EQ(Drops(SARENA_DROP_TUNNEL_KEY_FAILED), 1u);

  auto arp = BuildArp({.eth_src = kVxlanMac, .sha = kVxlanMac, .spa = "192.0.2.1",
                       .tpa = "10.244.2.7"});
  ExpectPassedUntouched(arp, Run(Program::kToOverlay, arp, 0));

  auto truncated = BuildIpv4({.saddr = "192.0.2.1", .daddr = "10.244.2.7"});
  truncated.pop_back();  // one byte short of the IP total length
  EXPECT_EQ(Run(Program::kToOverlay, truncated, 0).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  EXPECT_EQ(Drops(SARENA_DROP_TRUNCATED), 1u);
}

TEST_F(OverlayTest, ToOverlayAndFromOverlayFailOpenInOneNodeMode) {
  WriteOverlay(0);
  auto pkt = BuildIpv4({.saddr = "192.0.2.1", .daddr = "10.250.0.1"});
  ExpectPassedUntouched(pkt, Run(Program::kToOverlay, pkt, 0));
  ExpectPassedUntouched(pkt, Run(Program::kFromOverlay, pkt, 0));
  ExpectOnlyDrop(SARENA_DROP_NONE, 0);
}

// ---- from_overlay ----

TEST_F(OverlayTest, FromOverlayWithoutTunnelKeyIsDroppedTunnelKeyFailed) {
  // test_run cannot attach a tunnel key; a real decapsulated frame always has one.
  auto pkt = BuildIpv4({.saddr = "10.244.2.5", .daddr = kPodA});
  EXPECT_EQ(Run(Program::kFromOverlay, pkt, 0).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  ExpectOnlyDrop(SARENA_DROP_TUNNEL_KEY_FAILED, 1);
}

// ---- from_netdev ----

Ipv4Spec FromNativePeer() {
  return Ipv4Spec{.eth_dst = kZeroMac, .saddr = "10.244.4.9", .daddr = kPodA};
}

TEST_F(OverlayTest, FromNetdevDeliversNativePeerPodsToLocalPods) {
  auto pkt = BuildIpv4(FromNativePeer());
  auto r = Run(Program::kFromNetdev, pkt, uplink_ifindex_);
  ExpectForwarded(pkt, r, kPodAMac, kPodAHostMac);
  EXPECT_EQ(Node(4).rx_packets, 1u);
  EXPECT_EQ(Node(4).rx_bytes, pkt.size());
  EXPECT_EQ(Node(4).tx_packets, 0u);
  EXPECT_EQ(maps().ep_counters.Read(kPodAId)->rx_packets, 1u);
}

TEST_F(OverlayTest, FromNetdevLeavesEverythingElseToTheKernel) {
  std::vector<std::vector<uint8_t>> passed;
  // Another host's MAC (PACKET_OTHERHOST).
  Ipv4Spec other = FromNativePeer();
  other.eth_dst = {0x02, 0, 0, 0, 0x99, 0x99};
  passed.push_back(BuildIpv4(other));
  // A source outside every remote pod CIDR (a NodePort client, the peer node itself).
  passed.push_back(BuildIpv4({.eth_dst = kZeroMac, .saddr = "192.0.2.2", .daddr = kPodA}));
  // Not a local endpoint.
  passed.push_back(BuildIpv4({.eth_dst = kZeroMac, .saddr = "10.244.4.9", .daddr = "10.244.1.99"}));
  // ARP.
  passed.push_back(BuildArp({.eth_src = kNeighMac, .sha = kNeighMac, .spa = "192.0.2.2",
                             .tpa = "192.0.2.1"}));
  // Malformed IPv4: not counted as a datapath drop on the uplink.
  auto bad = BuildIpv4(FromNativePeer());
  bad[testing::kEthHlen] = 0x44;  // IHL 4
  passed.push_back(bad);
  for (const auto& pkt : passed) {
    ExpectPassedUntouched(pkt, Run(Program::kFromNetdev, pkt, uplink_ifindex_));
  }
  // A reply to a flow pod A opened through the host stack (e.g. to a ClusterIP DNAT'ed to
  // 10.244.4.9): conntrack must see it.
  AddFlow(kPodA, 8080, testing::kIpprotoTcp);
  auto reply = BuildIpv4({.eth_dst = kZeroMac, .saddr = "10.244.4.9", .daddr = kPodA,
                          .sport = 80, .dport = 8080});
  ExpectPassedUntouched(reply, Run(Program::kFromNetdev, reply, uplink_ifindex_));
  // Tunnel-only cluster and one-node mode: everything passes.
  auto pkt = BuildIpv4(FromNativePeer());
  WriteOverlay(SARENA_OVL_F_TUNNEL);
  ExpectPassedUntouched(pkt, Run(Program::kFromNetdev, pkt, uplink_ifindex_));
  WriteOverlay(0);
  ExpectPassedUntouched(pkt, Run(Program::kFromNetdev, pkt, uplink_ifindex_));
  EXPECT_EQ(Node(4).rx_packets, 0u);
  ExpectOnlyDrop(SARENA_DROP_NONE, 0);
}

// ---- C++ map views ----

TEST(OverlayAbi, KeysAreTheLayoutTheProgramsLookUp) {
  datapath::TunnelKey k = datapath::MakeTunnelKey(Cidr("10.244.2.7/24"));  // host bits dropped
  EXPECT_EQ(k.prefixlen, 32u + 24u);
  EXPECT_EQ(k.family, SARENA_FAMILY_IPV4);
  const uint8_t want[16] = {10, 244, 2, 0};
  EXPECT_EQ(std::memcmp(k.addr, want, 16), 0);
  EXPECT_EQ(k.pad[0] | k.pad[1] | k.pad[2], 0);
  EXPECT_EQ(datapath::TunnelKeyIpv4(k)->to_string(), "10.244.2.0/24");
  datapath::TunnelKey lookup = datapath::MakeTunnelLookupKey(Ip("10.244.2.7"));
  EXPECT_EQ(lookup.prefixlen, 32u + 128u);
  EXPECT_FALSE(datapath::TunnelKeyIpv4(lookup).has_value()) << "not a stored CIDR key";
  datapath::PeerKey p = datapath::MakePeerKey(Ip("192.0.2.2"));
  const uint8_t peer[16] = {192, 0, 2, 2};
  EXPECT_EQ(std::memcmp(p.addr, peer, 16), 0);
  EXPECT_EQ(p.family, SARENA_FAMILY_IPV4);
  EXPECT_EQ(*datapath::PeerKeyIpv4(p), Ip("192.0.2.2"));
  Tunnel t = MakeTunnel(Ip("192.0.2.2"), 7, SARENA_MODE_NATIVE);
  const uint8_t underlay[16] = {192, 0, 2, 2};
  EXPECT_EQ(std::memcmp(t.underlay, underlay, 16), 0);
  EXPECT_EQ(t.underlay_family, SARENA_FAMILY_IPV4);
  EXPECT_EQ(t.mode, SARENA_MODE_NATIVE);
  EXPECT_EQ(t.node_id, 7u);
  EXPECT_EQ(datapath::RoutingModeName(SARENA_MODE_TUNNEL), "tunnel");
  EXPECT_EQ(datapath::RoutingModeName(9), "mode_9");
}

TEST_F(OverlayTest, TunnelMapMatchesLongestPrefixAndListsEntries) {
  ASSERT_TRUE(
      maps().tunnels.Put(Cidr("10.244.2.128/25"), MakeTunnel(Ip("192.0.2.9"), 9, SARENA_MODE_NATIVE)).ok());
  auto wide = maps().tunnels.Match(Ip("10.244.2.5"));
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->node_id, 2u);
  auto narrow = maps().tunnels.Match(Ip("10.244.2.200"));
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ(narrow->node_id, 9u);
  EXPECT_EQ(*datapath::TunnelUnderlayIpv4(*narrow), Ip("192.0.2.9"));
  EXPECT_TRUE(absl::IsNotFound(maps().tunnels.Match(Ip("10.250.0.1")).status()));
  // Host bits are ignored: the key is the canonical network.
  auto exact = maps().tunnels.Get(Cidr("10.244.2.130/25"));
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(exact->node_id, 9u);

  auto entries = maps().tunnels.Entries();
  ASSERT_TRUE(entries.ok()) << entries.status();
  std::vector<std::string> got;
  for (const auto& [cidr, t] : *entries) got.push_back(absl::StrCat(cidr.to_string(), "=", t.node_id));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"10.244.2.0/24=2", "10.244.2.128/25=9", "10.244.3.0/24=3",
                                           "10.244.4.0/24=4", "10.244.5.0/24=5", "10.244.6.0/24=6"}));

  EXPECT_TRUE(*maps().tunnels.Remove(Cidr("10.244.2.128/25")));
  EXPECT_FALSE(*maps().tunnels.Remove(Cidr("10.244.2.128/25")));
  EXPECT_EQ(maps().tunnels.Match(Ip("10.244.2.200"))->node_id, 2u);
  EXPECT_EQ(datapath::FormatTunnelKey(datapath::MakeTunnelKey(Cidr("10.244.2.0/24"))),
            "10.244.2.0/24");
  EXPECT_EQ(datapath::FormatTunnel(MakeTunnel(Ip("192.0.2.2"), 2, SARENA_MODE_TUNNEL)),
            "underlay=192.0.2.2 node_id=2 mode=tunnel flags=0x0");
}

TEST_F(OverlayTest, PeerMapAndNodeCounters) {
  ASSERT_TRUE(maps().peers.Put(Ip("192.0.2.2"), 2).ok());
  ASSERT_TRUE(maps().peers.Put(Ip("192.0.2.3"), 3).ok());
  auto bad = maps().peers.Put(Ip("192.0.2.4"), SARENA_MAX_PEERS);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_EQ(maps().peers.Get(Ip("192.0.2.3"))->node_id, 3u);
  auto entries = maps().peers.Entries();
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_EQ(entries->size(), 2u);
  EXPECT_TRUE(*maps().peers.Remove(Ip("192.0.2.3")));
  EXPECT_FALSE(*maps().peers.Remove(Ip("192.0.2.3")));
  EXPECT_TRUE(absl::IsNotFound(maps().peers.Get(Ip("192.0.2.3")).status()));

  auto pkt = BuildIpv4(ToRemote("10.244.2.5"));
  ASSERT_EQ(FromPodA(pkt).retval, static_cast<uint32_t>(TC_ACT_REDIRECT));
  EXPECT_EQ(Node(2).tx_packets, 1u);
  ASSERT_TRUE(maps().node_counters.Reset(2).ok());
  EXPECT_EQ(Node(2).tx_packets, 0u);
  EXPECT_EQ(maps().node_counters.Read(SARENA_MAX_PEERS).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(maps().node_counters.Reset(SARENA_MAX_PEERS).code(), absl::StatusCode::kInvalidArgument);

  auto cfg = maps().overlay_config.Read();
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->vni, kVni);
  EXPECT_EQ(cfg->flags, SARENA_OVL_F_TUNNEL | SARENA_OVL_F_NATIVE);
  const std::string text = datapath::FormatOverlayConfig(*cfg);
  EXPECT_NE(text.find("flags=0x3 vni=42 vxlan_ifindex=777"), std::string::npos) << text;
  EXPECT_NE(text.find("underlay=192.0.2.1 cluster_cidr=10.244.0.0/16"), std::string::npos) << text;

  // A second opener (sarena CLI, a restarted daemon) sees the same pinned cluster maps.
  auto pinned = Maps::FromPinRoot(bpffs_.path());
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(pinned->peers.Get(Ip("192.0.2.2"))->node_id, 2u);
  EXPECT_EQ(pinned->tunnels.Match(Ip("10.244.4.1"))->node_id, 4u);
  EXPECT_EQ(pinned->overlay_config.Read()->vni, kVni);
}

}  // namespace
}  // namespace sarena::bpf
