// Example: read a running node's datapath straight from its pinned BPF maps with libsarena —
// every endpoint-map entry with its per-CPU counters summed, and the drop reasons. The maps are
// opened read-only (Maps::OpenPinned): this program cannot change the datapath it reads.
//   example_list_endpoints [BPFFS_DIR]     (default /sys/fs/bpf/sarena; root)
#include <cstdio>
#include <string>

#include "libsarena/datapath/objects.h"
#include "libsarena/datapath/abi.h"

int main(int argc, char** argv) {
  const std::string pins = argc > 1 ? argv[1] : "/sys/fs/bpf/sarena";
  absl::StatusOr<sarena::datapath::Maps> maps = sarena::datapath::Maps::OpenPinned(pins);
  if (!maps.ok()) {
    std::fprintf(stderr, "%s\n", std::string(maps.status().message()).c_str());
    return 1;
  }
  absl::Status st = maps->endpoints.ForEach([&](const sarena::datapath::EndpointKey& key,
                                                const sarena::datapath::Endpoint& ep) {
    absl::StatusOr<sarena::datapath::EndpointCounters> c =
        maps->ep_counters.Read(ep.endpoint_id);
    std::printf("%-15s %s rx=%llu tx=%llu\n", sarena::datapath::FormatEndpointKey(key).c_str(),
                sarena::datapath::FormatEndpoint(ep).c_str(),
                c.ok() ? static_cast<unsigned long long>(c->rx_packets) : 0ULL,
                c.ok() ? static_cast<unsigned long long>(c->tx_packets) : 0ULL);
    return true;
  });
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
    return 1;
  }
  absl::StatusOr<std::vector<sarena::datapath::DropCounter>> drops = maps->drops.ReadAll();
  if (drops.ok()) {
    for (size_t i = 1; i < drops->size(); ++i) {
      if ((*drops)[i].packets == 0) continue;
      std::printf("drop %-16s %llu packets\n",
                  sarena::datapath::DropReasonName(static_cast<uint32_t>(i)).c_str(),
                  static_cast<unsigned long long>((*drops)[i].packets));
    }
  }
  return 0;
}
