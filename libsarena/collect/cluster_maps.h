// The cluster datapath maps of a sarena node (bpf/include/sarena/abi.h: SARENA_MAP_OVERLAY_CONFIG,
// SARENA_MAP_CONFIG, SARENA_MAP_TUNNELS, SARENA_MAP_PEERS, SARENA_MAP_NODE_COUNTERS) read from
// their pins and written as nodes/<node>/sarena-cluster.json (docs/diag-snapshot.md), the file
// libsarena/model/sarena_cluster.h parses. Read through the map classes of datapath/maps.h,
// opened read-only (BPF_F_RDONLY), so collecting can never change a node's datapath.
#ifndef LIBSARENA_COLLECT_CLUSTER_MAPS_H_
#define LIBSARENA_COLLECT_CLUSTER_MAPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sarena/abi.h"

namespace sarena::collect {

/// The raw map contents, exactly the abi structs (fields ending in _be / address bytes in network
/// byte order). A section is nullopt when its map is not pinned.
struct ClusterMaps {
  std::optional<sarena_overlay_config> overlay;  // key 0
  std::optional<sarena_config> config;           // key 0 (only pod_cidr and node_ip are written)
  std::optional<std::vector<std::pair<sarena_tunnel_key, sarena_tunnel>>> tunnels;
  std::optional<std::vector<std::pair<sarena_peer_key, sarena_peer>>> peers;
  /// Non-zero rows of the per-node counters, summed over CPUs, by node id.
  std::vector<std::pair<uint32_t, sarena_node_counters>> node_counters;

  /// True when no cluster map is pinned (a one-node sarenad): nothing to write.
  bool empty() const { return !overlay && !tunnels && !peers; }
};

/// Opens <pin_root>/sarena_ovl, sarena_cfg, sarena_tun, sarena_peers, sarena_node_ctr (each
/// optional: a missing pin leaves its section empty, with a line in `notes`). Errors: a pin that
/// exists but has another key/value layout (kFailedPrecondition naming the map and sizes), or a
/// read failure (ErrnoStatus).
absl::StatusOr<ClusterMaps> ReadClusterMaps(absl::string_view pin_root,
                                            std::vector<std::string>* notes);

/// sarena-cluster.json text of `maps`: the protobuf JSON of sarena.snapshot.v1.SarenaClusterFile
/// (model/proto/sarena_node.proto, printed by model::PrintProtoJson), entries sorted: tunnels by
/// CIDR, peers by address. Addresses are printed from network byte order as dotted quads; IPv6
/// entries (family SARENA_FAMILY_IPV6) are written with their text form and skipped by today's
/// reader; an entry with an unknown family or mode is written with the raw number as its text
/// ("family": "7") so the reader rejects it by name instead of this writer guessing.
std::string FormatClusterMaps(const ClusterMaps& maps);

}  // namespace sarena::collect

#endif  // LIBSARENA_COLLECT_CLUSTER_MAPS_H_
