// The datapath's events (`sarena monitor`): the real programs, loaded by
// sarena::datapath::Objects into a private bpffs and run on crafted frames with BPF_PROG_TEST_RUN,
// write struct sarena_event records into the pinned ring buffer; sarena::datapath::Monitor reads
// them back through libbpf's ring_buffer. Checks: one event per drop with its reason, endpoint
// and 5-tuple; the per-CPU token bucket (SARENA_EVENTS_BURST, then suppressed and counted); trace
// events only for the endpoint `Monitor` marked, and none once it closed; the ring buffer pin is
// reused by a second load (a restarted sarenad).
#include "libsarena/datapath/monitor.h"

#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "libsarena/bpf/map.h"
#include "libsarena/bpf/test_run.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/objects.h"
#include "tests/bpf/bpf_test_env.h"
#include "tests/lib/test_util.h"

namespace sarena::datapath {
namespace {

using ::sarena::bpf::TestRun;
using ::sarena::bpf::TestRunOptions;
using ::sarena::bpf::TestRunResult;
using ::sarena::testing::BuildIpv4;
using ::sarena::testing::Ipv4Spec;
using ::sarena::testing::kIpprotoIcmp;
using ::sarena::testing::kIpprotoTcp;
using ::sarena::testing::kIpprotoUdp;

// Parses one `sarena monitor -o json` line back into its schema (fails the test if it does not
// parse: the line must be exactly sarena.datapath.v1.MonitorEvent).
v1::MonitorEvent ParseEventJson(const std::string& json) {
  v1::MonitorEvent m;
  const auto st = google::protobuf::util::JsonStringToMessage(json, &m);
  EXPECT_TRUE(st.ok()) << st.ToString() << ": " << json;
  return m;
}

constexpr uint32_t kLoopback = 1;
constexpr uint32_t kHostIfindex = 500;

struct TestEndpoint {
  std::string ip;
  uint32_t ifindex;
  net::Mac pod_mac;
  net::Mac host_mac;
  uint32_t id;
};
const TestEndpoint kA{
    "10.244.1.10", 1010, {0x0a, 0, 0, 0, 0, 0x10}, {0x02, 0, 0, 0, 0xa0, 0x10}, 10};
const TestEndpoint kB{
    "10.244.1.11", 1011, {0x0a, 0, 0, 0, 0, 0x11}, {0x02, 0, 0, 0, 0xa0, 0x11}, 11};
const TestEndpoint kC{
    "10.244.1.12", 1012, {0x0a, 0, 0, 0, 0, 0x12}, {0x02, 0, 0, 0, 0xa0, 0x12}, 12};

net::Ipv4 Ip(const std::string& s) { return boost::asio::ip::make_address_v4(s); }

std::string Src(const Event& ev) {
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, ev.src, buf, sizeof(buf));
}
std::string Dst(const Event& ev) {
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, ev.dst, buf, sizeof(buf));
}

class MonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(::sarena::testing::IsRoot()) << "the bpf tier needs root (CI runs as root)";
    // Every BPF_PROG_TEST_RUN on one CPU: the token bucket is per CPU.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    auto objs = Objects::Load({.pin_root = bpffs_.path()});
    ASSERT_TRUE(objs.ok()) << objs.status();
    objs_.emplace(std::move(*objs));
    Config cfg = {};
    cfg.node_ip_be = net::ToBe32(Ip("10.244.1.1"));
    cfg.host_ifindex = kHostIfindex;
    cfg.net_ifindex = 501;
    cfg.pod_cidr_be = net::ToBe32(Ip("10.244.1.0"));
    cfg.pod_cidr_len = 24;
    ASSERT_TRUE(objs_->maps().config.Write(cfg).ok());
    for (const auto* ep : {&kA, &kB, &kC}) {
      ASSERT_TRUE(objs_->maps()
                      .endpoints
                      .Put(Ip(ep->ip), MakeEndpoint(ep->ifindex, ep->pod_mac, ep->host_mac, ep->id))
                      .ok());
    }
  }
  void TearDown() override {
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &all);
    sched_setaffinity(0, sizeof(all), &all);
  }

  std::unique_ptr<Monitor> Open(EventType type, std::optional<uint32_t> endpoint = std::nullopt) {
    auto m = Monitor::Open({.pin_root = bpffs_.path(), .type = type, .endpoint = endpoint});
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? std::move(*m) : nullptr;
  }

  TestRunResult Run(Program prog, const std::vector<uint8_t>& pkt, uint32_t ingress_ifindex,
                    uint32_t repeat = 1) {
    auto r = TestRun(
        objs_->prog_fd(prog), pkt,
        TestRunOptions{.repeat = repeat, .ifindex = kLoopback, .ingress_ifindex = ingress_ifindex});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : TestRunResult{};
  }
  TestRunResult FromContainer(const std::vector<uint8_t>& pkt, const TestEndpoint& from,
                              uint32_t repeat = 1) {
    return Run(Program::kFromContainer, pkt, from.ifindex, repeat);
  }

  // Every event in the ring that `m` accepts (type, endpoint, newer than Open).
  static std::vector<Event> Drain(Monitor& m) {
    std::vector<Event> out;
    auto n = m.Poll(absl::ZeroDuration(), [&](const Event& ev) {
      out.push_back(ev);
      return true;
    });
    EXPECT_TRUE(n.ok()) << n.status();
    return out;
  }

  Endpoint EntryOf(const TestEndpoint& ep) {
    auto e = objs_->maps().endpoints.Get(Ip(ep.ip));
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *e : Endpoint{};
  }

  ::sarena::testing::ScopedBpffs bpffs_;
  std::optional<Objects> objs_;
};

TEST_F(MonitorTest, TtlDropEmitsOneEventWithReasonEndpointAndFiveTuple) {
  auto m = Open(EventType::kDrop);
  ASSERT_NE(m, nullptr);
  auto pkt = BuildIpv4({.saddr = kA.ip,
                        .daddr = kB.ip,
                        .proto = kIpprotoTcp,
                        .sport = 40001,
                        .dport = 8080,
                        .ttl = 1});
  const int64_t before = absl::GetCurrentTimeNanos();
  ASSERT_EQ(FromContainer(pkt, kA).retval, uint32_t{TC_ACT_SHOT});
  std::vector<Event> evs = Drain(*m);
  ASSERT_EQ(evs.size(), 1u);
  const Event& ev = evs[0];
  EXPECT_EQ(ev.type, SARENA_EVENT_DROP);
  EXPECT_EQ(ev.reason, SARENA_DROP_TTL_EXCEEDED);
  EXPECT_EQ(ev.ifindex, kLoopback) << "the device the program ran on (skb->ifindex)";
  EXPECT_EQ(ev.endpoint_id, kA.id) << "the sender: its address and its veth";
  EXPECT_EQ(ev.family, SARENA_FAMILY_IPV4);
  EXPECT_EQ(Src(ev), kA.ip);
  EXPECT_EQ(Dst(ev), kB.ip);
  EXPECT_EQ(ev.sport, 40001);
  EXPECT_EQ(ev.dport, 8080);
  EXPECT_EQ(ev.proto, kIpprotoTcp);
  EXPECT_EQ(ev.len, pkt.size());
  // ts is CLOCK_MONOTONIC; WallTime maps it back to now (within a generous second).
  EXPECT_NEAR(absl::ToUnixNanos(m->WallTime(ev)), before, 1e9);
  // -o json is sarena.datapath.v1.MonitorEvent in protobuf's JSON mapping: parse it back.
  const std::string json = FormatEventJson(ev, m->WallTime(ev));
  const v1::MonitorEvent parsed = ParseEventJson(json);
  EXPECT_EQ(parsed.type(), "drop") << json;
  EXPECT_EQ(parsed.reason(), "ttl_exceeded");
  EXPECT_EQ(parsed.ifindex(), 1u);
  ASSERT_TRUE(parsed.has_endpoint());
  EXPECT_EQ(parsed.endpoint(), 10u);
  EXPECT_EQ(parsed.family(), "ipv4");
  EXPECT_EQ(parsed.src(), "10.244.1.10");
  EXPECT_EQ(parsed.dst(), "10.244.1.11");
  EXPECT_EQ(parsed.sport(), 40001u);
  EXPECT_EQ(parsed.dport(), 8080u);
  EXPECT_EQ(parsed.proto(), 6u);
  EXPECT_EQ(parsed.len(), pkt.size());
  EXPECT_NE(json.find("\"sport\":40001"), std::string::npos) << "uint32 prints as a JSON number";
  EXPECT_NEAR(parsed.ts().seconds() * 1e9 + parsed.ts().nanos(), before, 1e9);
  auto stats = m->StatsSinceOpen();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->emitted, 1u);
  EXPECT_EQ(stats->suppressed, 0u);
  EXPECT_EQ(stats->lost, 0u);
}

