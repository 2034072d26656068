// The cluster datapath on the real kernel path: two node namespaces A and B joined by a veth
// "underlay" (ul0, 10.199.R.1/24 and 10.199.R.2/24, R random per run), each with a
// collect-metadata VXLAN device sarena_vxlan (iproute2 `external`, UDP 8472, NOARP, no
// learning), one pod namespace per node behind a host-side veth lxc0, and each node's own
// Objects (own bpffs, own maps): from_container on lxc0 ingress, from_overlay / to_overlay on
// sarena_vxlan ingress / egress, from_netdev on ul0 ingress. Routes as sarenad's Overlay writes
// them: tunnel mode "<peer CIDR> dev sarena_vxlan scope link src <gateway>", native mode
// "<peer CIDR> via <peer underlay> dev ul0 src <gateway>".
//
// Node A: id 1, pod CIDR 10.244.1.0/24, gateway 10.244.1.1 (also on lo), pod 10.244.1.5.
// Node B: id 2, pod CIDR 10.244.2.0/24, gateway 10.244.2.1 (also on lo), pod 10.244.2.5.
//
// Checks: pod <-> remote pod both ways (from_container's tunnel key + redirect, from_overlay's
// redirect_peer delivery), node -> remote pod (to_overlay keys host-stack traffic), pod -> a
// remote node address and a host-flow reply (from_overlay hands them to the host stack as
// PACKET_HOST), the VXLAN frames on the wire
// (outer UDP checksum 0, VNI), the per-node counters (no double count of from_container's frames
// in to_overlay), each overlay drop reason on a real frame, and native routing end to end
// (bpf_fib_lookup + bpf_redirect_neigh/bpf_redirect, from_netdev).
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/bpf/link.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/objects.h"
#include "tests/bpf/bpf_test_env.h"
#include "tests/lib/test_util.h"

namespace sarena::bpf {
namespace {

using ::sarena::datapath::Config;
using ::sarena::datapath::DropReasonName;
using ::sarena::datapath::MakeEndpoint;
using ::sarena::datapath::MakeTunnel;
using ::sarena::datapath::NodeCounters;
using ::sarena::datapath::Objects;
using ::sarena::datapath::OverlayConfig;
using ::sarena::datapath::Program;
using ::sarena::testing::RunOk;
using ::sarena::testing::ScopedNetns;
using ::sarena::testing::ScopedNetnsEnter;

constexpr uint32_t kVni = 42;
constexpr uint16_t kVxlanPort = 8472;

net::Ipv4 Ip(const std::string& s) { return boost::asio::ip::make_address_v4(s); }
net::Ipv4Prefix Cidr(const std::string& s) { return *net::ParseIpv4Prefix(s); }

net::Mac MacOf(const ScopedNetns& ns, const std::string& dev) {
  std::string out = RunOk(ns.Exec(absl::StrCat("cat /sys/class/net/", dev, "/address")));
  auto mac = net::ParseMac(absl::StripAsciiWhitespace(out));
  EXPECT_TRUE(mac.ok()) << out;
  return mac.ok() ? *mac : net::Mac{};
}

uint32_t IfindexIn(const ScopedNetns& ns, const std::string& dev) {
  std::string out = RunOk(ns.Exec(absl::StrCat("cat /sys/class/net/", dev, "/ifindex")));
  return static_cast<uint32_t>(std::stoul(std::string(absl::StripAsciiWhitespace(out))));
}

struct Node {
  uint32_t id = 0;
  std::string underlay;  // ul0 address
  std::string cidr;      // pod CIDR
  std::string gateway;   // pod gateway / node_ip
  std::string pod_ip;
  std::optional<ScopedNetns> ns;
  std::optional<ScopedNetns> pod;
  ::sarena::testing::ScopedBpffs bpffs;
  std::optional<Objects> objs;
  std::vector<Link> links;
  uint32_t vxlan_ifindex = 0;
  uint32_t uplink_ifindex = 0;
  net::Mac vxlan_mac = {};

