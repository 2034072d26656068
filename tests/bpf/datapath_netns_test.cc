// The programs on the real kernel path (not PROG_TEST_RUN): a node namespace with the
// sarena_host/sarena_net pair and two pod namespaces, from_container on each pod's host-side
// veth (TCX ingress), from_host on sarena_host (TCX egress), an endpoint route per pod (as
// sarenad installs them), strict rp_filter everywhere.
// Checks gateway ARP, pod -> pod (bpf_redirect_peer), pod -> node and node -> pod, and the
// sarena_host fallback when an endpoint route is missing.
#include <net/if.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/bpf/link.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/datapath/abi.h"
#include "tests/bpf/bpf_test_env.h"
#include "tests/lib/test_util.h"

namespace sarena::bpf {
namespace {

using ::sarena::datapath::Endpoint;
using ::sarena::datapath::Config;
using ::sarena::datapath::EndpointCounters;
using ::sarena::datapath::MakeEndpointKey;
using ::sarena::datapath::MakeEndpoint;
using ::sarena::datapath::DropReasonName;
using ::sarena::datapath::Program;
using ::sarena::datapath::Objects;

using ::sarena::testing::RunOk;
using ::sarena::testing::ScopedNetns;
using ::testing::HasSubstr;

constexpr char kNodeIp[] = "10.244.1.1";

net::Mac MacOf(const ScopedNetns& ns, const std::string& dev) {
  std::string out = RunOk(ns.Exec(absl::StrCat("cat /sys/class/net/", dev, "/address")));
  auto mac = net::ParseMac(absl::StripAsciiWhitespace(out));
  EXPECT_TRUE(mac.ok()) << out;
  return mac.ok() ? *mac : net::Mac{};
}

struct Pod {
  std::optional<ScopedNetns> ns;
  std::string ip;
  std::string lxc;
  uint32_t id = 0;
};

class DatapathNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(::sarena::testing::IsRoot()) << "bpf tier needs root";
    node_.emplace("sbn");
    const ScopedNetns& n = *node_;
    // Strict reverse-path filtering in the node, as a distro or systemd-sysctl sets it.
    RunOk(n.Exec("sysctl -qw net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.default.rp_filter=1"));
    RunOk(n.Exec("ip link add sarena_host type veth peer name sarena_net"));
    // NOARP on sarena_host: the kernel needs no neighbour entry to send toward the pod CIDR
    // (from_host rewrites both MACs anyway). With ARP on, the kernel would ARP for every pod IP
    // on sarena_host and nobody would answer.
    RunOk(n.Exec("ip link set sarena_host arp off"));
    RunOk(n.Exec("ip link set sarena_host up"));
    RunOk(n.Exec("ip link set sarena_net up"));
    RunOk(n.Exec(absl::StrCat("ip addr add ", kNodeIp, "/32 dev sarena_host")));
    // The pod CIDR on-link through sarena_host. ("via <node IP>" is refused by the kernel,
    // "Nexthop has invalid gateway", since that gateway is a local address.)
    RunOk(n.Exec(absl::StrCat("ip route add 10.244.1.0/24 dev sarena_host src ", kNodeIp)));
    pods_[0].ip = "10.244.1.10";
    pods_[0].lxc = "lxca";
    pods_[0].id = 1;
    pods_[1].ip = "10.244.1.11";
    pods_[1].lxc = "lxcb";
    pods_[1].id = 2;
    for (Pod& p : pods_) {
      p.ns.emplace("sbp");
      RunOk(n.Exec(absl::StrCat("ip link add ", p.lxc, " type veth peer name eth0 netns ",
                                p.ns->name())));
      RunOk(n.Exec(absl::StrCat("ip link set ", p.lxc, " up")));
      RunOk(n.Exec(absl::StrCat("ip route add ", p.ip, "/32 dev ", p.lxc, " scope link src ",
                                kNodeIp)));
      RunOk(p.ns->Exec("ip link set eth0 up"));
      RunOk(p.ns->Exec(absl::StrCat("ip addr add ", p.ip, "/32 dev eth0")));
      RunOk(p.ns->Exec(absl::StrCat("ip route add ", kNodeIp, " dev eth0 scope link")));
      RunOk(p.ns->Exec(absl::StrCat("ip route add default via ", kNodeIp, " dev eth0")));
    }

