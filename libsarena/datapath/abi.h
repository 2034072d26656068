// C++ helpers for the ABI structs of sarena/abi.h (the one definition of map keys and values):
// building keys from addresses, reading them back, formatting, summing per-CPU counters and
// naming drop reasons.
#ifndef LIBSARENA_DATAPATH_ABI_H_
#define LIBSARENA_DATAPATH_ABI_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "libsarena/net/ip.h"
#include "sarena/abi.h"

namespace sarena::datapath {

using EndpointKey = ::sarena_endpoint_key;
using Endpoint = ::sarena_endpoint;
using EndpointSlot = ::sarena_endpoint_slot;
using Config = ::sarena_config;
using EndpointCounters = ::sarena_ep_counters;
using DropCounter = ::sarena_drop_counter;
using FlowKey = ::sarena_flow_key;
using TunnelKey = ::sarena_tunnel_key;
using Tunnel = ::sarena_tunnel;
using PeerKey = ::sarena_peer_key;
using Peer = ::sarena_peer;
using OverlayConfig = ::sarena_overlay_config;
using NodeCounters = ::sarena_node_counters;

/// The endpoint-map key of an IPv4 address: family SARENA_FAMILY_IPV4, addr[0..3] = the address
/// in network byte order, the rest zero, `cluster_id` (0 = this cluster).
EndpointKey MakeEndpointKey(const net::Ipv4& ip, uint16_t cluster_id = 0);

/// The IPv4 address of an endpoint key, or nullopt when its family is not IPv4.
std::optional<net::Ipv4> EndpointKeyIpv4(const EndpointKey& key);

/// The SARENA_MAP_ENDPOINT_SLOTS index of `ip`: its low 16 bits (host order), i.e.
/// ntohl(addr) & (SARENA_ENDPOINT_SLOTS - 1), as bpf/lib/common.h computes it (sarena/abi.h).
inline uint32_t EndpointSlotIndex(const net::Ipv4& ip) {
  return ip.to_uint() & (SARENA_ENDPOINT_SLOTS - 1);
}

/// Builds an endpoint-map value. `ifindex` = host-side veth, `pod_mac` = the pod interface's MAC,
/// `host_mac` = the host-side veth's MAC (the pod's gateway MAC), `endpoint_id` indexes the
/// per-endpoint counter array and must be < SARENA_MAX_ENDPOINTS.
Endpoint MakeEndpoint(uint32_t ifindex, const net::Mac& pod_mac, const net::Mac& host_mac,
                      uint32_t endpoint_id, uint32_t flags = 0);

/// The tunnel-map (LPM trie) key of a remote pod CIDR: prefixlen = 32 + prefix length (the
/// family and pad bytes are matched whole), family IPv4, addr[0..3] = the canonical network in
/// network byte order (host bits of `prefix` are cleared), the rest zero.
TunnelKey MakeTunnelKey(const net::Ipv4Prefix& prefix);
/// The key that looks up the CIDR containing `ip` (prefixlen 32 + 128, as the programs use).
TunnelKey MakeTunnelLookupKey(const net::Ipv4& ip);
/// The IPv4 CIDR of a tunnel key, or nullopt when the family is not IPv4 or prefixlen is not
/// 32..64 (as MakeTunnelKey writes it).
std::optional<net::Ipv4Prefix> TunnelKeyIpv4(const TunnelKey& key);
/// A tunnel-map value: the peer's IPv4 underlay address, its node id (< SARENA_MAX_PEERS) and
/// `mode` this node uses toward it (SARENA_MODE_TUNNEL or SARENA_MODE_NATIVE).
Tunnel MakeTunnel(const net::Ipv4& underlay, uint32_t node_id, uint8_t mode);
/// The IPv4 underlay address of a tunnel value, nullopt when underlay_family is not IPv4.
std::optional<net::Ipv4> TunnelUnderlayIpv4(const Tunnel& tunnel);
/// The peer-map key of an underlay IPv4 address (addr[0..3] network byte order, family IPv4).
PeerKey MakePeerKey(const net::Ipv4& underlay);
/// The IPv4 address of a peer key, nullopt for other families.
std::optional<net::Ipv4> PeerKeyIpv4(const PeerKey& key);
/// "10.244.2.0/24" (or "family F <hex>/len" for other families).
std::string FormatTunnelKey(const TunnelKey& key);
/// "underlay=192.168.1.12 node_id=3 mode=tunnel flags=0x0".
std::string FormatTunnel(const Tunnel& tunnel);
/// "flags=0x1 vni=1 vxlan_ifindex=.. uplink_ifindex=.. node_id=.. vxlan_mac=.. uplink_mac=..
/// underlay=.. cluster_cidr=10.244.0.0/16".
std::string FormatOverlayConfig(const OverlayConfig& cfg);
/// "tunnel", "native", or "mode_N".
std::string RoutingModeName(uint8_t mode);
/// Sums the per-CPU values of one per-node counter entry.
NodeCounters SumCounters(absl::Span<const NodeCounters> per_cpu);

/// Byte-wise equality of ABI structs (they have no implicit padding; see the static_asserts).
bool Equal(const EndpointKey& a, const EndpointKey& b);
bool Equal(const Endpoint& a, const Endpoint& b);
bool Equal(const TunnelKey& a, const TunnelKey& b);
bool Equal(const Tunnel& a, const Tunnel& b);
bool Equal(const OverlayConfig& a, const OverlayConfig& b);

/// "10.244.1.5" for IPv4 keys (plus " cluster N" when cluster_id != 0); "family F <hex>" else.
std::string FormatEndpointKey(const EndpointKey& key);
/// "ifindex=7 pod_mac=aa:.. host_mac=bb:.. endpoint_id=3 flags=0x0".
std::string FormatEndpoint(const Endpoint& ep);
/// "node_ip=10.244.1.1 host_ifindex=.. net_ifindex=.. host_mac=.. net_mac=.. pod_cidr=.../24
/// flags=0x1".
std::string FormatConfig(const Config& cfg);
/// "10.244.1.5:34567 proto 6": the client pod's address and source port (host order in the
/// text) of a pod-opened host flow.
std::string FormatFlowKey(const FlowKey& key);

/// The MAC stored in an ABI struct field.
net::Mac ToMac(const uint8_t (&bytes)[6]);

/// Sums the per-CPU values of one per-endpoint counter entry (PerCpuMap lookup result).
EndpointCounters SumCounters(absl::Span<const EndpointCounters> per_cpu);
/// Sums the per-CPU values of one drop-reason entry.
DropCounter SumCounters(absl::Span<const DropCounter> per_cpu);

/// Stable lower-case name of a drop reason, used in CLI output, JSON and logs:
/// the "name" column of SARENA_DROP_REASONS ("none", "ttl_exceeded", ... "tunnel_key_failed");
/// "reason_N" for values >= SARENA_DROP_REASON_MAX.
std::string DropReasonName(uint32_t reason);
/// One-line explanation of a drop reason (from SARENA_DROP_REASONS in sarena/abi.h), for CLI
/// and docs; "unknown drop reason" for values outside the list.
std::string DropReasonDescription(uint32_t reason);

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_ABI_H_