  const datapath::Maps& maps() const { return objs->maps(); }
  NodeCounters Counters(uint32_t node_id) const { return *maps().node_counters.Read(node_id); }
  uint64_t Drops(sarena_drop_reason reason) const { return (*maps().drops.ReadAll())[reason].packets; }
};

enum class Mode { kTunnel, kNative };

class OverlayNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(::sarena::testing::IsRoot()) << "bpf tier needs root";
    std::random_device rd;
    const std::string net = absl::StrCat("10.199.", 1 + rd() % 250, ".");
    a_.id = 1;
    a_.underlay = net + "1";
    a_.cidr = "10.244.1.0/24";
    a_.gateway = "10.244.1.1";
    a_.pod_ip = "10.244.1.5";
    b_.id = 2;
    b_.underlay = net + "2";
    b_.cidr = "10.244.2.0/24";
    b_.gateway = "10.244.2.1";
    b_.pod_ip = "10.244.2.5";
    a_.ns.emplace("sbova");
    b_.ns.emplace("sbovb");
    RunOk(a_.ns->Exec(absl::StrCat("ip link add ul0 type veth peer name ul0 netns ", b_.ns->name())));
  }

  // Builds both nodes in `mode` (separate from SetUp so each test picks its mode).
  void Build(Mode mode) {
    mode_ = mode;
    for (Node* n : {&a_, &b_}) {
      SCOPED_TRACE(n->ns->name());
      BuildNode(*n);
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (auto [self, peer] : {std::pair{&a_, &b_}, std::pair{&b_, &a_}}) {
      WriteOverlay(*self, kVni, mode == Mode::kTunnel ? SARENA_OVL_F_TUNNEL : SARENA_OVL_F_NATIVE);
      ASSERT_TRUE(self->maps().peers.Put(Ip(peer->underlay), peer->id).ok());
      ASSERT_TRUE(self->maps()
                      .tunnels
                      .Put(Cidr(peer->cidr),
                           MakeTunnel(Ip(peer->underlay), peer->id,
                                      mode == Mode::kTunnel ? SARENA_MODE_TUNNEL : SARENA_MODE_NATIVE))
                      .ok());
      if (mode == Mode::kTunnel) {
        RunOk(self->ns->Exec(absl::StrCat("ip route add ", peer->cidr,
                                          " dev sarena_vxlan scope link src ", self->gateway)));
      } else {
        RunOk(self->ns->Exec(absl::StrCat("ip route add ", peer->cidr, " via ", peer->underlay,
                                          " dev ul0 src ", self->gateway)));
      }
    }
  }

  void BuildNode(Node& n) {
    const ScopedNetns& ns = *n.ns;
    RunOk(ns.Exec("sysctl -qw net.ipv4.conf.all.forwarding=1"));
    RunOk(ns.Exec("ip link set ul0 up"));
    RunOk(ns.Exec(absl::StrCat("ip addr add ", n.underlay, "/24 dev ul0")));
    RunOk(ns.Exec(absl::StrCat("ip link add sarena_vxlan type vxlan external dstport ", kVxlanPort,
                               " nolearning noudpcsum")));
    RunOk(ns.Exec("ip link set sarena_vxlan arp off"));
    RunOk(ns.Exec("ip link set sarena_vxlan up"));
    RunOk(ns.Exec(absl::StrCat("ip addr add ", n.gateway, "/32 dev lo")));
    n.pod.emplace("sbovp");
    RunOk(ns.Exec(absl::StrCat("ip link add lxc0 type veth peer name eth0 netns ", n.pod->name())));
    RunOk(ns.Exec("ip link set lxc0 up"));
    RunOk(ns.Exec(absl::StrCat("ip route add ", n.pod_ip, "/32 dev lxc0 scope link src ", n.gateway)));
    RunOk(n.pod->Exec("ip link set eth0 up"));
    RunOk(n.pod->Exec(absl::StrCat("ip addr add ", n.pod_ip, "/32 dev eth0")));
    RunOk(n.pod->Exec(absl::StrCat("ip route add ", n.gateway, " dev eth0 scope link")));
    RunOk(n.pod->Exec(absl::StrCat("ip route add default via ", n.gateway, " dev eth0")));
    n.vxlan_ifindex = IfindexIn(ns, "sarena_vxlan");
    n.uplink_ifindex = IfindexIn(ns, "ul0");
    n.vxlan_mac = MacOf(ns, "sarena_vxlan");

    auto objs = Objects::Load({.pin_root = n.bpffs.path()});
    ASSERT_TRUE(objs.ok()) << objs.status();
    n.objs.emplace(std::move(*objs));
    Config cfg = {};
    cfg.node_ip_be = net::ToBe32(Ip(n.gateway));
    cfg.host_ifindex = 1;  // no sarena_host pair here: only "config present" matters
    cfg.net_ifindex = 1;
    cfg.flags = SARENA_CFG_F_REDIRECT_PEER;
    cfg.pod_cidr_be = net::ToBe32(Cidr(n.cidr).network());
    cfg.pod_cidr_len = 24;
    ASSERT_TRUE(n.maps().config.Write(cfg).ok());
    const uint32_t lxc = IfindexIn(ns, "lxc0");
    ASSERT_TRUE(n.maps()
                    .endpoints.Put(Ip(n.pod_ip), MakeEndpoint(lxc, MacOf(*n.pod, "eth0"),
                                                              MacOf(ns, "lxc0"), /*endpoint_id=*/1))
                    .ok());

    ScopedNetnsEnter enter(ns.path());
    struct {
      Program prog;
      uint32_t ifindex;
      Direction dir;
    } attach[] = {{Program::kFromContainer, lxc, Direction::kIngress},
                  {Program::kFromOverlay, n.vxlan_ifindex, Direction::kIngress},
                  {Program::kToOverlay, n.vxlan_ifindex, Direction::kEgress},
                  {Program::kFromNetdev, n.uplink_ifindex, Direction::kIngress}};
    for (const auto& at : attach) {
      auto link = Link::AttachTcx(n.objs->prog_fd(at.prog), static_cast<int>(at.ifindex), at.dir);
      ASSERT_TRUE(link.ok()) << datapath::ToString(at.prog) << ": " << link.status();
      n.links.push_back(*std::move(link));
    }
  }

  void WriteOverlay(const Node& n, uint32_t vni, uint32_t flags) {
    OverlayConfig o = {};
    o.flags = flags;
    o.vni = vni;
    o.vxlan_ifindex = n.vxlan_ifindex;
    o.uplink_ifindex = n.uplink_ifindex;
    o.node_id = n.id;
    std::memcpy(o.vxlan_mac, n.vxlan_mac.data(), 6);
    uint32_t be = net::ToBe32(Ip(n.underlay));
    std::memcpy(o.underlay, &be, 4);
    o.underlay_family = SARENA_FAMILY_IPV4;
    o.cluster_cidr_be = net::ToBe32(Ip("10.244.0.0"));
    o.cluster_cidr_len = 16;
    ASSERT_TRUE(n.maps().overlay_config.Write(o).ok());
  }

  void TearDown() override {
    for (Node* n : {&a_, &b_}) {
      n->links.clear();
      n->objs.reset();
      n->pod.reset();
    }
    a_.ns.reset();  // deleting A's ul0 deletes B's end too
    b_.ns.reset();
  }

  static bool Ping(const ScopedNetns& from, const std::string& to, int count = 1,
                   const std::string& source = "") {
    std::string cmd = absl::StrCat("busybox ping -c ", count, " -W 2 ");
    if (!source.empty()) absl::StrAppend(&cmd, "-I ", source, " ");
    absl::StrAppend(&cmd, to);
    return ::sarena::testing::Run(from.Exec(cmd)).exit_code == 0;
  }

  void ExpectNoDrops(const Node& n) {
    auto drops = n.maps().drops.ReadAll();
    ASSERT_TRUE(drops.ok()) << drops.status();
    for (uint32_t r = 1; r < SARENA_DROP_REASON_MAX; ++r)
      EXPECT_EQ((*drops)[r].packets, 0u) << n.ns->name() << ": " << DropReasonName(r);
  }

  Mode mode_ = Mode::kTunnel;
  Node a_, b_;
};

// A VXLAN frame seen on an underlay veth.
struct VxlanFrame {
  uint32_t outer_src_be = 0;
  uint16_t udp_check = 0;
  uint32_t vni = 0;
  uint8_t vxlan_flags = 0;
};

// An AF_PACKET socket on one device of a namespace, collecting incoming VXLAN frames.
class UnderlayCapture {
 public:
  UnderlayCapture(const ScopedNetns& ns, uint32_t ifindex) {
    ScopedNetnsEnter enter(ns.path());
    fd_ = UniqueFd(socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL)));
    EXPECT_TRUE(fd_.valid()) << strerror(errno);
    sockaddr_ll sll = {};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = static_cast<int>(ifindex);
    EXPECT_EQ(bind(fd_.get(), reinterpret_cast<sockaddr*>(&sll), sizeof(sll)), 0) << strerror(errno);
  }
  // Every incoming UDP/kVxlanPort frame received so far.
  std::vector<VxlanFrame> Drain() {
    std::vector<VxlanFrame> out;
    std::vector<uint8_t> buf(65536);
    while (true) {
      sockaddr_ll from = {};
      socklen_t len = sizeof(from);
      ssize_t n = recvfrom(fd_.get(), buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) break;
      if (from.sll_pkttype == PACKET_OUTGOING) continue;
      if (n < 14 + 20 + 8 + 8) continue;
      if (testing::Get16(buf, 12) != testing::kEthPIp) continue;
      const size_t ip = 14, ihl = (buf[ip] & 0xf) * 4;
      if (buf[ip + 9] != testing::kIpprotoUdp) continue;
      const size_t udp = ip + ihl;
      if (testing::Get16(buf, udp + 2) != kVxlanPort) continue;
      VxlanFrame f;
      std::memcpy(&f.outer_src_be, &buf[ip + 12], 4);
      f.udp_check = testing::Get16(buf, udp + 6);
      f.vxlan_flags = buf[udp + 8];
      f.vni = static_cast<uint32_t>(buf[udp + 12] << 16 | buf[udp + 13] << 8 | buf[udp + 14]);
      out.push_back(f);
    }
    return out;
  }

 private:
  UniqueFd fd_;
};

