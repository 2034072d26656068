// A sarena node's cluster datapath state as `sarena-diag collect` dumps it into
// nodes/<node>/sarena-cluster.json (docs/diag-snapshot.md, "sarena-cluster.json"; the file is the
// protobuf JSON of sarena.snapshot.v1.SarenaClusterFile, model/proto/sarena_node.proto): the overlay
// config (SARENA_MAP_OVERLAY_CONFIG), the node config's pod CIDR (SARENA_MAP_CONFIG), the tunnel
// map (SARENA_MAP_TUNNELS: remote pod CIDR -> peer underlay, mode, node id), the peer map
// (SARENA_MAP_PEERS: underlay address -> node id) and the per-node counters
// (SARENA_MAP_NODE_COUNTERS, summed over CPUs). Layouts: bpf/include/sarena/abi.h. Addresses are
// dotted-quad text (byte order is not a question in the file); every section is optional (absent
// = that map was not pinned on the node, e.g. a one-node sarenad; an absent list reads as empty).
#ifndef LIBSARENA_MODEL_SARENA_CLUSTER_H_
#define LIBSARENA_MODEL_SARENA_CLUSTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/snapshot_layout.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

/// Routing mode of a tunnel entry (abi.h SARENA_MODE_*): "tunnel" = 1, "native" = 2.
enum class SarenaMode { kUnknown = 0, kTunnel = 1, kNative = 2 };
/// "tunnel" | "native" | "unknown".
absl::string_view ToString(SarenaMode mode);

/// struct sarena_overlay_config. `flags` are SARENA_OVL_F_* (bit 0 tunnel, bit 1 native);
/// flags == 0 is one-node mode (the cross-node branches are off, the programs pass).
struct SarenaOverlay {
  uint32_t flags = 0;
  uint32_t vni = 0;  // 24 bits
  uint32_t vxlan_ifindex = 0;
  uint32_t uplink_ifindex = 0;
  uint32_t node_id = 0;
  std::optional<net::Mac> vxlan_mac;
  std::optional<net::Mac> uplink_mac;
  std::optional<net::Ipv4> underlay;            // this node's underlay address
  std::optional<net::Ipv4Prefix> cluster_cidr;  // unset when cluster_cidr_len was 0

  bool tunnel() const { return flags & 0x1u; }
  bool native() const { return flags & 0x2u; }
  bool enabled() const { return flags != 0; }
};

/// One tunnel-map entry (key sarena_tunnel_key, value sarena_tunnel), IPv4 only (IPv6 entries are
/// skipped by the reader until the walk models IPv6).
struct SarenaTunnel {
  net::Ipv4Prefix cidr;  // remote pod CIDR
  net::Ipv4 underlay;    // peer's underlay address
  SarenaMode mode = SarenaMode::kUnknown;
  uint32_t node_id = 0;
  uint32_t flags = 0;  // SARENA_TUN_F_*

  /// SARENA_TUN_F_NODE: a tunnel-mode peer's own underlay address (/32), not a pod CIDR; no
  /// kernel route belongs to it (the underlay address stays routed on the uplink).
  bool node_address() const { return flags & 0x1u; }
};

/// One peer-map entry (sarena_peer_key -> sarena_peer).
struct SarenaPeer {
  net::Ipv4 underlay;
  uint32_t node_id = 0;
  uint32_t flags = 0;
};

/// One row of the per-node counters (struct sarena_node_counters summed over CPUs); only
/// non-zero rows are dumped.
struct SarenaNodeCounters {
  uint32_t node_id = 0;
  uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
};

/// The whole file. `overlay`, `pod_cidr` and `node_ip` are nullopt when absent from the file; an
/// absent list is empty (the map not pinned and an empty map are alike to the walk).
struct SarenaCluster {
  std::optional<SarenaOverlay> overlay;
  /// sarena_config.pod_cidr (this node's pod CIDR as the programs see it).
  std::optional<net::Ipv4Prefix> pod_cidr;
  std::optional<net::Ipv4> node_ip;  // sarena_config.node_ip (the pods' gateway)
  std::vector<SarenaTunnel> tunnels;  // IPv4 entries, in file order
  std::vector<SarenaPeer> peers;      // IPv4 entries, in file order
  std::vector<SarenaNodeCounters> node_counters;

  /// Longest-prefix match of `ip` in `tunnels` (what the LPM trie answers); null on a miss.
  const SarenaTunnel* LookupTunnel(const net::Ipv4& ip) const;
  /// The peer-map entry of `underlay`, or null.
  const SarenaPeer* FindPeer(const net::Ipv4& underlay) const;
};

/// Parses sarena-cluster.json (model/proto_json.h ParseProtoJson, then each field checked).
/// Errors: kInvalidArgument "parse <file>: <path>: <cause>" naming the field (a value of the
/// wrong JSON type, an address that is not IPv4 text, a mode other than "tunnel"/"native", a
/// family other than "ipv4"/"ipv6", a number out of range such as a vni above 2^24-1 or a
/// node_id >= SARENA_MAX_PEERS (16384)), and a tunnel whose cidr repeats an earlier entry's
/// ("parse <file>: tunnels[j].cidr: duplicate key '<cidr>': tunnels[i] has it too": the tunnel
/// map is an LPM trie keyed by the prefix, so a dump has one entry per prefix; never resolved by
/// order). IPv6 tunnel and peer entries are skipped.
absl::StatusOr<SarenaCluster> ParseSarenaCluster(absl::string_view json,
                                                 absl::string_view file = kSarenaClusterFile);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_SARENA_CLUSTER_H_