    enter_.emplace(n.path());
    auto objs = Objects::Load({.pin_root = bpffs_.path()});
    ASSERT_TRUE(objs.ok()) << objs.status();
    objs_.emplace(std::move(*objs));

    Config cfg = {};
    cfg.node_ip_be = net::ToBe32(boost::asio::ip::make_address_v4(kNodeIp));
    cfg.host_ifindex = if_nametoindex("sarena_host");
    cfg.net_ifindex = if_nametoindex("sarena_net");
    net::Mac host_mac = MacOf(n, "sarena_host"), net_mac = MacOf(n, "sarena_net");
    std::memcpy(cfg.host_mac, host_mac.data(), 6);
    std::memcpy(cfg.net_mac, net_mac.data(), 6);
    cfg.flags = SARENA_CFG_F_REDIRECT_PEER;
    cfg.pod_cidr_be = net::ToBe32(boost::asio::ip::make_address_v4("10.244.1.0"));
    cfg.pod_cidr_len = 24;
    ASSERT_TRUE(objs_->maps().config.Write(cfg).ok());

    for (const Pod& p : pods_) {
      uint32_t ifindex = if_nametoindex(p.lxc.c_str());
      ASSERT_GT(ifindex, 0u);
      Endpoint ep = MakeEndpoint(ifindex, MacOf(*p.ns, "eth0"), MacOf(n, p.lxc), p.id);
      ASSERT_TRUE(objs_->maps()
                      .endpoints.Update(MakeEndpointKey(boost::asio::ip::make_address_v4(p.ip)), ep)
                      .ok());
      auto link = Link::AttachTcx(objs_->prog_fd(Program::kFromContainer),
                                  static_cast<int>(ifindex), Direction::kIngress);
      ASSERT_TRUE(link.ok()) << link.status();
      links_.push_back(*std::move(link));
    }
    auto host = Link::AttachTcx(objs_->prog_fd(Program::kFromHost),
                                static_cast<int>(cfg.host_ifindex), Direction::kEgress);
    ASSERT_TRUE(host.ok()) << host.status();
    links_.push_back(*std::move(host));
  }

  void TearDown() override {
    links_.clear();
    objs_.reset();
    enter_.reset();
    for (Pod& p : pods_) p.ns.reset();
    node_.reset();
  }

  EndpointCounters Counters(const Pod& p) { return *objs_->maps().ep_counters.Read(p.id); }

  static int HostIfindex(const Pod& p) {
    return static_cast<int>(if_nametoindex(p.lxc.c_str()));
  }

  // Attaches a tc copy of from_container to the pod's host veth, as ADD does before the move to
  // TCX, and returns what that ingress then runs, in order.
  absl::StatusOr<std::vector<AttachedProgram>> AttachTcCopy(const Pod& p) {
    auto tc = Link::AttachTc(objs_->prog_fd(Program::kFromContainer), HostIfindex(p),
                             Direction::kIngress);
    if (!tc.ok()) return tc.status();
    return QueryAttached(HostIfindex(p), Direction::kIngress);
  }

  ::sarena::testing::ScopedBpffs bpffs_;
  std::optional<ScopedNetns> node_;
  Pod pods_[2];
  std::optional<::sarena::testing::ScopedNetnsEnter> enter_;
  std::optional<Objects> objs_;
  std::vector<Link> links_;
};