TEST_F(OverlayNetnsTest, TunnelPodToRemotePodBothWaysWithZeroUdpChecksum) {
  Build(Mode::kTunnel);
  ASSERT_FALSE(HasFatalFailure());
  UnderlayCapture capture(*b_.ns, b_.uplink_ifindex);
  ASSERT_TRUE(Ping(*a_.pod, b_.pod_ip, 3)) << "pod A -> pod B through VXLAN";

  // Exactly one encapsulation per echo request, counted once (from_container), not again by
  // to_overlay on the same frame; the echo replies the other way.
  EXPECT_EQ(a_.Counters(b_.id).tx_packets, 3u);
  EXPECT_EQ(b_.Counters(a_.id).rx_packets, 3u);
  EXPECT_EQ(b_.Counters(a_.id).tx_packets, 3u);
  EXPECT_EQ(a_.Counters(b_.id).rx_packets, 3u);
  EXPECT_EQ(b_.maps().ep_counters.Read(1)->rx_packets, 3u) << "delivered by from_overlay";

  std::vector<VxlanFrame> frames = capture.Drain();
  ASSERT_EQ(frames.size(), 3u);
  for (const VxlanFrame& f : frames) {
    EXPECT_EQ(f.outer_src_be, net::ToBe32(Ip(a_.underlay)));
    EXPECT_EQ(f.udp_check, 0u) << "outer UDP checksum must be zero (BPF_F_ZERO_CSUM_TX)";
    EXPECT_EQ(f.vni, kVni);
    EXPECT_EQ(f.vxlan_flags, 0x08) << "VXLAN I flag (RFC 7348)";
  }
  ExpectNoDrops(a_);
  ExpectNoDrops(b_);
}

