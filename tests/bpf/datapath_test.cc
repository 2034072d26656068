// The real from_container / from_host programs, loaded by sarena::datapath::Objects into a private
// bpffs and run on crafted frames with BPF_PROG_TEST_RUN.
//
// What BPF_PROG_TEST_RUN lets us observe (net/bpf/test_run.c, Linux 6.18): the verdict, the
// rewritten frame and the maps. bpf_redirect*/bpf_redirect_peer only record their target, so
// "where to" is checked through the MACs the program wrote (each endpoint and the host path have
// distinct MACs). skb->ingress_ifindex is set from ctx_in.ingress_ifindex (any value), and
// skb->ifindex from ctx_in.ifindex, which must name a device of this netns — loopback (1) here;
// endpoint ifindexes in the map are arbitrary numbers since nothing is transmitted.
#include <arpa/inet.h>
#include <linux/pkt_cls.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/bpf/test_run.h"
#include "libsarena/datapath/abi.h"
#include "tests/bpf/bpf_test_env.h"
#include "tests/lib/test_util.h"

namespace sarena::bpf {
namespace {

using ::sarena::datapath::Config;
using ::sarena::datapath::EndpointCounters;
using ::sarena::datapath::FlowKey;
using ::sarena::datapath::MakeEndpointKey;
using ::sarena::datapath::MakeEndpoint;
using ::sarena::datapath::FormatFlowKey;
using ::sarena::datapath::DropReasonName;
using ::sarena::datapath::Program;
using ::sarena::datapath::Maps;
using ::sarena::datapath::Objects;

using ::sarena::testing::ArpSpec;
using ::sarena::testing::BuildArp;
using ::sarena::testing::BuildIpv4;
using ::sarena::testing::Get16;
using ::sarena::testing::InternetChecksum;
using ::sarena::testing::Ipv4Spec;
using ::sarena::testing::MacAt;
using ::sarena::testing::Put16;

constexpr uint32_t kLoopback = 1;

struct TestEndpoint {
  std::string ip;
  uint32_t ifindex;
  net::Mac pod_mac;
  net::Mac host_mac;
  uint32_t id;
};

const TestEndpoint kA{"10.244.1.10", 1010, {0x0a, 0, 0, 0, 0, 0x10}, {0x02, 0, 0, 0, 0xa0, 0x10}, 10};
const TestEndpoint kB{"10.244.1.11", 1011, {0x0a, 0, 0, 0, 0, 0x11}, {0x02, 0, 0, 0, 0xa0, 0x11}, 11};
const TestEndpoint kC{"10.244.1.12", 1012, {0x0a, 0, 0, 0, 0, 0x12}, {0x02, 0, 0, 0, 0xa0, 0x12}, 12};
const net::Mac kHostMac = {0x02, 0, 0, 0, 0x05, 0x00};
const net::Mac kNetMac = {0x02, 0, 0, 0, 0x05, 0x01};
constexpr char kNodeIp[] = "10.244.1.1";

net::Ipv4 Ip(const std::string& s) { return boost::asio::ip::make_address_v4(s); }

// How the fixture writes the endpoints: every test runs on both lookup paths of the programs
// (bpf/lib/common.h sarena_lookup_ipv4).
enum class EndpointWrite {
  kHashOnly,  // raw endpoint-hash writes: the slots stay empty, every lookup falls back to the hash
  kPut,       // EndpointMap::Put, as sarenad writes them: hash + slot (the fast path)
};

class DatapathTest : public ::testing::TestWithParam<EndpointWrite> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(::sarena::testing::IsRoot()) << "the bpf tier needs root (CI runs as root)";
    auto objs = Objects::Load({.pin_root = bpffs_.path()});
    ASSERT_TRUE(objs.ok()) << objs.status();
    objs_.emplace(std::move(*objs));
    WriteConfig();
    for (const auto* ep : {&kA, &kB, &kC}) {
      const auto value = MakeEndpoint(ep->ifindex, ep->pod_mac, ep->host_mac, ep->id);
      if (GetParam() == EndpointWrite::kPut) {
        ASSERT_TRUE(maps().endpoints.Put(Ip(ep->ip), value).ok());
      } else {
        ASSERT_TRUE(maps().endpoints.Update(MakeEndpointKey(Ip(ep->ip)), value).ok());
      }
    }
  }

  // The slot of `ep` (SARENA_MAP_ENDPOINT_SLOTS).
  datapath::EndpointSlot Slot(const TestEndpoint& ep) {
    auto slot = maps().endpoints.slots()->Lookup(datapath::EndpointSlotIndex(Ip(ep.ip)));
    EXPECT_TRUE(slot.ok()) << slot.status();
    return slot.ok() ? *slot : datapath::EndpointSlot{};
  }
  // Whether from_container has marked `ep` as a host-flow opener (SARENA_MAP_FLOW_OPENERS).
  bool IsFlowOpener(const TestEndpoint& ep) {
    auto v = maps().flow_openers->Lookup(ep.id);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() && *v != 0;
  }

  void WriteConfig(uint32_t net_ifindex = 501) {
    Config cfg = {};
    cfg.node_ip_be = net::ToBe32(Ip(kNodeIp));
    cfg.host_ifindex = 500;
    cfg.net_ifindex = net_ifindex;
    std::memcpy(cfg.host_mac, kHostMac.data(), 6);
    std::memcpy(cfg.net_mac, kNetMac.data(), 6);
    cfg.flags = SARENA_CFG_F_REDIRECT_PEER;
    cfg.pod_cidr_be = net::ToBe32(Ip("10.244.1.0"));
    cfg.pod_cidr_len = 24;
    ASSERT_TRUE(maps().config.Write(cfg).ok());
  }

  const Maps& maps() { return objs_->maps(); }