TEST_F(DatapathNetnsTest, GatewayArpPodToPodPodToNodeAndNodeToPod) {
  const Pod& a = pods_[0];
  const Pod& b = pods_[1];

  // Pod -> pod: ARP for the gateway answered by BPF, ICMP delivered by redirect_peer.
  RunOk(a.ns->Exec(absl::StrCat("busybox ping -c 3 -W 2 ", b.ip)));
  EXPECT_GE(Counters(a).tx_packets, 3u);
  EXPECT_GE(Counters(b).rx_packets, 3u);
  EXPECT_GE(Counters(b).tx_packets, 3u) << "replies";
  EXPECT_GE(Counters(a).rx_packets, 3u);

  // The pod learnt its host-side veth's MAC for the gateway.
  std::string neigh = RunOk(a.ns->Exec(absl::StrCat("ip neigh show ", kNodeIp, " dev eth0")));
  EXPECT_THAT(neigh, HasSubstr(net::FormatMac(MacOf(*node_, a.lxc)))) << neigh;

  // Pod -> node (the gateway address on sarena_host): from_container passes it, it enters the
  // host on lxca, and strict rp_filter accepts it thanks to the endpoint route.
  RunOk(a.ns->Exec(absl::StrCat("busybox ping -c 2 -W 2 ", kNodeIp)));
  // Node -> pod (the readiness-probe direction), routed by the endpoint route to lxcb.
  RunOk(node_->Exec(absl::StrCat("busybox ping -c 2 -W 2 ", b.ip)));
  // TCP node -> pod with a real server in the pod.
  RunOk(b.ns->Exec("sh -c 'socat -T 5 TCP-LISTEN:8080,reuseaddr SYSTEM:\"echo hello\" "
                   ">/dev/null 2>&1 & sleep 0.3'"));
  std::string got = RunOk(node_->Exec(absl::StrCat("socat -T 5 - TCP:", b.ip, ":8080")));
  EXPECT_EQ(absl::StripAsciiWhitespace(got), "hello");

  auto drops = objs_->maps().drops.ReadAll();
  ASSERT_TRUE(drops.ok());
  for (uint32_t r = 1; r < SARENA_DROP_REASON_MAX; ++r)
    EXPECT_EQ((*drops)[r].packets, 0u) << DropReasonName(r);
}

TEST_F(DatapathNetnsTest, WithoutTheEndpointRouteNodeToPodFallsBackToFromHost) {
  const Pod& b = pods_[1];
  RunOk(node_->Exec(absl::StrCat("ip route del ", b.ip, "/32 dev ", b.lxc)));
  const uint64_t before = Counters(b).rx_packets;
  // The request now follows the pod-CIDR route to sarena_host, where from_host redirects it to
  // lxcb; the replies enter on lxcb, which strict rp_filter refuses without the route back.
  auto r = ::sarena::testing::Run(node_->Exec(absl::StrCat("busybox ping -c 1 -W 1 ", b.ip)));
  EXPECT_NE(r.exit_code, 0) << "strict rp_filter must drop the reply entering on lxcb";
  EXPECT_GE(Counters(b).rx_packets, before + 1) << "from_host delivered the request";
  // Loose rp_filter (2) would not help: lxcb has no address, and for such a device the kernel
  // rejects every source not routed back through it (fib_validate_source's last resort). With
  // rp_filter off the fallback works end to end.
  RunOk(node_->Exec(absl::StrCat("sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.",
                                 b.lxc, ".rp_filter=0")));
  RunOk(node_->Exec(absl::StrCat("busybox ping -c 2 -W 2 ", b.ip)));
}

TEST_F(DatapathNetnsTest, SpoofedSourceNeverLeavesThePod) {
  const Pod& a = pods_[0];
  const Pod& b = pods_[1];
  // Resolve the gateway with A's own address first (the ARP responder only answers a pod for
  // its own address, so a spoofed ARP would not even get the gateway MAC).
  RunOk(a.ns->Exec(absl::StrCat("busybox ping -c 1 -W 2 ", kNodeIp)));
  // Pod A adds B's address and pings from it: from_container drops it.
  RunOk(a.ns->Exec(absl::StrCat("ip addr add ", b.ip, "/32 dev eth0")));
  auto r = ::sarena::testing::Run(
      a.ns->Exec(absl::StrCat("busybox ping -c 1 -W 1 -I ", b.ip, " ", kNodeIp)));
  EXPECT_NE(r.exit_code, 0);
  auto drops = objs_->maps().drops.ReadAll();
  ASSERT_TRUE(drops.ok());
  EXPECT_GE((*drops)[SARENA_DROP_SPOOFED_SOURCE].packets, 1u);
}

