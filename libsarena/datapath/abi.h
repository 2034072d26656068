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
using Config = ::sarena_config;
using EndpointCounters = ::sarena_ep_counters;
using DropCounter = ::sarena_drop_counter;
using FlowKey = ::sarena_flow_key;

/// The endpoint-map key of an IPv4 address: family SARENA_FAMILY_IPV4, addr[0..3] = the address
/// in network byte order, the rest zero, `cluster_id` (0 = this cluster).
EndpointKey MakeEndpointKey(const net::Ipv4& ip, uint16_t cluster_id = 0);

/// The IPv4 address of an endpoint key, or nullopt when its family is not IPv4.
std::optional<net::Ipv4> EndpointKeyIpv4(const EndpointKey& key);

/// Builds an endpoint-map value. `ifindex` = host-side veth, `pod_mac` = the pod interface's MAC,
/// `host_mac` = the host-side veth's MAC (the pod's gateway MAC), `endpoint_id` indexes the
/// per-endpoint counter array and must be < SARENA_MAX_ENDPOINTS.
Endpoint MakeEndpoint(uint32_t ifindex, const net::Mac& pod_mac, const net::Mac& host_mac,
                      uint32_t endpoint_id, uint32_t flags = 0);

/// Byte-wise equality of ABI structs (they have no implicit padding; see the static_asserts).
bool Equal(const EndpointKey& a, const EndpointKey& b);
bool Equal(const Endpoint& a, const Endpoint& b);

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
/// "none", "ttl_exceeded", "truncated", "no_endpoint", "redirect_failed", "no_config",
/// "bad_ip_header", "spoofed_source"; "reason_N" for values >= SARENA_DROP_REASON_MAX.
std::string DropReasonName(uint32_t reason);
/// One-line explanation of a drop reason (from SARENA_DROP_REASONS in sarena/abi.h), for CLI
/// and docs; "unknown drop reason" for values outside the list.
std::string DropReasonDescription(uint32_t reason);

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_ABI_H_