  TestRunResult Run(Program prog, const std::vector<uint8_t>& pkt, uint32_t ingress_ifindex) {
    auto r = TestRun(objs_->prog_fd(prog), pkt,
                     TestRunOptions{.ifindex = kLoopback, .ingress_ifindex = ingress_ifindex});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : TestRunResult{};
  }
  TestRunResult FromContainer(const std::vector<uint8_t>& pkt, const TestEndpoint& from) {
    return Run(Program::kFromContainer, pkt, from.ifindex);
  }
  TestRunResult FromHost(const std::vector<uint8_t>& pkt) {
    return Run(Program::kFromHost, pkt, 500);
  }

  uint64_t Drops(enum sarena_drop_reason reason) {
    auto d = maps().drops.ReadAll();
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? (*d)[reason].packets : 0;
  }
  EndpointCounters Counters(const TestEndpoint& ep) {
    auto c = maps().ep_counters.Read(ep.id);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : EndpointCounters{};
  }

  // Checks a frame delivered to `ep`: MACs, TTL - 1, header checksum recomputed from scratch,
  // and every other byte unchanged.
  void ExpectDelivered(const std::vector<uint8_t>& in, const TestRunResult& r,
                       const TestEndpoint& ep) {
    ASSERT_EQ(r.retval, static_cast<uint32_t>(TC_ACT_REDIRECT));
    ASSERT_EQ(r.data_out.size(), in.size());
    EXPECT_EQ(MacAt(r.data_out, 0), ep.pod_mac);
    EXPECT_EQ(MacAt(r.data_out, 6), ep.host_mac);
    const size_t ip = testing::kEthHlen;
    const size_t hlen = (in[ip] & 0xf) * 4;
    EXPECT_EQ(r.data_out[ip + 8], in[ip + 8] - 1) << "TTL";
    std::vector<uint8_t> hdr(r.data_out.begin() + ip, r.data_out.begin() + ip + hlen);
    uint16_t got = Get16(hdr, 10);
    hdr[10] = hdr[11] = 0;
    EXPECT_EQ(got, InternetChecksum(hdr.data(), hdr.size())) << "IP header checksum";
    for (size_t i = 12; i < in.size(); ++i) {
      if (i == ip + 8 || i == ip + 10 || i == ip + 11) continue;
      ASSERT_EQ(r.data_out[i], in[i]) << "byte " << i << " changed";
    }
  }

  // Checks a frame handed to the host stack: passed (TC_ACT_OK) and untouched; the kernel
  // routes it (endpoint routes make strict rp_filter accept it on the lxc device).
  void ExpectToHost(const std::vector<uint8_t>& in, const TestRunResult& r) {
    ExpectPassedUntouched(in, r);
  }

  FlowKey Flow(const std::string& ip, uint16_t port, uint8_t proto) {
    FlowKey key = {};
    key.addr_be = net::ToBe32(Ip(ip));
    key.port_be = htons(port);
    key.proto = proto;
    return key;
  }
  bool HasFlow(const FlowKey& key) { return maps().host_flows.Lookup(key).ok(); }

  void ExpectPassedUntouched(const std::vector<uint8_t>& in, const TestRunResult& r) {
    EXPECT_EQ(r.retval, static_cast<uint32_t>(TC_ACT_OK));
    EXPECT_EQ(r.data_out, in);
  }

  ::sarena::testing::ScopedBpffs bpffs_;
  std::optional<Objects> objs_;
};

Ipv4Spec AtoB() { return Ipv4Spec{.saddr = kA.ip, .daddr = kB.ip}; }

TEST_P(DatapathTest, DeliversPodToPodAndCounts) {
  auto pkt = BuildIpv4(AtoB());
  auto r = FromContainer(pkt, kA);
  ExpectDelivered(pkt, r, kB);
  EndpointCounters a = Counters(kA), b = Counters(kB);
  EXPECT_EQ(a.tx_packets, 1u);
  EXPECT_EQ(a.tx_bytes, pkt.size());
  EXPECT_EQ(a.rx_packets, 0u);
  EXPECT_EQ(b.rx_packets, 1u);
  EXPECT_EQ(b.rx_bytes, pkt.size());
  EXPECT_EQ(b.tx_packets, 0u);
}

TEST_P(DatapathTest, PerEndpointCountersAccumulate) {
  auto pkt = BuildIpv4(AtoB());
  constexpr int kN = 25;
  for (int i = 0; i < kN; ++i) ASSERT_EQ(FromContainer(pkt, kA).retval, uint32_t{TC_ACT_REDIRECT});
  auto udp = BuildIpv4({.saddr = kC.ip, .daddr = kB.ip, .proto = testing::kIpprotoUdp, .payload = 100});
  for (int i = 0; i < kN; ++i) ASSERT_EQ(FromContainer(udp, kC).retval, uint32_t{TC_ACT_REDIRECT});
  EXPECT_EQ(Counters(kA).tx_packets, uint64_t{kN});
  EXPECT_EQ(Counters(kC).tx_bytes, uint64_t{kN} * udp.size());
  EXPECT_EQ(Counters(kB).rx_packets, uint64_t{2 * kN});
  EXPECT_EQ(Counters(kB).rx_bytes, uint64_t{kN} * (pkt.size() + udp.size()));
}

TEST_P(DatapathTest, ChecksumStaysCorrectAcrossRandomHeaders) {
  std::mt19937 rng(42);
  const TestEndpoint* eps[] = {&kA, &kB, &kC};
  for (int i = 0; i < 300; ++i) {
    const TestEndpoint& src = *eps[rng() % 3];
    const TestEndpoint& dst = *eps[rng() % 3];
    Ipv4Spec s{.saddr = src.ip, .daddr = dst.ip};
    s.ttl = static_cast<uint8_t>(2 + rng() % 254);
    s.tos = static_cast<uint8_t>(rng());
    s.id = static_cast<uint16_t>(rng());
    s.proto = (rng() & 1) ? testing::kIpprotoTcp : testing::kIpprotoIcmp;
    s.ihl = 5 + static_cast<int>(rng() % 11);
    s.payload = rng() % 64;
    auto pkt = BuildIpv4(s);
    SCOPED_TRACE(::testing::Message() << "iteration " << i << " ttl " << int{s.ttl});
    ExpectDelivered(pkt, FromContainer(pkt, src), dst);
    ExpectDelivered(pkt, FromHost(pkt), dst);
  }
}