// ADD guards a new pod with a tc copy of from_container (cls_bpf on clsact) until the TCX link
// replaces it after the reply (datapath/endpoint_jobs.h). Through the tc hook alone the program
// must do everything it does through TCX: deliver pod -> pod, pass pod -> node, drop a spoofed
// source.
TEST_F(DatapathNetnsTest, TheTcCopyAloneGuardsAndDeliversLikeTheTcxLink) {
  const Pod& a = pods_[0];
  const Pod& b = pods_[1];
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(links_[i].Detach().ok());
    auto attached = AttachTcCopy(pods_[i]);
    ASSERT_TRUE(attached.ok()) << attached.status();
    ASSERT_EQ(attached->size(), 1u);
    EXPECT_EQ((*attached)[0].mode, AttachMode::kTc);
  }
  RunOk(a.ns->Exec(absl::StrCat("busybox ping -c 3 -W 2 ", b.ip)));
  EXPECT_GE(Counters(b).rx_packets, 3u);
  EXPECT_GE(Counters(a).rx_packets, 3u) << "replies";
  RunOk(a.ns->Exec(absl::StrCat("busybox ping -c 2 -W 2 ", kNodeIp)));
  RunOk(a.ns->Exec(absl::StrCat("ip addr add ", b.ip, "/32 dev eth0")));
  auto r = ::sarena::testing::Run(
      a.ns->Exec(absl::StrCat("busybox ping -c 1 -W 1 -I ", b.ip, " ", kNodeIp)));
  EXPECT_NE(r.exit_code, 0) << "a spoofed source left through the tc copy";
  auto drops = objs_->maps().drops.ReadAll();
  ASSERT_TRUE(drops.ok());
  EXPECT_GE((*drops)[SARENA_DROP_SPOOFED_SOURCE].packets, 1u);
}

// While the TCX link and the tc copy are both attached (the move), the TCX program runs first
// and its verdict ends the ingress hook: each packet is counted and delivered once.
TEST_F(DatapathNetnsTest, WithTheTcCopyAndTheTcxLinkBothAttachedEachPacketIsHandledOnce) {
  const Pod& a = pods_[0];
  const Pod& b = pods_[1];
  RunOk(a.ns->Exec(absl::StrCat("busybox ping -c 1 -W 2 ", b.ip)));  // ARP done
  for (const Pod& p : pods_) {
    auto attached = AttachTcCopy(p);
    ASSERT_TRUE(attached.ok()) << attached.status();
    ASSERT_EQ(attached->size(), 2u) << "the TCX link and the tc copy";
  }
  const uint64_t rx0 = Counters(b).rx_packets;
  RunOk(a.ns->Exec(absl::StrCat("busybox ping -c 5 -i 0.05 -W 2 ", b.ip)));
  EXPECT_EQ(Counters(b).rx_packets - rx0, 5u) << "five echo requests, each delivered once";
  // Removing the clsact qdisc (the end of the move) leaves the TCX link alone.
  for (const Pod& p : pods_) {
    const int ifindex = HostIfindex(p);
    ASSERT_TRUE(DeleteClsact(ifindex).ok());
    ASSERT_TRUE(DeleteClsact(ifindex).ok()) << "idempotent";
    auto attached = QueryAttached(ifindex, Direction::kIngress);
    ASSERT_TRUE(attached.ok());
    ASSERT_EQ(attached->size(), 1u);
    EXPECT_EQ((*attached)[0].mode, AttachMode::kTcx);
  }
  RunOk(a.ns->Exec(absl::StrCat("busybox ping -c 2 -W 2 ", b.ip)));
}

}  // namespace
}  // namespace sarena::bpf