TEST_F(OverlayNetnsTest, TunnelNodeToRemotePodIsKeyedByToOverlay) {
  Build(Mode::kTunnel);
  ASSERT_FALSE(HasFatalFailure());
  UnderlayCapture capture(*b_.ns, b_.uplink_ifindex);
  // The host stack of A routes 10.244.2.0/24 onto sarena_vxlan (source: A's gateway address);
  // to_overlay gives the frames their key. B's pod answers through from_container -> VXLAN,
  // and A's from_overlay hands the reply (to a non-endpoint address) to A's host stack.
  ASSERT_TRUE(Ping(*a_.ns, b_.pod_ip, 2));
  EXPECT_EQ(a_.Counters(b_.id).tx_packets, 2u) << "to_overlay counts host-stack frames";
  EXPECT_EQ(a_.Counters(b_.id).rx_packets, 2u);
  std::vector<VxlanFrame> frames = capture.Drain();
  ASSERT_EQ(frames.size(), 2u);
  for (const VxlanFrame& f : frames) EXPECT_EQ(f.udp_check, 0u);
  // Pod A -> B's node address (not an endpoint): from_overlay in B passes it to B's host stack
  // as PACKET_HOST; B's reply goes back through B's to_overlay.
  ASSERT_TRUE(Ping(*a_.pod, b_.gateway, 2));
  ExpectNoDrops(a_);
  ExpectNoDrops(b_);
}