TEST_F(MonitorTest, EveryDropReasonTheProgramsReachHasItsEvent) {
  auto m = Open(EventType::kDrop);
  ASSERT_NE(m, nullptr);
  // Spoofed source from pod A's veth: UDP; the sender is no endpoint of that veth, so the event
  // names the destination endpoint.
  auto spoof = BuildIpv4(
      {.saddr = "10.244.1.99", .daddr = kB.ip, .proto = kIpprotoUdp, .sport = 5353, .dport = 53});
  ASSERT_EQ(FromContainer(spoof, kA).retval, uint32_t{TC_ACT_SHOT});
  // No endpoint: ICMP echo request to an unused pod-CIDR address, on sarena_host's egress.
  auto icmp = BuildIpv4({.saddr = "10.244.1.1", .daddr = "10.244.1.200", .proto = kIpprotoIcmp});
  icmp[testing::kEthHlen + 20] = 8;  // echo request
  icmp[testing::kEthHlen + 21] = 0;
  ASSERT_EQ(Run(Program::kFromHost, icmp, kHostIfindex).retval, uint32_t{TC_ACT_SHOT});
  // Truncated: the IPv4 header only (tot_len says more; the kernel's test run itself refuses
  // a frame shorter than an IPv4 header) -> addresses, but no ports to read.
  auto cut = BuildIpv4({.saddr = kA.ip, .daddr = kB.ip});
  cut.resize(testing::kEthHlen + 20);
  ASSERT_EQ(FromContainer(cut, kA).retval, uint32_t{TC_ACT_SHOT});
  // Bad header: IHL 4.
  auto bad =
      BuildIpv4({.saddr = kA.ip, .daddr = kC.ip, .proto = kIpprotoUdp, .sport = 1, .dport = 2});
  bad[testing::kEthHlen] = 0x44;
  ASSERT_EQ(FromContainer(bad, kA).retval, uint32_t{TC_ACT_SHOT});

  std::vector<Event> evs = Drain(*m);
  ASSERT_EQ(evs.size(), 4u);
  EXPECT_EQ(evs[0].reason, SARENA_DROP_SPOOFED_SOURCE);
  EXPECT_EQ(Src(evs[0]), "10.244.1.99");
  EXPECT_EQ(Dst(evs[0]), kB.ip);
  EXPECT_EQ(evs[0].proto, kIpprotoUdp);
  EXPECT_EQ(evs[0].sport, 5353);
  EXPECT_EQ(evs[0].dport, 53);
  EXPECT_EQ(evs[0].endpoint_id, kB.id);

  EXPECT_EQ(evs[1].reason, SARENA_DROP_NO_ENDPOINT);
  EXPECT_EQ(Src(evs[1]), "10.244.1.1");
  EXPECT_EQ(Dst(evs[1]), "10.244.1.200");
  EXPECT_EQ(evs[1].proto, kIpprotoIcmp);
  EXPECT_EQ(evs[1].sport, 8) << "ICMP type";
  EXPECT_EQ(evs[1].dport, 0) << "ICMP code";
  EXPECT_EQ(evs[1].endpoint_id, SARENA_EVENT_NO_ENDPOINT);
  EXPECT_FALSE(ParseEventJson(FormatEventJson(evs[1], m->WallTime(evs[1]))).has_endpoint())
      << "no endpoint: the field is left out";
  EXPECT_EQ(FormatEventJson(evs[1], m->WallTime(evs[1])).find("\"endpoint\""), std::string::npos);

  EXPECT_EQ(evs[2].reason, SARENA_DROP_TRUNCATED);
  EXPECT_EQ(evs[2].family, SARENA_FAMILY_IPV4);
  EXPECT_EQ(Src(evs[2]), kA.ip);
  EXPECT_EQ(evs[2].proto, kIpprotoTcp);
  EXPECT_EQ(evs[2].sport, 0) << "no TCP header to read";
  EXPECT_EQ(evs[2].len, cut.size());
  EXPECT_EQ(evs[2].endpoint_id, kA.id);
  // A frame without a readable IPv4 header is reported with family/src/dst null.
  Event non_ip = evs[2];
  non_ip.family = 0;
  const v1::MonitorEvent non_ip_msg = ParseEventJson(FormatEventJson(non_ip, m->WallTime(non_ip)));
  EXPECT_FALSE(non_ip_msg.has_family());
  EXPECT_FALSE(non_ip_msg.has_src());
  EXPECT_FALSE(non_ip_msg.has_dst());

  EXPECT_EQ(evs[3].reason, SARENA_DROP_BAD_IP_HEADER);
  EXPECT_EQ(Dst(evs[3]), kC.ip);
  EXPECT_EQ(evs[3].sport, 0) << "IHL < 5: no L4 header is trusted";
  EXPECT_EQ(evs[3].endpoint_id, kA.id);
  EXPECT_EQ(FormatEventText(evs[0], m->WallTime(evs[0])).substr(16),
            "drop spoofed_source ifindex 1 endpoint 11 cpu " + std::to_string(evs[0].cpu) +
                " len " + std::to_string(spoof.size()) +
                ": udp 10.244.1.99:5353 -> 10.244.1.11:53");
}

