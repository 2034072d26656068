// Endpoint-map operations from user space through sarena::bpf::Map: update / lookup / delete,
// one syscall per element vs one BPF_MAP_*_BATCH syscall for all, at 1k and 64k entries.
// The map has the endpoint map's exact shape (HASH, BPF_F_NO_PREALLOC, SARENA_MAX_ENDPOINTS
// entries, sarena_endpoint_key -> sarena_endpoint). Needs root. items_per_second = map ops/s.
//
//   sudo ./bpf_map_bench --benchmark_counters_tabular=true
#include <bpf/bpf.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "benchmark/benchmark.h"
#include "libsarena/bpf/map.h"
#include "libsarena/datapath/abi.h"

namespace {

using EndpointMap = sarena::bpf::Map<sarena::datapath::EndpointKey, sarena::datapath::Endpoint>;

EndpointMap NewMap() {
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
  int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "sarena_bench", sizeof(sarena::datapath::EndpointKey),
                          sizeof(sarena::datapath::Endpoint), SARENA_MAX_ENDPOINTS, &opts);
  if (fd < 0) {
    std::fprintf(stderr, "bpf_map_create failed: %d (root needed)\n", fd);
    std::exit(1);
  }
  auto m = EndpointMap::FromFd(sarena::UniqueFd(fd));
  if (!m.ok()) std::exit(1);
  return *std::move(m);
}

struct Data {
  std::vector<sarena::datapath::EndpointKey> keys;
  std::vector<sarena::datapath::Endpoint> values;
  explicit Data(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      keys.push_back(sarena::datapath::MakeEndpointKey(sarena::net::Ipv4(0x0a000000u + uint32_t(i))));
      values.push_back(sarena::datapath::MakeEndpoint(
          uint32_t(1000 + i), {0x0a, 0, 0, uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i)},
          {0x02, 0, 0, uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i)},
          uint32_t(i % SARENA_MAX_ENDPOINTS)));
    }
  }
};

void Fill(const EndpointMap& m, const Data& d, benchmark::State& state) {
  if (!m.UpdateBatch(d.keys, d.values).ok()) state.SkipWithError("fill failed");
}

void BM_UpdateSingle(benchmark::State& state) {
  Data d(state.range(0));
  EndpointMap m = NewMap();
  Fill(m, d, state);
  for (auto _ : state) {
    for (size_t i = 0; i < d.keys.size(); ++i) {
      if (!m.Update(d.keys[i], d.values[i]).ok()) state.SkipWithError("update failed");
    }
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}

void BM_LookupSingle(benchmark::State& state) {
  Data d(state.range(0));
  EndpointMap m = NewMap();
  Fill(m, d, state);
  for (auto _ : state) {
    for (const auto& k : d.keys) {
      auto v = m.Lookup(k);
      if (!v.ok()) state.SkipWithError("lookup failed");
      benchmark::DoNotOptimize(v);
    }
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}

void BM_DeleteSingle(benchmark::State& state) {
  Data d(state.range(0));
  EndpointMap m = NewMap();
  for (auto _ : state) {
    state.PauseTiming();
    Fill(m, d, state);
    state.ResumeTiming();
    for (const auto& k : d.keys) {
      if (!m.Delete(k).ok()) state.SkipWithError("delete failed");
    }
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}

void BM_UpdateBatch(benchmark::State& state) {
  Data d(state.range(0));
  EndpointMap m = NewMap();
  Fill(m, d, state);
  for (auto _ : state) {
    if (!m.UpdateBatch(d.keys, d.values).ok()) state.SkipWithError("update batch failed");
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}

void BM_LookupBatch(benchmark::State& state) {
  Data d(state.range(0));
  EndpointMap m = NewMap();
  Fill(m, d, state);
  for (auto _ : state) {
    auto all = m.LookupBatch();
    if (!all.ok() || all->size() != d.keys.size()) state.SkipWithError("lookup batch failed");
    benchmark::DoNotOptimize(all);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}

void BM_DeleteBatch(benchmark::State& state) {
  Data d(state.range(0));
  EndpointMap m = NewMap();
  for (auto _ : state) {
    state.PauseTiming();
    Fill(m, d, state);
    state.ResumeTiming();
    if (!m.DeleteBatch(d.keys).ok()) state.SkipWithError("delete batch failed");
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * state.range(0));
}

#define SARENA_MAP_SIZES Arg(1024)->Arg(65536)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_UpdateSingle)->SARENA_MAP_SIZES;
BENCHMARK(BM_UpdateBatch)->SARENA_MAP_SIZES;
BENCHMARK(BM_LookupSingle)->SARENA_MAP_SIZES;
BENCHMARK(BM_LookupBatch)->SARENA_MAP_SIZES;
BENCHMARK(BM_DeleteSingle)->SARENA_MAP_SIZES;
BENCHMARK(BM_DeleteBatch)->SARENA_MAP_SIZES;

}  // namespace

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::fprintf(stderr, "bpf_map_bench: needs root (bpf(2) map creation)\n");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
