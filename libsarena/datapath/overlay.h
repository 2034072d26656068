// The cluster half of a node's datapath (docs/cluster.md; docs/architecture.md "The datapath's
// verdicts", cluster datapath): the sarena_vxlan device, the programs on it and on the uplink, the
// overlay config, and the sync of a desired peer list into the tunnel map, the peer map and the
// node's routes.
//
// Devices and hooks (tunnel and hybrid modes create sarena_vxlan; native does not):
//   sarena_vxlan  collect-metadata ("external") VXLAN, UDP port --tunnel-port, outer UDP
//                 checksum zero, learning off, ARP off, MTU = uplink MTU - 50 (RFC 7348: 14 inner
//                 Ethernet + 8 VXLAN + 8 UDP + 20 outer IPv4);
//                 TCX ingress from_overlay, TCX egress to_overlay
//   <uplink>      TCX ingress from_netdev (off-node clients; native delivery; fails open)
// Routes (protocol RouteProtocol::kSarena, main table):
//   unreachable <cluster CIDR>                            unknown pod addresses never take the
//                                                         default route
//   <peer pod CIDR> dev sarena_vxlan scope link src <node IP>       tunnel peers
//   <peer pod CIDR> via <peer underlay> dev <uplink> src <node IP>  native peers
// Strict rp_filter stays safe: a peer's pod CIDR is routed through the device its traffic
// arrives on (sarena_vxlan for tunnel peers, the uplink for native ones).
#ifndef LIBSARENA_DATAPATH_OVERLAY_H_
#define LIBSARENA_DATAPATH_OVERLAY_H_

#include <cstdint>
#include <map>
#include <utility>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "libsarena/datapath/datapath.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/socket.h"

namespace sarena::datapath {

/// Orders prefixes by (network, length); boost::asio::ip::network_v4 has no ordering.
struct Ipv4PrefixLess {
  bool operator()(const net::Ipv4Prefix& a, const net::Ipv4Prefix& b) const {
    return std::make_pair(a.network().to_uint(), a.prefix_length()) <
           std::make_pair(b.network().to_uint(), b.prefix_length());
  }
};

/// Name of the collect-metadata VXLAN device.
inline constexpr absl::string_view kVxlanDevice = "sarena_vxlan";
/// Bytes VXLAN over IPv4 adds to an inner IP packet (RFC 7348 section 5: outer IPv4 20 + UDP 8
/// + VXLAN 8 + inner Ethernet 14).
inline constexpr uint32_t kVxlanOverhead = 50;

/// --routing-mode.
enum class RoutingMode {
  kTunnel,  // every peer through sarena_vxlan
  kNative,  // every peer routed on the underlay (the underlay must route pod CIDRs, or the peers
            // share an L2 segment)
  kHybrid,  // native toward peers on the uplink's own subnet, tunnel toward the others
            // (Calico's vxlanMode: CrossSubnet)
};
/// "tunnel", "native", "hybrid".
absl::string_view ToString(RoutingMode mode);
/// Inverse of ToString. Errors: kInvalidArgument naming `field` and the value.
absl::StatusOr<RoutingMode> ParseRoutingMode(absl::string_view text,
                                             absl::string_view field = "--routing-mode");

/// The largest pod MTU `mode` allows over an uplink of `uplink_mtu` bytes: the uplink MTU in
/// native mode, minus kVxlanOverhead when any peer may be reached through the tunnel (tunnel,
/// hybrid). `uplink_mtu` must be > kVxlanOverhead (Overlay::Setup checks it).
inline uint32_t MaxPodMtu(RoutingMode mode, uint32_t uplink_mtu) {
  return mode == RoutingMode::kNative ? uplink_mtu : uplink_mtu - kVxlanOverhead;
}

/// The node's uplink as the overlay needs it.
struct Uplink {
  nl::Link link;              // the device (--uplink)
  net::Ipv4Prefix address;    // its first IPv4 address with prefix (the underlay address/subnet)
};

/// Finds `ifname` and its first IPv4 address in the calling thread's namespace.
/// Errors: kNotFound naming the device when absent; kFailedPrecondition when it has no IPv4
/// address or is down.
absl::StatusOr<Uplink> FindUplink(nl::Socket& sock, absl::string_view ifname);

/// How to bring the cluster datapath up (sarenad's cluster flags).
struct OverlayOptions {
  RoutingMode mode = RoutingMode::kTunnel;
  std::string uplink;           // --uplink
  uint32_t vni = 1;             // --vni, 1 .. 2^24-1
  uint16_t tunnel_port = 8472;  // --tunnel-port, UDP, host byte order (Linux VXLAN default)
  net::Ipv4Prefix cluster_cidr; // --cluster-cidr
  net::Ipv4 node_ip;            // this node's gateway address (src of the peer routes)
  uint32_t node_id = 0;         // from the registry, < SARENA_MAX_PEERS
  /// How often Sync re-reads the maps and routes from the kernel instead of trusting what it
  /// applied last (repairs entries someone else changed or removed).
  absl::Duration resync_interval = absl::Seconds(60);
  /// This node's own pod CIDR (from the registry). Sync refuses a peer pod CIDR that overlaps
  /// it: a route or tunnel entry for it would send this node's own pods' traffic (and the
  /// replies to its node IP) into the tunnel. Unset: no such check (tests of Sync alone).
  std::optional<net::Ipv4Prefix> pod_cidr;
};

/// One peer as the sync needs it (built from the cluster's desired peer table).
struct PeerRoute {
  std::string name;                        // node name, for logs
  uint32_t node_id = 0;                    // < SARENA_MAX_PEERS
  net::Ipv4 underlay;                      // the peer's uplink address
  std::vector<net::Ipv4Prefix> pod_cidrs;  // its pod CIDRs (IPv4)
};

/// What one Sync changed.
struct SyncStats {
  int tunnels_written = 0, tunnels_removed = 0;
  int peers_written = 0, peers_removed = 0;
  int routes_written = 0, routes_removed = 0;
  /// Peers or entries that could not be applied (each also logged); the rest was applied.
  std::vector<std::string> problems;
  /// This Sync read the kernel's maps and routes back (first Sync, after a failed write, or
  /// resync_interval passed) instead of diffing against what the previous Sync applied.
  bool full_read = false;
};

/// The mode used toward `peer` given the node's mode and uplink subnet (hybrid: native when
/// the peer's underlay address is inside `uplink_subnet`). Returns SARENA_MODE_TUNNEL or
/// SARENA_MODE_NATIVE.
uint8_t PeerMode(RoutingMode mode, const net::Ipv4Prefix& uplink_subnet, const net::Ipv4& peer);

class Overlay {
 public:
  /// Creates (or adopts, after a restart, without touching traffic) sarena_vxlan in tunnel and
  /// hybrid modes, attaches from_overlay/to_overlay to it and from_netdev to the uplink through
  /// `dp` (pinned links, updated in place), writes the overlay config and the cluster-CIDR
  /// unreachable route. Call from the node's namespace, before any Sync.
  /// Errors: kNotFound / kFailedPrecondition from FindUplink; kFailedPrecondition when a
  /// sarena_vxlan exists that is not a collect-metadata VXLAN on `tunnel_port` (it is not
  /// ours: nothing is changed); kInvalidArgument for a VNI out of range, a node id
  /// >= SARENA_MAX_PEERS, or a node IP outside the cluster CIDR; netlink and BPF errors.
  static absl::StatusOr<std::unique_ptr<Overlay>> Setup(const OverlayOptions& options,
                                                        Datapath& dp);