TEST_F(MonitorTest, ClusterProgramDropsHaveEventsToo) {
  OverlayConfig o = {};
  o.flags = SARENA_OVL_F_TUNNEL;
  o.vni = 7;
  o.node_id = 1;
  ASSERT_TRUE(objs_->maps().overlay_config.Write(o).ok());
  auto m = Open(EventType::kDrop);
  ASSERT_NE(m, nullptr);
  // to_overlay: the host stack routed a packet onto sarena_vxlan for no known remote CIDR.
  auto unknown = BuildIpv4({.saddr = "192.0.2.1",
                            .daddr = "10.250.0.1",
                            .proto = kIpprotoUdp,
                            .sport = 4789,
                            .dport = 53});
  ASSERT_EQ(Run(Program::kToOverlay, unknown, 0).retval, uint32_t{TC_ACT_SHOT});
  // from_overlay: a frame without tunnel metadata (BPF_PROG_TEST_RUN sets none).
  auto inner = BuildIpv4({.saddr = "10.244.2.5", .daddr = kB.ip, .sport = 33000, .dport = 443});
  ASSERT_EQ(Run(Program::kFromOverlay, inner, 0).retval, uint32_t{TC_ACT_SHOT});
  std::vector<Event> evs = Drain(*m);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[0].reason, SARENA_DROP_NO_TUNNEL_ENDPOINT);
  EXPECT_EQ(Src(evs[0]), "192.0.2.1");
  EXPECT_EQ(Dst(evs[0]), "10.250.0.1");
  EXPECT_EQ(evs[0].sport, 4789);
  EXPECT_EQ(evs[0].dport, 53);
  EXPECT_EQ(evs[0].endpoint_id, SARENA_EVENT_NO_ENDPOINT);
  EXPECT_EQ(evs[1].reason, SARENA_DROP_TUNNEL_KEY_FAILED);
  EXPECT_EQ(Src(evs[1]), "10.244.2.5");
  EXPECT_EQ(Dst(evs[1]), kB.ip);
  EXPECT_EQ(evs[1].dport, 443);
  EXPECT_EQ(evs[1].endpoint_id, kB.id) << "addressed to local endpoint b";
}