TEST_P(DatapathTest, UnknownDestinationsArePassedToTheHostStack) {
  for (const char* dst : {"8.8.8.8", kNodeIp, "10.96.0.10", "10.244.1.200", "10.244.2.7"}) {
    SCOPED_TRACE(dst);
    auto pkt = BuildIpv4({.saddr = kA.ip, .daddr = dst});
    ExpectToHost(pkt, FromContainer(pkt, kA));
  }
  EXPECT_EQ(Counters(kA).tx_packets, 5u);
  EXPECT_EQ(Counters(kB).rx_packets, 0u);
}

TEST_P(DatapathTest, WithoutConfigUnknownDestinationsPassButEndpointsAreStillDelivered) {
  WriteConfig(/*net_ifindex=*/0);
  auto to_host = BuildIpv4({.saddr = kA.ip, .daddr = "8.8.8.8"});
  ExpectPassedUntouched(to_host, FromContainer(to_host, kA));
  auto to_b = BuildIpv4(AtoB());
  ExpectDelivered(to_b, FromContainer(to_b, kA), kB);
  auto arp = BuildArp({.eth_src = kA.pod_mac, .sha = kA.pod_mac, .spa = kA.ip, .tpa = kNodeIp});
  ExpectPassedUntouched(arp, FromContainer(arp, kA));
  // from_host has no pod CIDR to check without config: passes.
  auto to_unknown_pod = BuildIpv4({.saddr = "192.168.0.1", .daddr = "10.244.1.200"});
  ExpectPassedUntouched(to_unknown_pod, FromHost(to_unknown_pod));
  for (uint32_t reason = 1; reason < SARENA_DROP_REASON_MAX; ++reason)
    EXPECT_EQ(Drops(static_cast<sarena_drop_reason>(reason)), 0u) << DropReasonName(reason);
}

TEST_P(DatapathTest, FromHostDeliversToEndpointsAndPassesEverythingElse) {
  auto node_to_b = BuildIpv4({.saddr = "192.168.0.1", .daddr = kB.ip, .ttl = 64});
  ExpectDelivered(node_to_b, FromHost(node_to_b), kB);
  EXPECT_EQ(Counters(kB).rx_packets, 1u);

  for (const char* dst : {"8.8.8.8", "10.244.2.7", "10.96.0.10"}) {
    SCOPED_TRACE(dst);
    auto pkt = BuildIpv4({.saddr = kA.ip, .daddr = dst});
    ExpectPassedUntouched(pkt, FromHost(pkt));
  }
  // Nothing passed through from_host for a non-endpoint source: no host flow recorded.
  auto flows = maps().host_flows.Keys();
  ASSERT_TRUE(flows.ok()) << flows.status();
  EXPECT_TRUE(flows->empty());
}

TEST_P(DatapathTest, FromHostDropsPodCidrDestinationsWithoutEndpoint) {
  auto pkt = BuildIpv4({.saddr = "192.168.0.1", .daddr = "10.244.1.200"});
  auto r = FromHost(pkt);
  EXPECT_EQ(r.retval, static_cast<uint32_t>(TC_ACT_SHOT));
  EXPECT_EQ(Drops(SARENA_DROP_NO_ENDPOINT), 1u);
}

TEST_P(DatapathTest, TtlOneAndZeroAreDroppedAndCounted) {
  for (uint8_t ttl : {1, 0}) {
    SCOPED_TRACE(int{ttl});
    Ipv4Spec s = AtoB();
    s.ttl = ttl;
    auto pkt = BuildIpv4(s);
    EXPECT_EQ(FromContainer(pkt, kA).retval, static_cast<uint32_t>(TC_ACT_SHOT));
    EXPECT_EQ(FromHost(pkt).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  }
  EXPECT_EQ(Drops(SARENA_DROP_TTL_EXCEEDED), 4u);
  auto d = maps().drops.ReadAll();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)[SARENA_DROP_TTL_EXCEEDED].bytes, 4 * BuildIpv4(AtoB()).size());
  EXPECT_EQ(Counters(kB).rx_packets, 0u);
  // TTL 2 is still delivered (arrives with 1).
  Ipv4Spec s = AtoB();
  s.ttl = 2;
  auto pkt = BuildIpv4(s);
  ExpectDelivered(pkt, FromContainer(pkt, kA), kB);
}

TEST_P(DatapathTest, TtlOneToTheHostPathIsLeftToTheKernel) {
  // The host path does not route, so it does not decrement: the kernel forwards (and sends the
  // ICMP time-exceeded) if it must.
  auto pkt = BuildIpv4({.saddr = kA.ip, .daddr = "8.8.8.8", .ttl = 1});
  ExpectToHost(pkt, FromContainer(pkt, kA));
}

TEST_P(DatapathTest, TruncatedFramesAreNeverDelivered) {
  // Linux 6.18's BPF_PROG_TEST_RUN itself refuses IPv4-EtherType frames shorter than
  // Ethernet + 20 bytes (EINVAL), so below 34 bytes either the kernel refuses the run or the
  // program must drop; from 34 bytes on the program must drop.
  for (const auto& spec : {AtoB(), Ipv4Spec{.saddr = kA.ip, .daddr = kB.ip, .ihl = 15}}) {
    auto full = BuildIpv4(spec);
    for (size_t len = testing::kEthHlen; len < full.size(); ++len) {
      SCOPED_TRACE(::testing::Message() << "ihl " << spec.ihl << " length " << len);
      std::vector<uint8_t> pkt(full.begin(), full.begin() + len);
      for (Program prog : {Program::kFromContainer, Program::kFromHost}) {
        auto r = TestRun(objs_->prog_fd(prog), pkt,
                         TestRunOptions{.ifindex = kLoopback, .ingress_ifindex = kA.ifindex});
        if (len < testing::kEthHlen + 20 && !r.ok()) {
          EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
          continue;
        }
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(r->retval, static_cast<uint32_t>(TC_ACT_SHOT)) << ToString(prog);
      }
    }
  }
  EXPECT_EQ(Counters(kB).rx_packets, 0u);
  EXPECT_GT(Drops(SARENA_DROP_TRUNCATED), 0u);
  // The kernel itself refuses frames shorter than an Ethernet header.
  std::vector<uint8_t> runt(13, 0);
  EXPECT_FALSE(TestRun(objs_->prog_fd(Program::kFromContainer), runt).ok());
}

