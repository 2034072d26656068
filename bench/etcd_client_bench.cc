// Latency of sarena::cluster::EtcdClient (Boost.Beast, HTTP/1.1 + JSON to etcd's gateway) on a
// running etcd: put and range of a ~300-byte node record on a kept-alive connection, and with a
// new connection per operation (what a one-shot CLI pays). Run by bench/etcd_client_bench.sh,
// which starts a private etcd and compares with etcdctl (gRPC, Go) on the same etcd.
//   SARENA_ETCD_ENDPOINT=unix:///tmp/x/etcd.sock:2379 build/bench/etcd_client_bench
#include <cstdlib>
#include <string>

#include "benchmark/benchmark.h"
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

}  // namespace

BENCHMARK_MAIN();