TEST_F(MonitorTest, RateLimitSuppressesBeyondTheBurstAndCountsIt) {
  auto m = Open(EventType::kDrop);
  ASSERT_NE(m, nullptr);
  auto spoof = BuildIpv4({.saddr = "10.244.1.99", .daddr = kB.ip});
  constexpr uint32_t kFlood = SARENA_EVENTS_BURST + 300;
  // One BPF_PROG_TEST_RUN with repeat = kFlood: every run on this CPU, within a few hundred us,
  // in which the bucket refills by well under one event (SARENA_EVENTS_RATE per second).
  const absl::Time t0 = absl::Now();
  ASSERT_EQ(FromContainer(spoof, kA, kFlood).retval, uint32_t{TC_ACT_SHOT});
  const absl::Time t1 = absl::Now();
  auto drops = objs_->maps().drops.ReadAll();
  ASSERT_TRUE(drops.ok());
  EXPECT_EQ((*drops)[SARENA_DROP_SPOOFED_SOURCE].packets, kFlood) << "every drop is counted";
  auto stats = m->StatsSinceOpen();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GE(stats->emitted, SARENA_EVENTS_BURST);
  // Plus the refill while the runs lasted (one per ms; a run may be rescheduled under load).
  EXPECT_LE(stats->emitted, SARENA_EVENTS_BURST + absl::ToInt64Milliseconds(t1 - t0) + 2);
  EXPECT_EQ(stats->emitted + stats->suppressed, kFlood);
  EXPECT_EQ(stats->lost, 0u);
  std::vector<Event> evs = Drain(*m);
  EXPECT_EQ(evs.size(), stats->emitted);
  // The stats line RunMonitor prints carries the suppressed count.
  EXPECT_EQ(FormatStatsJson(EventType::kDrop, evs.size(), *stats),
            absl::StrCat("{\"type\":\"stats\",\"event_type\":\"drop\",\"events\":\"", evs.size(),
                         "\",\"suppressed\":\"", stats->suppressed, "\",\"lost\":\"0\"}"))
      << "sarena.datapath.v1.MonitorStats; uint64 prints as a JSON string";
  // The bucket refills at SARENA_EVENTS_RATE = 1000 per second, one event per ms: the second
  // flood gets through as many events as ms passed since the first (bounded by what the clock
  // says around the runs, so a loaded machine cannot make this flaky).
  absl::SleepFor(absl::Milliseconds(20));
  const absl::Time t2 = absl::Now();
  ASSERT_EQ(FromContainer(spoof, kA, 200).retval, uint32_t{TC_ACT_SHOT});
  const absl::Time t3 = absl::Now();
  auto later = m->StatsSinceOpen();
  ASSERT_TRUE(later.ok());
  const int64_t refilled = static_cast<int64_t>(later->emitted - stats->emitted);
  static_assert(SARENA_EVENTS_RATE == 1000, "one event per ms below");
  EXPECT_GE(refilled, absl::ToInt64Milliseconds(t2 - t1) - 1);
  EXPECT_LE(refilled, std::min<int64_t>(200, absl::ToInt64Milliseconds(t3 - t0) + 2));
  EXPECT_EQ(static_cast<int64_t>(later->suppressed - stats->suppressed), 200 - refilled);
}