TEST_P(DatapathTest, TruncationIsCountedWithTheRightReason) {
  auto full = BuildIpv4(AtoB());
  auto with_options = BuildIpv4({.saddr = kA.ip, .daddr = kB.ip, .ihl = 15});
  uint64_t before = Drops(SARENA_DROP_TRUNCATED);
  std::vector<std::vector<uint8_t>> cases = {
      {full.begin(), full.begin() + 34},                 // header only, tot_len says more
      {full.begin(), full.end() - 1},                    // one byte short of tot_len
      {with_options.begin(), with_options.begin() + 60},  // shorter than IHL*4
  };
  for (const auto& pkt : cases) {
    EXPECT_EQ(FromContainer(pkt, kA).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  }
  EXPECT_EQ(Drops(SARENA_DROP_TRUNCATED), before + cases.size());
  auto d = maps().drops.ReadAll();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)[SARENA_DROP_TRUNCATED].bytes, 34u + (full.size() - 1) + 60u);
  // A TCP packet whose IP total length leaves no room for the ports.
  std::vector<uint8_t> no_ports(full.begin(), full.begin() + testing::kEthHlen + 22);
  Put16(no_ports, testing::kEthHlen + 2, 22);
  no_ports[testing::kEthHlen + 10] = no_ports[testing::kEthHlen + 11] = 0;
  Put16(no_ports, testing::kEthHlen + 10,
        InternetChecksum(&no_ports[testing::kEthHlen], 20));
  EXPECT_EQ(FromContainer(no_ports, kA).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  EXPECT_EQ(Drops(SARENA_DROP_TRUNCATED), before + cases.size() + 1);
  EXPECT_EQ(Drops(SARENA_DROP_BAD_IP_HEADER), 0u);
}

TEST_P(DatapathTest, EthernetPaddingAfterTheDatagramIsAccepted) {
  // Minimum-size Ethernet frames carry padding after a short datagram: tot_len < frame.
  Ipv4Spec s{.saddr = kA.ip, .daddr = kB.ip, .proto = testing::kIpprotoUdp, .payload = 0};
  auto pkt = BuildIpv4(s);  // 14 + 20 + 8 = 42 bytes
  pkt.resize(60, 0);
  ExpectDelivered(pkt, FromContainer(pkt, kA), kB);
}