TEST_F(OverlayNetnsTest, HostFlowReplyFromTheOverlayGoesThroughTheHostStack) {
  Build(Mode::kTunnel);
  ASSERT_FALSE(HasFatalFailure());
  // B's pod "opened" an ICMP flow through B's host stack (key: its address, port 0, ICMP): a
  // frame from the overlay to that (address, port) is such a flow's reply, for conntrack.
  datapath::FlowKey key = {};
  key.addr_be = net::ToBe32(Ip(b_.pod_ip));
  key.proto = testing::kIpprotoIcmp;
  ASSERT_TRUE(b_.maps().host_flows.Update(key, 1).ok());
  ASSERT_TRUE(Ping(*a_.pod, b_.pod_ip, 2)) << "delivered by B's host stack (endpoint route)";
  EXPECT_EQ(b_.Counters(a_.id).rx_packets, 2u) << "accepted by from_overlay";
  EXPECT_EQ(b_.maps().ep_counters.Read(1)->rx_packets, 0u) << "not by local_delivery";
  ExpectNoDrops(b_);
}

// Bulk TCP: the pod's veth hands the datapath GSO packets of up to 64 KiB. Every byte must
// take the BPF path (counted on the node counter), none may fall back to the host stack (in
// native mode a FIB MTU check on the GSO packet's length would do that).
void BulkTcp(const Node& from, const Node& to) {
  constexpr int kBytes = 4 << 20;
  RunOk(to.pod->Exec("sh -c 'socat -u TCP-LISTEN:5001,reuseaddr OPEN:/dev/null >/dev/null 2>&1 & "
                     "sleep 0.3'"));
  RunOk(from.pod->Exec(absl::StrCat("sh -c 'head -c ", kBytes, " /dev/zero | socat -u - TCP:",
                                    to.pod_ip, ":5001'")));
  // socat returns once the last bytes are in its socket's send buffer, not when they have
  // crossed: wait (bounded) for the counters to see all of them. Bytes that took the host
  // stack instead are never counted, so the wait then ends in the failure below.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while ((from.Counters(to.id).tx_bytes < uint64_t{kBytes} ||
          to.Counters(from.id).rx_bytes < uint64_t{kBytes}) &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_GE(from.Counters(to.id).tx_bytes, uint64_t{kBytes});
  EXPECT_GE(to.Counters(from.id).rx_bytes, uint64_t{kBytes});
}

