// ns/packet of the datapath programs through BPF_PROG_TEST_RUN, side by side with an empty tc
// program (noop). Needs root. Each benchmark iteration is one BPF_PROG_TEST_RUN syscall running
// the program `repeat` times in the kernel; the reported time is the kernel's own measurement
// (manual time = mean ns per run * repeat), so syscall and skb setup costs are excluded.
//
// Note: the kernel runs the repetitions on the same skb, so a program that rewrites the packet
// sees its own output: local delivery decrements the TTL each run, hence TTL 255 and repeat 200
// (fewer than 254 runs, so every run takes the delivery path, never the TTL drop).
//
//   sudo ./bpf_test_run_bench --benchmark_counters_tabular=true
#include <arpa/inet.h>
#include <linux/pkt_cls.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "libsarena/bpf/bpffs.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/bpf/test_run.h"
#include "libsarena/datapath/abi.h"

namespace {

using sarena::datapath::Objects;
using sarena::datapath::Program;

constexpr uint32_t kRepeat = 200;
constexpr uint32_t kSrcIfindex = 1010;

// A private bpffs for the benchmark's pins, removed at exit.
struct Env {
  std::string dir;
  std::optional<Objects> objs;
  Env() {
    char tmpl[] = "/tmp/sarena-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    auto mounted = sarena::bpf::EnsureBpffs(dir);
    if (!mounted.ok()) Die(mounted.status().ToString());
    auto o = Objects::Load({.pin_root = dir});
    if (!o.ok()) Die(o.status().ToString());
    objs.emplace(std::move(*o));
    const auto& m = objs->maps();
    sarena::datapath::Config cfg = {};
    cfg.node_ip_be = htonl(0x0af40101);  // 10.244.1.1
    cfg.host_ifindex = 500;
    cfg.net_ifindex = 501;
    cfg.flags = SARENA_CFG_F_REDIRECT_PEER;
    cfg.pod_cidr_be = htonl(0x0af40100);
    cfg.pod_cidr_len = 24;
    Check(m.config.Write(cfg));
    for (uint32_t i = 10; i < 12; ++i) {
      // Put: the hash entry and its slot (the programs' fast path), as sarenad writes them.
      Check(m.endpoints.Put(sarena::net::Ipv4(0x0af40100 + i),
                            sarena::datapath::MakeEndpoint(1000 + i, {0x0a, 0, 0, 0, 0, uint8_t(i)},
                                                           {0x02, 0, 0, 0, 0, uint8_t(i)}, i)));
    }
  }
  ~Env() {
    objs.reset();
    umount2(dir.c_str(), MNT_DETACH);
    rmdir(dir.c_str());
  }
  static void Die(const std::string& msg) {
    std::fprintf(stderr, "bpf_test_run_bench: %s\n", msg.c_str());
    std::exit(1);
  }
  static void Check(const absl::Status& s) {
    if (!s.ok()) Die(s.ToString());
  }
};

Env& GetEnv() {
  static Env* env = new Env();  // deleted at the end of main()
  return *env;
}

// Ethernet + IPv4 + TCP (64 bytes) from 10.244.1.10:40000 to `dst`:8080, TTL 255.
std::vector<uint8_t> Packet(uint32_t dst_host_order) {
  std::vector<uint8_t> p(14 + 20 + 20 + 10, 0);
  p[12] = 0x08;
  p[14] = 0x45;
  uint16_t tot = htons(static_cast<uint16_t>(p.size() - 14));
  std::memcpy(&p[16], &tot, 2);
  p[22] = 255;
  p[23] = 6;
  uint32_t s = htonl(0x0af4010a), d = htonl(dst_host_order);
  std::memcpy(&p[26], &s, 4);
  std::memcpy(&p[30], &d, 4);
  uint32_t sum = 0;
  for (int i = 14; i < 34; i += 2) sum += (p[i] << 8) | p[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  p[24] = static_cast<uint8_t>(~sum >> 8);
  p[25] = static_cast<uint8_t>(~sum);
  p[34] = 40000 >> 8;
  p[35] = 40000 & 0xff;
  p[36] = 8080 >> 8;
  p[37] = 8080 & 0xff;
  return p;
}

void RunProgram(benchmark::State& state, Program prog, uint32_t dst, uint32_t want_retval) {
  Env& env = GetEnv();
  int fd = env.objs->prog_fd(prog);
  const std::vector<uint8_t> pkt = Packet(dst);
  sarena::bpf::TestRunOptions opts{.repeat = kRepeat, .ifindex = 1,
                                   .ingress_ifindex = kSrcIfindex};
  double total_ns = 0;
  for (auto _ : state) {
    auto r = sarena::bpf::TestRun(fd, pkt, opts);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      break;
    }
    if (r->retval != want_retval) {
      state.SkipWithError("unexpected verdict");
      break;
    }
    total_ns += double(r->duration_ns) * kRepeat;
    state.SetIterationTime(double(r->duration_ns) * kRepeat * 1e-9);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * kRepeat);
  state.counters["ns_per_pkt"] =
      state.iterations() ? total_ns / (double(state.iterations()) * kRepeat) : 0;
}

void BM_Noop(benchmark::State& state) {
  RunProgram(state, Program::kNoop, 0x0af4010b, TC_ACT_OK);
}
void BM_FromContainerLocalDelivery(benchmark::State& state) {
  RunProgram(state, Program::kFromContainer, 0x0af4010b, TC_ACT_REDIRECT);  // to 10.244.1.11
}
void BM_FromContainerToHost(benchmark::State& state) {
  RunProgram(state, Program::kFromContainer, 0x08080808, TC_ACT_OK);  // to 8.8.8.8: host stack
}
void BM_FromHostLocalDelivery(benchmark::State& state) {
  RunProgram(state, Program::kFromHost, 0x0af4010b, TC_ACT_REDIRECT);
}

BENCHMARK(BM_Noop)->UseManualTime();
BENCHMARK(BM_FromContainerLocalDelivery)->UseManualTime();
BENCHMARK(BM_FromContainerToHost)->UseManualTime();
BENCHMARK(BM_FromHostLocalDelivery)->UseManualTime();

}  // namespace

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::fprintf(stderr, "bpf_test_run_bench: needs root (BPF_PROG_TEST_RUN, bpffs mount)\n");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  delete &GetEnv();
  return 0;
}
