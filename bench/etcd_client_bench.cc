// Latency of sarena::cluster::EtcdClient (Boost.Beast, HTTP/1.1 + JSON to etcd's gateway) on a
// running etcd: put and range of a ~300-byte node record on a kept-alive connection, and with a
// new connection per operation (what a one-shot CLI pays). BM_AgentPropagation: a peer's record
// changed by a put (timer starts before the put is sent) until a running Agent's apply
// callback holds the new value — the control-plane share of route propagation. Run by bench/etcd_client_bench.sh,
// which starts a private etcd and compares with etcdctl (gRPC, Go) on the same etcd.
//   SARENA_ETCD_ENDPOINT=unix:///tmp/x/etcd.sock:2379 build/bench/etcd_client_bench
#include <cstdlib>
#include <string>
#include <thread>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "libsarena/cluster/agent.h"
#include "libsarena/cluster/etcd_client.h"

namespace {

std::string Endpoint() {
  const char* e = std::getenv("SARENA_ETCD_ENDPOINT");
  return e ? e : "";
}

const std::string kValue =
    R"({"name":"bench-node","node_id":42,"boot_id":"0b0c5e5e-0000-4000-8000-000000000000",)"
    R"("addresses":[{"family":"IPV4","address":"192.0.2.42"}],)"
    R"("pod_cidrs":[{"family":"IPV4","cidr":"10.244.42.0/24"}],"tunnel_port":8472,"mtu":1500,)"
    R"("routing_mode":"tunnel"})";

void BM_BeastPut(benchmark::State& state) {
  auto c = sarena::cluster::EtcdClient::Create(Endpoint());
  if (!c.ok()) return state.SkipWithError(std::string(c.status().message()).c_str());
  for (auto _ : state) {
    auto r = (*c)->Put("/bench/node", kValue);
    if (!r.ok()) return state.SkipWithError(std::string(r.status().message()).c_str());
  }
}
BENCHMARK(BM_BeastPut)->Unit(benchmark::kMicrosecond)->MinTime(2)->UseRealTime();

void BM_BeastRange(benchmark::State& state) {
  auto c = sarena::cluster::EtcdClient::Create(Endpoint());
  if (!c.ok()) return state.SkipWithError(std::string(c.status().message()).c_str());
  (void)(*c)->Put("/bench/node", kValue);
  for (auto _ : state) {
    auto r = (*c)->Range("/bench/node");
    if (!r.ok() || r->kvs_size() != 1) return state.SkipWithError("range failed");
  }
}
BENCHMARK(BM_BeastRange)->Unit(benchmark::kMicrosecond)->MinTime(2)->UseRealTime();

void BM_BeastPutNewConnection(benchmark::State& state) {
  for (auto _ : state) {
    auto c = sarena::cluster::EtcdClient::Create(Endpoint());
    auto r = (*c)->Put("/bench/node", kValue);
    if (!r.ok()) return state.SkipWithError(std::string(r.status().message()).c_str());
  }
}
BENCHMARK(BM_BeastPutNewConnection)->Unit(benchmark::kMicrosecond)->MinTime(2)->UseRealTime();

void BM_BeastRange5000Records(benchmark::State& state) {
  auto c = sarena::cluster::EtcdClient::Create(Endpoint());
  if (!c.ok()) return state.SkipWithError(std::string(c.status().message()).c_str());
  for (int i = 0; i < 5000; ++i) (void)(*c)->Put("/bench/many/" + std::to_string(i), kValue);
  for (auto _ : state) {
    auto r = (*c)->RangePrefix("/bench/many/", absl::Seconds(30));
    if (!r.ok() || r->kvs_size() != 5000) return state.SkipWithError("range failed");
  }
}
BENCHMARK(BM_BeastRange5000Records)->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();

void BM_AgentPropagation(benchmark::State& state) {
  namespace cl = sarena::cluster;
  absl::Mutex mu;
  std::string seen;  // underlay of "bench-peer" in the last applied table
  cl::AgentOptions o;
  o.endpoints = Endpoint();
  o.node_name = "bench-self";
  o.pod_cidr = *sarena::net::ParseIpv4Prefix("10.99.0.0/24");
  o.underlay = *sarena::net::ParseIpv4("192.0.2.200");
  auto agent = cl::Agent::Create(o, [&](const cl::PeerTable& t) {
    auto it = t.peers.find("bench-peer");
    absl::MutexLock l(&mu);
    seen = it == t.peers.end() ? "" : it->second.underlay.to_string();
    return absl::OkStatus();
  });
  if (!agent.ok()) return state.SkipWithError(std::string(agent.status().message()).c_str());
  if (auto r = (*agent)->Register(absl::Seconds(10)); !r.ok()) {
    return state.SkipWithError(std::string(r.status().message()).c_str());
  }
  (*agent)->Start();
  // Measure steady state: the first list applied and the watch established (a watch opened at a
  // past revision is caught up by etcd's 100 ms sync loop once).
  while (!(*agent)->status().synced) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto c = cl::EtcdClient::Create(Endpoint());
  std::vector<double> samples;
  int i = 0;
  for (auto _ : state) {
    std::string addr = "198.51.100." + std::to_string(1 + (i++ % 250));
    std::string value = R"({"name":"bench-peer","node_id":77,"addresses":[{"family":"IPV4","address":")" +
                        addr + R"("}],"pod_cidrs":[{"family":"IPV4","cidr":"10.98.0.0/24"}]})";
    // From before the put (an upper bound of commit -> apply: it includes the put's own
    // round trip; the apply often lands before the put's answer reaches the client).
    auto t0 = std::chrono::steady_clock::now();
    auto r = (*c)->Put(cl::NodeKey("bench-peer"), value);
    if (!r.ok()) return state.SkipWithError(std::string(r.status().message()).c_str());
    while (true) {
      {
        absl::MutexLock l(&mu);
        if (seen == addr) break;
      }
      std::this_thread::yield();
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    samples.push_back(s);
  }
  std::sort(samples.begin(), samples.end());
  if (!samples.empty()) {
    state.counters["p50_ms"] = samples[samples.size() / 2] * 1e3;
    state.counters["p99_ms"] = samples[samples.size() * 99 / 100] * 1e3;
    state.counters["max_ms"] = samples.back() * 1e3;
  }
  (void)(*c)->DeleteRange(cl::NodeKey("bench-peer"));
}
BENCHMARK(BM_AgentPropagation)->Unit(benchmark::kMicrosecond)->UseManualTime()->Iterations(500);

}  // namespace

BENCHMARK_MAIN();