TEST_F(OverlayNetnsTest, TunnelBulkTcpTakesTheBpfPath) {
  Build(Mode::kTunnel);
  ASSERT_FALSE(HasFatalFailure());
  BulkTcp(a_, b_);
  ExpectNoDrops(a_);
  ExpectNoDrops(b_);
}

TEST_F(OverlayNetnsTest, NativeBulkTcpTakesTheBpfPath) {
  Build(Mode::kNative);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(Ping(*a_.pod, b_.pod_ip, 1));  // resolve the neighbour first
  BulkTcp(a_, b_);
  ExpectNoDrops(a_);
  ExpectNoDrops(b_);
}

TEST_F(OverlayNetnsTest, PodToATunnelPeersNodeAddressCrossesTheTunnel) {
  Build(Mode::kTunnel);
  ASSERT_FALSE(HasFatalFailure());
  // As sarenad's Overlay writes it for tunnel peers: the peer's underlay /32 with
  // SARENA_TUN_F_NODE (no kernel route). Pod A -> B's underlay address is tunnelled; B's
  // reply (host stack, source = its underlay, routed via sarena_vxlan) is accepted by A's
  // from_overlay as the peer's own address.
  for (auto [self, peer] : {std::pair{&a_, &b_}, std::pair{&b_, &a_}}) {
    datapath::Tunnel t = MakeTunnel(Ip(peer->underlay), peer->id, SARENA_MODE_TUNNEL);
    t.flags = SARENA_TUN_F_NODE;
    ASSERT_TRUE(self->maps().tunnels.Put(Cidr(peer->underlay + "/32"), t).ok());
  }
  UnderlayCapture capture(*b_.ns, b_.uplink_ifindex);
  ASSERT_TRUE(Ping(*a_.pod, b_.underlay, 2));
  EXPECT_EQ(a_.Counters(b_.id).tx_packets, 2u);
  EXPECT_EQ(a_.Counters(b_.id).rx_packets, 2u) << "the replies came back through the tunnel";
  EXPECT_EQ(capture.Drain().size(), 2u);
  ExpectNoDrops(a_);
  ExpectNoDrops(b_);
}

TEST_F(OverlayNetnsTest, VxlanFromANonMemberIsDroppedUnknownPeer) {
  Build(Mode::kTunnel);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(*b_.maps().peers.Remove(Ip(a_.underlay)));
  EXPECT_FALSE(Ping(*a_.pod, b_.pod_ip));
  EXPECT_GE(b_.Drops(SARENA_DROP_UNKNOWN_PEER), 1u);
  EXPECT_EQ(b_.Counters(a_.id).rx_packets, 0u);
  EXPECT_EQ(b_.maps().ep_counters.Read(1)->rx_packets, 0u);
}

TEST_F(OverlayNetnsTest, VxlanWithAnotherVniIsDroppedWrongVni) {
  Build(Mode::kTunnel);
  ASSERT_FALSE(HasFatalFailure());
  WriteOverlay(a_, kVni + 1, SARENA_OVL_F_TUNNEL);
  UnderlayCapture capture(*b_.ns, b_.uplink_ifindex);
  EXPECT_FALSE(Ping(*a_.pod, b_.pod_ip));
  EXPECT_GE(b_.Drops(SARENA_DROP_WRONG_VNI), 1u);
  EXPECT_EQ(b_.Counters(a_.id).rx_packets, 0u);
  std::vector<VxlanFrame> frames = capture.Drain();
  ASSERT_GE(frames.size(), 1u);
  EXPECT_EQ(frames[0].vni, kVni + 1) << "the tunnel key's id is the VNI on the wire";
}