TEST_F(MonitorTest, TraceEventsOnlyForTheSelectedEndpointAndOnlyWhileMonitored) {
  auto to_b = BuildIpv4({.saddr = kA.ip, .daddr = kB.ip, .sport = 41000, .dport = 80});
  auto to_c = BuildIpv4({.saddr = kA.ip, .daddr = kC.ip, .sport = 41001, .dport = 80});
  auto from_b =
      BuildIpv4({.saddr = kB.ip, .daddr = kC.ip, .proto = kIpprotoUdp, .sport = 7, .dport = 9});
  // Off: deliveries write nothing (the trace bit of the endpoint entry is clear).
  ASSERT_EQ(FromContainer(to_b, kA).retval, uint32_t{TC_ACT_REDIRECT});
  auto off = ReadEventStats(bpffs_.path(), EventType::kTrace);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->emitted + off->suppressed + off->lost, 0u);

  {
    auto m = Open(EventType::kTrace, kB.id);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(EntryOf(kB).flags & SARENA_EP_F_TRACE, SARENA_EP_F_TRACE);
    EXPECT_EQ(EntryOf(kA).flags & SARENA_EP_F_TRACE, 0u);
    ASSERT_EQ(FromContainer(to_b, kA).retval, uint32_t{TC_ACT_REDIRECT});
    ASSERT_EQ(FromContainer(to_c, kA).retval, uint32_t{TC_ACT_REDIRECT});
    ASSERT_EQ(FromContainer(from_b, kB).retval, uint32_t{TC_ACT_REDIRECT});
    // A drop is no trace event.
    auto ttl = BuildIpv4({.saddr = kA.ip, .daddr = kB.ip, .ttl = 1});
    ASSERT_EQ(FromContainer(ttl, kA).retval, uint32_t{TC_ACT_SHOT});
    std::vector<Event> evs = Drain(*m);
    ASSERT_EQ(evs.size(), 2u);
    EXPECT_EQ(evs[0].type, SARENA_EVENT_TRACE);
    EXPECT_EQ(evs[0].reason, SARENA_TRACE_TO_ENDPOINT);
    EXPECT_EQ(evs[0].endpoint_id, kB.id);
    EXPECT_EQ(evs[0].ifindex, kB.ifindex) << "the traced endpoint's veth";
    EXPECT_EQ(Src(evs[0]), kA.ip);
    EXPECT_EQ(Dst(evs[0]), kB.ip);
    EXPECT_EQ(evs[0].sport, 41000);
    EXPECT_EQ(evs[1].reason, SARENA_TRACE_FROM_ENDPOINT);
    EXPECT_EQ(evs[1].endpoint_id, kB.id);
    EXPECT_EQ(Src(evs[1]), kB.ip);
    EXPECT_EQ(Dst(evs[1]), kC.ip);
    EXPECT_EQ(evs[1].proto, kIpprotoUdp);
    const v1::MonitorEvent trace = ParseEventJson(FormatEventJson(evs[1], m->WallTime(evs[1])));
    EXPECT_EQ(trace.type(), "trace");
    EXPECT_EQ(trace.reason(), "from_endpoint");
    EXPECT_EQ(trace.ifindex(), 1011u);
    EXPECT_EQ(trace.endpoint(), 11u);
  }
  // Closed: the bit is cleared and deliveries to B write nothing more.
  EXPECT_EQ(EntryOf(kB).flags, 0u);
  auto before = ReadEventStats(bpffs_.path(), EventType::kTrace);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(FromContainer(to_b, kA).retval, uint32_t{TC_ACT_REDIRECT});
  auto after = ReadEventStats(bpffs_.path(), EventType::kTrace);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->emitted, before->emitted);
}

TEST_F(MonitorTest, TraceNeedsAnExistingEndpoint) {
  auto none = Monitor::Open({.pin_root = bpffs_.path(), .type = EventType::kTrace});
  EXPECT_TRUE(absl::IsInvalidArgument(none.status())) << none.status();
  auto missing =
      Monitor::Open({.pin_root = bpffs_.path(), .type = EventType::kTrace, .endpoint = 999});
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_NE(missing.status().message().find("no endpoint with id 999"), std::string::npos);
  auto no_pins = Monitor::Open({.pin_root = "/nonexistent-sarena-pins"});
  EXPECT_TRUE(absl::IsNotFound(no_pins.status())) << no_pins.status();
}

TEST_F(MonitorTest, ASecondLoadReusesThePinnedRingBuffer) {
  const std::string pin = bpffs_.path() + "/" + SARENA_MAP_EVENTS;
  auto first = bpf::RawMap::FromPin(pin);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->info().type, uint32_t{BPF_MAP_TYPE_RINGBUF});
  EXPECT_EQ(first->info().max_entries, SARENA_EVENTS_RINGBUF_BYTES);
  auto m = Open(EventType::kDrop);
  ASSERT_NE(m, nullptr);
  // A restarted sarenad: the objects are loaded again over the same pins.
  objs_.reset();
  auto again = Objects::Load({.pin_root = bpffs_.path()});
  ASSERT_TRUE(again.ok()) << again.status();
  objs_.emplace(std::move(*again));
  auto second = bpf::RawMap::FromPin(pin);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->info().id, first->info().id) << "the pinned ring buffer was reused";
  // The monitor opened before the reload reads what the new programs write.
  auto ttl = BuildIpv4({.saddr = kA.ip, .daddr = kB.ip, .ttl = 1});
  ASSERT_EQ(FromContainer(ttl, kA).retval, uint32_t{TC_ACT_SHOT});
  std::vector<Event> evs = Drain(*m);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].reason, SARENA_DROP_TTL_EXCEEDED);
}

}  // namespace
}  // namespace sarena::datapath