  /// Makes the tunnel map, the peer map and the kSarena routes equal to `peers` (this node
  /// excluded by the caller): writes only what differs, removes what no peer claims. The
  /// difference is taken against what the previous Sync applied (O(changes) syscalls); the
  /// kernel state is read back on the first Sync, after a failed write and every
  /// OverlayOptions::resync_interval. Safe to
  /// call from another thread than the endpoint life cycle's (own netlink socket and map fds).
  /// A peer that cannot be applied (a pod CIDR outside the cluster CIDR or overlapping this
  /// node's OverlayOptions::pod_cidr, an underlay address that is this node's own, a node id out
  /// of range, a refused write) is skipped (only that pod CIDR, or the whole peer) and named in
  /// SyncStats::problems; the others are applied, so
  /// one bad record never withdraws the rest. Errors: only when the maps or routes cannot be
  /// read (BPF/netlink errors).
  absl::StatusOr<SyncStats> Sync(const std::vector<PeerRoute>& peers);

  /// Pod MTU to use on this node: uplink MTU - 50 with a tunnel, the uplink MTU otherwise.
  uint32_t pod_mtu() const;
  const Uplink& uplink() const { return uplink_; }
  const OverlayOptions& options() const { return options_; }
  /// The per-node counters of `node_id` summed over CPUs. kInvalidArgument when out of range.
  absl::StatusOr<NodeCounters> Counters(uint32_t node_id) const {
    return maps_.node_counters.Read(node_id);
  }
  /// sarena_vxlan's ifindex (0 in native mode).
  int vxlan_ifindex() const { return vxlan_ifindex_; }

  /// The desired kernel route for one peer CIDR (exposed for tests and the diagnoser's model).
  nl::Route PeerCidrRoute(const net::Ipv4Prefix& cidr, uint8_t mode,
                          const net::Ipv4& underlay) const;

 private:
  Overlay(OverlayOptions options, nl::Socket sock, Uplink uplink, int vxlan_ifindex, Maps maps)
      : options_(std::move(options)),
        sock_(std::move(sock)),
        uplink_(std::move(uplink)),
        vxlan_ifindex_(vxlan_ifindex),
        maps_(std::move(maps)) {}

  struct Applied {
    bool valid = false;
    absl::Time read_at;
    std::map<net::Ipv4, uint32_t> peers;
    std::map<net::Ipv4Prefix, Tunnel, Ipv4PrefixLess> tunnels;
    std::map<net::Ipv4Prefix, nl::Route, Ipv4PrefixLess> routes;
  };

  OverlayOptions options_;
  Applied applied_;
  nl::Socket sock_;
  Uplink uplink_;
  int vxlan_ifindex_ = 0;
  Maps maps_;
};

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_OVERLAY_H_