TEST_F(OverlayNetnsTest, InnerSourceOutsideThePeersCidrsIsDroppedSourceMismatch) {
  Build(Mode::kTunnel);
  ASSERT_FALSE(HasFatalFailure());
  // B now believes 10.244.1.0/24 belongs to node 7, not to the sender (node 1).
  ASSERT_TRUE(b_.maps().tunnels.Put(Cidr(a_.cidr), MakeTunnel(Ip("10.199.0.7"), 7, SARENA_MODE_TUNNEL)).ok());
  EXPECT_FALSE(Ping(*a_.pod, b_.pod_ip));
  EXPECT_GE(b_.Drops(SARENA_DROP_OVERLAY_SOURCE_MISMATCH), 1u);
  EXPECT_EQ(b_.maps().ep_counters.Read(1)->rx_packets, 0u);
  // The peer's own underlay address is always a valid inner source (node A's host stack,
  // sourcing from ul0): B accepts it; the reply goes back on the underlay, unencapsulated.
  const uint64_t before = b_.Drops(SARENA_DROP_OVERLAY_SOURCE_MISMATCH);
  EXPECT_TRUE(Ping(*a_.ns, b_.pod_ip, 1, a_.underlay));
  EXPECT_EQ(b_.Drops(SARENA_DROP_OVERLAY_SOURCE_MISMATCH), before);
  EXPECT_EQ(b_.Counters(a_.id).rx_packets, 1u);
}

TEST_F(OverlayNetnsTest, HostStackTrafficForNoKnownCidrIsDroppedNoTunnelEndpoint) {
  Build(Mode::kTunnel);
  ASSERT_FALSE(HasFatalFailure());
  RunOk(a_.ns->Exec(absl::StrCat("ip route add 10.244.3.0/24 dev sarena_vxlan scope link src ",
                                 a_.gateway)));
  EXPECT_FALSE(Ping(*a_.ns, "10.244.3.5"));
  EXPECT_GE(a_.Drops(SARENA_DROP_NO_TUNNEL_ENDPOINT), 1u);
}

TEST_F(OverlayNetnsTest, NativePodToRemotePodBothWaysOnTheUnderlay) {
  Build(Mode::kNative);
  ASSERT_FALSE(HasFatalFailure());
  std::string neigh = RunOk(a_.ns->Exec(absl::StrCat("ip neigh show ", b_.underlay, " dev ul0")));
  ASSERT_EQ(absl::StripAsciiWhitespace(neigh), "") << "no neighbour yet: first packet is NO_NEIGH";
  UnderlayCapture capture(*b_.ns, b_.uplink_ifindex);
  // First request: bpf_fib_lookup NO_NEIGH -> bpf_redirect_neigh (the kernel resolves B);
  // later ones: SUCCESS -> MACs from the FIB + bpf_redirect. B's from_netdev delivers them.
  ASSERT_TRUE(Ping(*a_.pod, b_.pod_ip, 3)) << "pod A -> pod B natively routed";
  neigh = RunOk(a_.ns->Exec(absl::StrCat("ip neigh show ", b_.underlay, " dev ul0")));
  EXPECT_THAT(neigh, ::testing::HasSubstr(net::FormatMac(MacOf(*b_.ns, "ul0"))));
  EXPECT_EQ(a_.Counters(b_.id).tx_packets, 3u);
  EXPECT_EQ(b_.Counters(a_.id).rx_packets, 3u);
  EXPECT_EQ(b_.Counters(a_.id).tx_packets, 3u);
  EXPECT_EQ(a_.Counters(b_.id).rx_packets, 3u);
  EXPECT_EQ(b_.maps().ep_counters.Read(1)->rx_packets, 3u) << "delivered by from_netdev";
  EXPECT_TRUE(capture.Drain().empty()) << "native mode sends no VXLAN";
  // The nodes themselves still reach remote pods through their host stacks.
  ASSERT_TRUE(Ping(*a_.ns, b_.pod_ip, 1));
  ExpectNoDrops(a_);
  ExpectNoDrops(b_);
}

}  // namespace
}  // namespace sarena::bpf