TEST_P(DatapathTest, BadIpHeadersAreDropped) {
  auto base = BuildIpv4(AtoB());
  const size_t ip = testing::kEthHlen;
  auto fix_csum = [&](std::vector<uint8_t>& p) {
    p[ip + 10] = p[ip + 11] = 0;
    Put16(p, ip + 10, InternetChecksum(&p[ip], 20));
  };
  int n = 0;
  for (int ihl = 0; ihl < 5; ++ihl) {
    auto p = base;
    p[ip] = static_cast<uint8_t>(0x40 | ihl);
    fix_csum(p);
    EXPECT_EQ(FromContainer(p, kA).retval, static_cast<uint32_t>(TC_ACT_SHOT)) << "ihl " << ihl;
    ++n;
  }
  auto v6 = base;  // version 6 inside an IPv4 EtherType
  v6[ip] = 0x65;
  fix_csum(v6);
  EXPECT_EQ(FromContainer(v6, kA).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  ++n;
  auto short_tot = base;  // total length shorter than the header
  Put16(short_tot, ip + 2, 19);
  fix_csum(short_tot);
  EXPECT_EQ(FromHost(short_tot).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  ++n;
  EXPECT_EQ(Drops(SARENA_DROP_BAD_IP_HEADER), uint64_t(n));
  EXPECT_EQ(Counters(kB).rx_packets, 0u);
}

TEST_P(DatapathTest, IpOptionsAreDeliveredWithCorrectChecksum) {
  for (int ihl = 6; ihl <= 15; ++ihl) {
    SCOPED_TRACE(ihl);
    Ipv4Spec s = AtoB();
    s.ihl = ihl;
    auto pkt = BuildIpv4(s);
    ExpectDelivered(pkt, FromContainer(pkt, kA), kB);
    ExpectDelivered(pkt, FromHost(pkt), kB);
  }
}

TEST_P(DatapathTest, PortsAreReadAfterIpOptions) {
  for (int ihl = 5; ihl <= 15; ++ihl) {
    SCOPED_TRACE(ihl);
    // A opens A:40000 -> ClusterIP:80 (SYN): the host flow key has the port after the options.
    Ipv4Spec syn{.saddr = kA.ip, .daddr = "10.96.0.10", .sport = 40000, .dport = 80,
                 .tcp_flags = 0x02, .ihl = ihl};
    auto pkt = BuildIpv4(syn);
    ExpectToHost(pkt, FromContainer(pkt, kA));
    const FlowKey key = Flow(kA.ip, 40000, testing::kIpprotoTcp);
    EXPECT_TRUE(HasFlow(key)) << FormatFlowKey(key);
    // The backend's reply with options (to A:40000) goes through the host, not short-circuited.
    Ipv4Spec reply{.saddr = kB.ip, .daddr = kA.ip, .sport = 8080, .dport = 40000, .ihl = ihl};
    auto rpkt = BuildIpv4(reply);
    ExpectToHost(rpkt, FromContainer(rpkt, kB));
    // Another port of A is delivered directly.
    reply.dport = 40001;
    rpkt = BuildIpv4(reply);
    ExpectDelivered(rpkt, FromContainer(rpkt, kB), kA);
    ASSERT_TRUE(maps().host_flows.Delete(key).ok());
  }
}

TEST_P(DatapathTest, HostFlowRepliesAreNotShortCircuited) {
  // A opens A:40000 -> ClusterIP 10.96.0.10:80; kube-proxy DNATs it to C:8080 in the host.
  auto syn = BuildIpv4({.saddr = kA.ip, .daddr = "10.96.0.10", .sport = 40000, .dport = 80,
                        .tcp_flags = 0x02});
  ExpectToHost(syn, FromContainer(syn, kA));
  // The rest of A's connection keeps the record and is passed too.
  auto data = BuildIpv4({.saddr = kA.ip, .daddr = "10.96.0.10", .sport = 40000, .dport = 80});
  ExpectToHost(data, FromContainer(data, kA));
  // C's reply must go back through the host stack for conntrack to un-DNAT it.
  auto reply = BuildIpv4({.saddr = kC.ip, .daddr = kA.ip, .sport = 8080, .dport = 40000});
  ExpectToHost(reply, FromContainer(reply, kC));
  // UDP to the same port is another flow: delivered directly.
  auto udp = BuildIpv4({.saddr = kC.ip, .daddr = kA.ip, .proto = testing::kIpprotoUdp,
                        .sport = 8080, .dport = 40000});
  ExpectDelivered(udp, FromContainer(udp, kC), kA);
  auto flows = maps().host_flows.LookupBatch();
  ASSERT_TRUE(flows.ok()) << flows.status();
  ASSERT_EQ(flows->size(), 1u);
  EXPECT_EQ(FormatFlowKey(flows->front().first), std::string(kA.ip) + ":40000 proto 6");
  EXPECT_GT(flows->front().second, 0u) << "first-seen time in ns";
  // Without the record (e.g. LRU-evicted or a direct pod-to-pod flow) the reply is delivered.
  ASSERT_TRUE(maps().host_flows.Delete(flows->front().first).ok());
  ExpectDelivered(reply, FromContainer(reply, kC), kA);
}

TEST_P(DatapathTest, OnlyFlowsThePodOpensAreRecorded) {
  // B answers a kubelet probe from the node (B accepted the connection): SYN-ACK and data
  // segments from B:8080 must not make pod -> B:8080 traffic take the host path.
  for (uint8_t flags : {uint8_t{0x12}, uint8_t{0x10}, uint8_t{0x18}, uint8_t{0x11}, uint8_t{0x04}}) {
    auto pkt = BuildIpv4({.saddr = kB.ip, .daddr = kNodeIp, .sport = 8080, .dport = 51000,
                          .tcp_flags = flags});
    ExpectToHost(pkt, FromContainer(pkt, kB));
  }
  EXPECT_FALSE(HasFlow(Flow(kB.ip, 8080, testing::kIpprotoTcp)));
  auto to_b = BuildIpv4({.saddr = kA.ip, .daddr = kB.ip, .sport = 41000, .dport = 8080});
  ExpectDelivered(to_b, FromContainer(to_b, kA), kB);
  // A UDP datagram to a non-endpoint opens a flow (DNS to a ClusterIP); ICMP uses port 0.
  auto dns = BuildIpv4({.saddr = kA.ip, .daddr = "10.96.0.10", .proto = testing::kIpprotoUdp,
                        .sport = 53000, .dport = 53});
  ExpectToHost(dns, FromContainer(dns, kA));
  EXPECT_TRUE(HasFlow(Flow(kA.ip, 53000, testing::kIpprotoUdp)));
  auto ping = BuildIpv4({.saddr = kA.ip, .daddr = "8.8.8.8", .proto = testing::kIpprotoIcmp});
  ExpectToHost(ping, FromContainer(ping, kA));
  EXPECT_TRUE(HasFlow(Flow(kA.ip, 0, testing::kIpprotoIcmp)));
  // Pod-to-pod traffic never records anything.
  auto syn_to_b = BuildIpv4({.saddr = kA.ip, .daddr = kB.ip, .sport = 41001, .tcp_flags = 0x02});
  ExpectDelivered(syn_to_b, FromContainer(syn_to_b, kA), kB);
  EXPECT_FALSE(HasFlow(Flow(kA.ip, 41001, testing::kIpprotoTcp)));
}

TEST_P(DatapathTest, ADirectSynFromTheSamePortForgetsTheHostFlow) {
  // A:40000 -> ClusterIP (DNAT'ed to C:8080 in the host), closed; then the kernel reuses
  // A:40000 for a direct connection to C:8080. C's replies to it must be delivered directly:
  // through the host they would meet the old connection's conntrack entry and be un-DNAT'ed.
  auto svc_syn = BuildIpv4({.saddr = kA.ip, .daddr = "10.96.0.10", .sport = 40000, .dport = 80,
                            .tcp_flags = 0x02});
  ExpectToHost(svc_syn, FromContainer(svc_syn, kA));
  ASSERT_TRUE(HasFlow(Flow(kA.ip, 40000, testing::kIpprotoTcp)));
  // A data segment straight to C from that port does not change anything...
  auto data = BuildIpv4({.saddr = kA.ip, .daddr = kC.ip, .sport = 40000, .dport = 8080});
  ExpectDelivered(data, FromContainer(data, kA), kC);
  EXPECT_TRUE(HasFlow(Flow(kA.ip, 40000, testing::kIpprotoTcp)));
  // ...a SYN does: a new connection from the port.
  auto direct_syn = BuildIpv4({.saddr = kA.ip, .daddr = kC.ip, .sport = 40000, .dport = 8080,
                               .tcp_flags = 0x02});
  ExpectDelivered(direct_syn, FromContainer(direct_syn, kA), kC);
  EXPECT_FALSE(HasFlow(Flow(kA.ip, 40000, testing::kIpprotoTcp)));
  auto syn_ack = BuildIpv4({.saddr = kC.ip, .daddr = kA.ip, .sport = 8080, .dport = 40000,
                            .tcp_flags = 0x12});
  ExpectDelivered(syn_ack, FromContainer(syn_ack, kC), kA);
  // With IP options the flags are still found after them.
  ExpectToHost(svc_syn, FromContainer(svc_syn, kA));
  Ipv4Spec opt{.saddr = kA.ip, .daddr = kC.ip, .sport = 40000, .dport = 8080, .tcp_flags = 0x02,
               .ihl = 15};
  auto opt_syn = BuildIpv4(opt);
  ExpectDelivered(opt_syn, FromContainer(opt_syn, kA), kC);
  EXPECT_FALSE(HasFlow(Flow(kA.ip, 40000, testing::kIpprotoTcp)));
}

TEST_P(DatapathTest, NonFirstFragmentsUseZeroPorts) {
  // A non-first fragment has no L4 header: its flow key has port 0.
  ASSERT_TRUE(maps().host_flows.Update(Flow(kA.ip, 0, testing::kIpprotoUdp), 1).ok());
  ASSERT_TRUE(maps().MarkFlowOpener(kA.id).ok());  // as the datapath does when it records one
  Ipv4Spec frag{.saddr = kC.ip, .daddr = kA.ip, .proto = testing::kIpprotoUdp};
  frag.frag_off = 0x00b9;  // offset 185*8, MF clear
  auto pkt = BuildIpv4(frag);
  ExpectToHost(pkt, FromContainer(pkt, kC));
  frag.frag_off = 0x2000;  // first fragment (MF set, offset 0): ports are read
  pkt = BuildIpv4(frag);
  ExpectDelivered(pkt, FromContainer(pkt, kC), kA);
}

TEST_P(DatapathTest, SpoofedSourcesAreDropped) {
  // B's address sent from A's veth.
  auto pkt = BuildIpv4({.saddr = kB.ip, .daddr = kC.ip});
  EXPECT_EQ(FromContainer(pkt, kA).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  // An address that is nobody's.
  auto stranger = BuildIpv4({.saddr = "10.244.1.99", .daddr = "8.8.8.8"});
  EXPECT_EQ(FromContainer(stranger, kA).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  EXPECT_EQ(Drops(SARENA_DROP_SPOOFED_SOURCE), 2u);
  EXPECT_EQ(Counters(kC).rx_packets, 0u);
  EXPECT_EQ(Counters(kA).tx_packets, 0u);
  EXPECT_EQ(Counters(kB).tx_packets, 0u);
}

TEST_P(DatapathTest, NonIpv4EtherTypesPassUntouched) {
  auto ipv4_to_b = BuildIpv4(AtoB());
  std::vector<std::vector<uint8_t>> frames;
  auto v6 = ipv4_to_b;  // IPv6 EtherType
  Put16(v6, 12, testing::kEthPIpv6);
  v6[14] = 0x60;
  frames.push_back(v6);
  // VLAN-tagged IPv4 to B: 0x8100, TCI, then 0x0800 and the IPv4 packet.
  std::vector<uint8_t> vlan(ipv4_to_b.begin(), ipv4_to_b.begin() + 12);
  vlan.insert(vlan.end(), {0x81, 0x00, 0x00, 0x05, 0x08, 0x00});
  vlan.insert(vlan.end(), ipv4_to_b.begin() + 14, ipv4_to_b.end());
  frames.push_back(vlan);
  auto qinq = vlan;  // 802.1ad
  Put16(qinq, 12, 0x88a8);
  frames.push_back(qinq);
  auto other = ipv4_to_b;  // something else entirely (LLDP)
  Put16(other, 12, 0x88cc);
  frames.push_back(other);
  // ARP that is not a gateway request: a reply, and a request for another pod.
  frames.push_back(BuildArp({.eth_src = kA.pod_mac, .op = 2, .sha = kA.pod_mac, .spa = kA.ip,
                             .tha = kHostMac, .tpa = kNodeIp}));
  frames.push_back(
      BuildArp({.eth_src = kA.pod_mac, .sha = kA.pod_mac, .spa = kA.ip, .tpa = kB.ip}));
  for (size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectPassedUntouched(frames[i], FromContainer(frames[i], kA));
    ExpectPassedUntouched(frames[i], FromHost(frames[i]));
  }
  EXPECT_EQ(Counters(kB).rx_packets, 0u);
}

TEST_P(DatapathTest, ArpForTheGatewayIsAnswered) {
  auto req = BuildArp({.eth_src = kA.pod_mac, .sha = kA.pod_mac, .spa = kA.ip, .tpa = kNodeIp});
  auto r = FromContainer(req, kA);
  ASSERT_EQ(r.retval, static_cast<uint32_t>(TC_ACT_REDIRECT));
  ASSERT_EQ(r.data_out.size(), req.size());
  const auto& o = r.data_out;
  EXPECT_EQ(MacAt(o, 0), kA.pod_mac) << "Ethernet dst = requester";
  EXPECT_EQ(MacAt(o, 6), kA.host_mac) << "Ethernet src = the pod's host-side veth";
  EXPECT_EQ(Get16(o, 12), testing::kEthPArp);
  EXPECT_EQ(Get16(o, 14), 1) << "htype Ethernet";
  EXPECT_EQ(Get16(o, 16), testing::kEthPIp) << "ptype IPv4";
  EXPECT_EQ(o[18], 6);
  EXPECT_EQ(o[19], 4);
  EXPECT_EQ(Get16(o, 20), 2) << "opcode reply";
  EXPECT_EQ(MacAt(o, 22), kA.host_mac) << "sender MAC = gateway MAC";
  uint32_t spa, tpa;
  std::memcpy(&spa, &o[28], 4);
  std::memcpy(&tpa, &o[38], 4);
  EXPECT_EQ(net::FromBe32(spa), Ip(kNodeIp)) << "sender IP = gateway";
  EXPECT_EQ(MacAt(o, 32), kA.pod_mac) << "target MAC = requester";
  EXPECT_EQ(net::FromBe32(tpa), Ip(kA.ip)) << "target IP = requester";

  // B asking through its own veth gets B's host-side MAC.
  auto req_b = BuildArp({.eth_src = kB.pod_mac, .sha = kB.pod_mac, .spa = kB.ip, .tpa = kNodeIp});
  auto rb = FromContainer(req_b, kB);
  ASSERT_EQ(rb.retval, static_cast<uint32_t>(TC_ACT_REDIRECT));
  EXPECT_EQ(MacAt(rb.data_out, 22), kB.host_mac);
  EXPECT_EQ(MacAt(rb.data_out, 0), kB.pod_mac);
}

TEST_P(DatapathTest, ArpIsNotAnsweredForOthersOrFromTheWrongDevice) {
  // A's request arriving on B's veth.
  auto req = BuildArp({.eth_src = kA.pod_mac, .sha = kA.pod_mac, .spa = kA.ip, .tpa = kNodeIp});
  ExpectPassedUntouched(req, FromContainer(req, kB));
  // A sender that is not an endpoint (e.g. an ARP probe with sender 0.0.0.0).
  auto probe =
      BuildArp({.eth_src = kA.pod_mac, .sha = kA.pod_mac, .spa = "0.0.0.0", .tpa = kNodeIp});
  ExpectPassedUntouched(probe, FromContainer(probe, kA));
  // Another target address.
  auto other = BuildArp({.eth_src = kA.pod_mac, .sha = kA.pod_mac, .spa = kA.ip, .tpa = "10.244.1.2"});
  ExpectPassedUntouched(other, FromContainer(other, kA));
  // A truncated request.
  std::vector<uint8_t> cut(req.begin(), req.begin() + 40);
  ExpectPassedUntouched(cut, FromContainer(cut, kA));
  // from_host never answers ARP.
  ExpectPassedUntouched(req, FromHost(req));
}

// ---- The fast paths: endpoint slots and host-flow openers. ----

TEST_P(DatapathTest, SlotsMirrorTheEndpointsOnlyWhenPut) {
  const datapath::EndpointSlot a = Slot(kA);
  if (GetParam() == EndpointWrite::kPut) {
    EXPECT_EQ(a.addr_be, net::ToBe32(Ip(kA.ip)));
    EXPECT_EQ(a.ep.ifindex, kA.ifindex);
    EXPECT_EQ(a.ep.endpoint_id, kA.id);
  } else {
    EXPECT_EQ(a.addr_be, 0u) << "raw hash writes leave the slot empty: the hash path is tested";
  }
}

// A slot holding another address (same low 16 bits, e.g. an endpoint outside a /16 pod CIDR)
// is not this address's: the lookup goes on to the hash, for the source and the destination.
TEST_P(DatapathTest, ASlotOfAnotherAddressFallsBackToTheHash) {
  datapath::EndpointSlot other = {};
  other.addr_be = net::ToBe32(Ip("10.99.1.11"));  // B's low 16 bits (0x010b), not B
  other.ep = MakeEndpoint(4242, {0x0a, 0, 0, 0, 0, 0x42}, {0x02, 0, 0, 0, 0, 0x42}, 42);
  ASSERT_TRUE(
      maps().endpoints.slots()->Update(datapath::EndpointSlotIndex(Ip(kB.ip)), other).ok());
  ASSERT_TRUE(maps().endpoints.Update(MakeEndpointKey(Ip(kB.ip)),
                                      MakeEndpoint(kB.ifindex, kB.pod_mac, kB.host_mac, kB.id))
                  .ok());
  auto to_b = BuildIpv4({.saddr = kA.ip, .daddr = kB.ip});
  ExpectDelivered(to_b, FromContainer(to_b, kA), kB);
  ExpectDelivered(to_b, FromHost(to_b), kB);
  auto from_b = BuildIpv4({.saddr = kB.ip, .daddr = kC.ip});
  ExpectDelivered(from_b, FromContainer(from_b, kB), kC);
  EXPECT_EQ(Counters(kB).tx_packets, 1u);
  // For its own address the slot is trusted without the hash (the fast path: EndpointMap writes
  // a slot only as the copy of a hash entry, so here it stands for an entry of 10.99.1.11).
  auto to_other = BuildIpv4({.saddr = kA.ip, .daddr = "10.99.1.11"});
  auto r = FromContainer(to_other, kA);
  ASSERT_EQ(r.retval, static_cast<uint32_t>(TC_ACT_REDIRECT));
  EXPECT_EQ(MacAt(r.data_out, 0), (net::Mac{0x0a, 0, 0, 0, 0, 0x42}));
}

// The flags travel with the copy: a traced endpoint (Replace, as `sarena monitor --type trace`
// marks it; it writes the slot when empty too) is still delivered and counted on the slot path.
TEST_P(DatapathTest, ReplacedFlagsReachTheSlot) {
  ASSERT_TRUE(maps().endpoints
                  .Replace(MakeEndpointKey(Ip(kB.ip)),
                           MakeEndpoint(kB.ifindex, kB.pod_mac, kB.host_mac, kB.id,
                                        SARENA_EP_F_TRACE))
                  .ok());
  EXPECT_EQ(Slot(kB).ep.flags, SARENA_EP_F_TRACE);
  auto pkt = BuildIpv4({.saddr = kA.ip, .daddr = kB.ip});
  ExpectDelivered(pkt, FromContainer(pkt, kA), kB);
  EXPECT_EQ(Counters(kB).rx_packets, 1u);
}

// Host-flow openers: a pod is marked when from_container records its first host flow, and the
// LRU is consulted between local pods only for marked pods.
TEST_P(DatapathTest, RecordingAHostFlowMarksTheOpener) {
  EXPECT_FALSE(IsFlowOpener(kA));
  auto pod_to_pod = BuildIpv4({.saddr = kA.ip, .daddr = kC.ip, .sport = 40000, .dport = 8080,
                               .tcp_flags = 0x02});
  ExpectDelivered(pod_to_pod, FromContainer(pod_to_pod, kA), kC);
  EXPECT_FALSE(IsFlowOpener(kA)) << "direct pod-to-pod traffic opens no host flow";
  auto svc_syn = BuildIpv4({.saddr = kA.ip, .daddr = "10.96.0.10", .sport = 40001, .dport = 80,
                            .tcp_flags = 0x02});
  ExpectToHost(svc_syn, FromContainer(svc_syn, kA));
  EXPECT_TRUE(IsFlowOpener(kA));
  EXPECT_FALSE(IsFlowOpener(kC));
}

TEST_P(DatapathTest, RecordsOfAnUnmarkedPodAreNotConsultedBetweenLocalPods) {
  // A record the datapath did not write (A never opened a host flow; e.g. a reused address whose
  // new endpoint has not): ignored between local pods, both by the reply check and the SYN step.
  const FlowKey key = Flow(kA.ip, 40000, testing::kIpprotoTcp);
  ASSERT_TRUE(maps().host_flows.Update(key, 1).ok());
  auto reply = BuildIpv4({.saddr = kC.ip, .daddr = kA.ip, .sport = 8080, .dport = 40000});
  ExpectDelivered(reply, FromContainer(reply, kC), kA);
  auto direct_syn = BuildIpv4({.saddr = kA.ip, .daddr = kC.ip, .sport = 40000, .dport = 8080,
                               .tcp_flags = 0x02});
  ExpectDelivered(direct_syn, FromContainer(direct_syn, kA), kC);
  EXPECT_TRUE(HasFlow(key)) << "nothing to forget for an unmarked pod";
  // Marked (as the datapath or an upgrade does), the same record is honoured again.
  ASSERT_TRUE(maps().MarkFlowOpener(kA.id).ok());
  ExpectToHost(reply, FromContainer(reply, kC));
  ExpectDelivered(direct_syn, FromContainer(direct_syn, kA), kC);
  EXPECT_FALSE(HasFlow(key));
}

// ---- The word-wide stores and parse fast path of issue 9 item 1 (2026-12-06). ----

// The two MACs are written as 32 + 16-bit stores from the endpoint entry (at offset 4 of a slot
// copy, so unaligned on the slot path): every one of the 12 bytes lands in its place, in order,
// and the EtherType after them is untouched (ExpectDelivered compares every other byte), from
// both programs.
TEST_P(DatapathTest, EveryMacByteReachesItsPlace) {
  const TestEndpoint d{"10.244.1.13", 1013, {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc},
                       {0xde, 0xf0, 0x13, 0x57, 0x9b, 0xdf}, 13};
  const auto value = MakeEndpoint(d.ifindex, d.pod_mac, d.host_mac, d.id);
  if (GetParam() == EndpointWrite::kPut) {
    ASSERT_TRUE(maps().endpoints.Put(Ip(d.ip), value).ok());
  } else {
    ASSERT_TRUE(maps().endpoints.Update(MakeEndpointKey(Ip(d.ip)), value).ok());
  }
  auto to_d = BuildIpv4({.saddr = kA.ip, .daddr = d.ip});
  ExpectDelivered(to_d, FromContainer(to_d, kA), d);
  ExpectDelivered(to_d, FromHost(to_d), d);
  // And from d: its address is accepted on its own veth only, and the reply reaches A.
  auto from_d = BuildIpv4({.saddr = d.ip, .daddr = kA.ip});
  ExpectDelivered(from_d, FromContainer(from_d, d), kA);
  EXPECT_EQ(FromContainer(from_d, kB).retval, static_cast<uint32_t>(TC_ACT_SHOT));
  EXPECT_EQ(Drops(SARENA_DROP_SPOOFED_SOURCE), 1u);
  EXPECT_EQ(Counters(d).rx_packets, 2u);
  EXPECT_EQ(Counters(d).tx_packets, 1u);
}

// Only a TCP SYN forgets a host-flow record, so from_container reads the sender's opener mark
// for TCP only: a marked pod's UDP to a local pod is delivered and keeps the pod's UDP record
// (a DNS reply through the host still goes back through the host), and its TCP SYN still
// forgets the TCP record of the same port.
TEST_P(DatapathTest, OnlyTcpFromAMarkedPodConsultsItsRecordsBetweenLocalPods) {
  auto dns = BuildIpv4({.saddr = kA.ip, .daddr = "10.96.0.10", .proto = testing::kIpprotoUdp,
                        .sport = 40000, .dport = 53});
  ExpectToHost(dns, FromContainer(dns, kA));
  ASSERT_TRUE(IsFlowOpener(kA));
  auto udp_direct = BuildIpv4({.saddr = kA.ip, .daddr = kC.ip, .proto = testing::kIpprotoUdp,
                               .sport = 40000, .dport = 8080});
  ExpectDelivered(udp_direct, FromContainer(udp_direct, kA), kC);
  EXPECT_TRUE(HasFlow(Flow(kA.ip, 40000, testing::kIpprotoUdp)));
  auto dns_reply = BuildIpv4({.saddr = kC.ip, .daddr = kA.ip, .proto = testing::kIpprotoUdp,
                              .sport = 53, .dport = 40000});
  ExpectToHost(dns_reply, FromContainer(dns_reply, kC));
  auto svc_syn = BuildIpv4({.saddr = kA.ip, .daddr = "10.96.0.10", .sport = 40000, .dport = 80,
                            .tcp_flags = 0x02});
  ExpectToHost(svc_syn, FromContainer(svc_syn, kA));
  ASSERT_TRUE(HasFlow(Flow(kA.ip, 40000, testing::kIpprotoTcp)));
  auto direct_syn = BuildIpv4({.saddr = kA.ip, .daddr = kC.ip, .sport = 40000, .dport = 8080,
                               .tcp_flags = 0x02});
  ExpectDelivered(direct_syn, FromContainer(direct_syn, kA), kC);
  EXPECT_FALSE(HasFlow(Flow(kA.ip, 40000, testing::kIpprotoTcp)));
  EXPECT_TRUE(HasFlow(Flow(kA.ip, 40000, testing::kIpprotoUdp)));
}

INSTANTIATE_TEST_SUITE_P(EndpointLookup, DatapathTest,
                         ::testing::Values(EndpointWrite::kHashOnly, EndpointWrite::kPut),
                         [](const ::testing::TestParamInfo<EndpointWrite>& info) {
                           return info.param == EndpointWrite::kPut ? "Slots" : "HashOnly";
                         });

}  // namespace
}  // namespace sarena::bpf
