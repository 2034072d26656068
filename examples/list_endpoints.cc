// Example: read a running node's datapath straight from its pinned BPF maps with libsarena —
// every endpoint-map entry with its per-CPU counters summed, and the drop reasons.
//   example_list_endpoints [BPFFS_DIR]     (default /sys/fs/bpf/sarena; root)
#include <cstdio>
#include <string>

#include "libsarena/bpf/objects.h"
#include "libsarena/bpf/types.h"

int main(int argc, char** argv) {
  const std::string pins = argc > 1 ? argv[1] : "/sys/fs/bpf/sarena";
  absl::StatusOr<sarena::bpf::Maps> maps = sarena::bpf::Maps::FromPinRoot(pins);
  if (!maps.ok()) {
    std::fprintf(stderr, "%s\n", std::string(maps.status().message()).c_str());
    return 1;
  }
  absl::Status st = maps->endpoints.ForEach([&](const sarena::bpf::EndpointKey& key,
                                                const sarena::bpf::Endpoint& ep) {
    absl::StatusOr<sarena::bpf::EndpointCounters> c =
        maps->ReadEndpointCounters(ep.endpoint_id);
    std::printf("%-15s %s rx=%llu tx=%llu\n", sarena::bpf::FormatEndpointKey(key).c_str(),
                sarena::bpf::FormatEndpoint(ep).c_str(),
                c.ok() ? static_cast<unsigned long long>(c->rx_packets) : 0ULL,
                c.ok() ? static_cast<unsigned long long>(c->tx_packets) : 0ULL);
    return true;
  });
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
    return 1;
  }
  absl::StatusOr<std::vector<sarena::bpf::DropCounter>> drops = maps->ReadDrops();
  if (drops.ok()) {
    for (size_t i = 1; i < drops->size(); ++i) {
      if ((*drops)[i].packets == 0) continue;
      std::printf("drop %-16s %llu packets\n",
                  sarena::bpf::DropReasonName(static_cast<uint32_t>(i)).c_str(),
                  static_cast<unsigned long long>((*drops)[i].packets));
    }
  }
  return 0;
}
