// The suspicion codes of the diagnoser: the one list. Each code is stable (docs/architecture.md
// "The diagnoser's contract": add more, never rename), carries the levels it may be reported with
// and one line of meaning. The walk and the plugins report them (PathGraph::AddSuspicion),
// `sarena-diag codes` prints them, the table in docs/diag-snapshot.md lists them, and
// tests/unit/diag_codes_test.cc checks that the three agree and that every code a diagnoser source
// reports is here.
#ifndef LIBSARENA_DIAG_CODES_H_
#define LIBSARENA_DIAG_CODES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "libsarena/diag/path_graph.h"

namespace sarena::diag {

/// Levels a code may carry, as a bit set of 1 << Level. Every code that may be FATAL may also be
/// reported CRITICAL: when only some branches of a fan-out (Service backends, multipath) drop,
/// the walk lowers their FATAL findings to CRITICAL (some packets of the flow are lost).
inline constexpr uint8_t kLevelInfo = 1u << static_cast<int>(Level::kInfo);
inline constexpr uint8_t kLevelWarning = 1u << static_cast<int>(Level::kWarning);
inline constexpr uint8_t kLevelCritical = 1u << static_cast<int>(Level::kCritical);
inline constexpr uint8_t kLevelFatal = 1u << static_cast<int>(Level::kFatal);

// X(code, levels, drop_reasons, meaning). Sorted by code. `levels` uses the kLevel* bits above
// (CRITICAL is implied by FATAL). `drop_reasons` are the kernel drop reasons (enum
// skb_drop_reason without SKB_DROP_REASON_, space-separated) that the mechanism behind the code
// frees the skb with. Each name is in the running kernel's BTF (6.18 here) or in the test's short
// list of names other kernels use (SuspicionCodesTest.DropReasonsAreKernelNames): IP_TTL_EXCEEDED
// (upstream after 6.18; IP_INHDR before), VXLAN_NO_REMOTE (6.13; NO_TX_TARGET since 6.14). This is
// what `trace --live` accepts as the kernel agreeing (diag/evidence.h). Empty for a code that
// names no drop. Source: include/net/dropreason-core.h and these call sites:
// - rp_filter_drop, rp_filter, martian_packet: fib_validate_source() failing in
//   ip_route_input_slow / ip_rcv_finish_core.
// - no_route, fib_lookup_failed: ip_route_input_slow no_route / ip_route_output: ICMP unreachable
//   and the skb dropped; ip_error() names it by the route error: ENETUNREACH -> IP_INNOROUTES
//   (seen on 6.18 for a forwarded packet with no route at all), EHOSTUNREACH -> IP_INADDRERRORS.
// - route_mismatch: neigh_invalidate: the gateway the wrong route picks answers no ARP (FATAL at
//   this hop); a router the route hands unencapsulated pod traffic to has no route for pods
//   (ip_error: ENETUNREACH -> IP_INNOROUTES, EHOSTUNREACH -> IP_INADDRERRORS).
// - ip_forward_disabled, iface_forwarding_disabled: the input route lookup fails as no route
//   (EHOSTUNREACH; ip_error on a device that does not forward: IP_INADDRERRORS).
// - netfilter_drop, tunnel_port_blocked, bridge_netfilter, source_range_denied,
//   external_traffic_policy_local_drop: nf_hook_slow: NF_DROP (DROP, REJECT and kube-proxy's
//   REJECT / DROP rules alike).
// - nat_outgoing_missing: the un-NATed pod address has no route back outside the cluster: a
//   router forwarding the reply finds none (ip_error, ENETUNREACH), or the server's own output
//   route lookup fails (then no skb is freed with a reason: tcp_conn_request counts
//   TcpExtListenDrops).
// - bridge_*: br_forward / br_flood free a frame no port may take (kfree_skb: NOT_SPECIFIED; an
//   unknown unicast nobody takes: NO_TX_TARGET); a flooded frame reaches the pods whose ports
//   still flood (OTHERHOST there); two isolated ports never see each other's ARP (NEIGH_FAILED).
// - service_no_endpoints: ip_route_input_slow -> ip_error: a ClusterIP kube-proxy did not DNAT
//   (no endpoint) has no route on a node without a default one, and routing comes before the
//   filter's REJECT.
// - ttl_exceeded: ip_forward: TTL <= 1 (IP_INHDR; IP_TTL_EXCEEDED where the kernel has it).
// - not_listening: tcp_v4_rcv / __udp4_lib_rcv with no socket (the kernel answers RST / port
//   unreachable).
// - link_down, link_missing: a device down or without carrier on the way (veth_xmit to a down
//   peer, dev not ready); neigh_invalidate: the ARP for the next hop dies in the down link, the
//   queued packet with it; ip_error: fib_sync_down_dev took the routes via the down device, a
//   forwarded packet finds none.
// - neighbor_missing: the neighbour never resolved: the queued packets are freed when the entry
//   fails.
// - neighbor_stale, endpoint_mac_mismatch: a stale cached lladdr / a frame to a MAC the pod does
//   not own: the receiver's eth_type_trans marks the frame PACKET_OTHERHOST.
// - mtu_mismatch, overlay_mtu_too_big: too big with DF: ip_forward / ip_fragment (ICMP frag
//   needed sent back); ____dev_forward_skb (veth_xmit): a frame above the receiving peer's MTU,
//   plain kfree_skb.
// - endpoint_*, program_not_attached, bpf: a tc/TCX BPF program returned TC_ACT_SHOT (sarena's
//   datapath, Calico's, Cilium's).
// - vxlan_fdb_missing, wrong_vni, tunnel_missing, tunnel_entry_missing: vxlan_rcv / vxlan_xmit
//   and the UDP / IP protocol demux of an outer packet nothing takes.
#define SARENA_SUSPICION_CODES(X)                                                                  \
  X("asymmetric_return", kLevelFatal, "NETFILTER_DROP NO_SOCKET TCP_INVALID_SEQUENCE IP_RPFILTER", \
    "the reply reaches the client from another address than it sent to: a NAT was not reversed "   \
    "(the reply bypassed the node, or bridged traffic skipped conntrack)")                         \
  X("bpf", kLevelInfo, "TC_INGRESS TC_EGRESS",                                                     \
    "what a BPF program of the datapath did with the packet at this hop")                          \
  X("bridge_flood", kLevelFatal, "NO_TX_TARGET OTHERHOST NOT_SPECIFIED NEIGH_FAILED",              \
    "a bridge port with learning and unicast flooding off and no fdb entry for the MAC behind "    \
    "it: unknown unicast is flooded to no port (br_flood)")                                        \
  X("bridge_hairpin", kLevelFatal, "NOT_SPECIFIED",                                                \
    "a frame br_netfilter DNAT'ed back to the bridge port it came in by, with hairpin mode off "   \
    "on that port (br_forward: should_deliver; a pod reaching its own Service)")                   \
  X("bridge_isolated", kLevelFatal, "NOT_SPECIFIED NEIGH_FAILED",                                  \
    "a frame switched between two isolated ports of a bridge (br_skb_isolated)")                   \
  X("bridge_netfilter", kLevelInfo, "NETFILTER_DROP",                                              \
    "whether bridged traffic passes iptables (br_netfilter, bridge-nf-call-iptables)")             \
  X("cluster_exit", kLevelInfo, "",                                                                \
    "the packet leaves the cluster through a node's uplink that is a veth (kind, k3d: its peer "   \
    "is in the container host's network)")                                                         \
  X("cross_subnet", kLevelInfo, "",                                                                \
    "Calico CrossSubnet decided from the node address's real prefix length (a /32 has no peer "    \
    "in its subnet, so every peer is encapsulated), or the annotation disagrees with the "         \
    "interface")                                                                                   \
  X("decap", kLevelInfo, "", "a tunnel device decapsulated the packet at this hop")                \
  X("dnat", kLevelInfo, "",                                                                        \
    "a DNAT (a Service's backend chosen by kube-proxy's rules) at this hop")                       \
  X("endpoint_ifindex_mismatch", kLevelFatal, "TC_INGRESS TC_EGRESS",                              \
    "sarena: the endpoint entry redirects to another device than the pod's veth")                  \
  X("endpoint_mac_mismatch", kLevelInfo, "OTHERHOST TC_INGRESS TC_EGRESS",                         \
    "sarena: the endpoint entry's MAC differs from the live veth MAC (the datapath rewrites "      \
    "it; reported for context)")                                                                   \
  X("endpoint_map_missing", kLevelFatal | kLevelWarning, "TC_INGRESS TC_EGRESS",                   \
    "sarena: a local pod address has no endpoint-map entry (from_host / from_container drop "      \
    "it), or the map could not be read")                                                           \
  X("external_source", kLevelInfo, "", "the packet comes from outside the snapshot's namespaces")  \
  X("external_traffic_policy_local_drop", kLevelFatal, "NETFILTER_DROP",                           \
    "externalTrafficPolicy: Local and no ready endpoint on this node: kube-proxy drops "           \
    "external traffic to the NodePort / LoadBalancer here")                                        \
  X("fib_lookup_failed", kLevelFatal, "IP_INNOROUTES IP_INADDRERRORS IP_OUTNOROUTES",              \
    "sarena: native-routing from_container found no usable route (bpf_fib_lookup) and drops")      \
  X("file_missing", kLevelInfo, "", "a check could not be made: the snapshot file is named")       \
  X("iface_forwarding_disabled", kLevelFatal, "IP_INADDRERRORS NOT_SPECIFIED",                     \
    "net.ipv4.conf.<iif>.forwarding is 0: the kernel does not forward what arrives on that "       \
    "device")                                                                                      \
  X("ip_forward_disabled", kLevelFatal, "IP_INADDRERRORS NOT_SPECIFIED",                           \
    "net.ipv4.ip_forward is 0 on a node that must forward the packet")                             \
  X("ippool", kLevelInfo, "", "the Calico IPPool the address belongs to and its encapsulation")    \
  X("ippool_not_found", kLevelWarning, "", "a pod address outside every Calico IPPool")            \
  X("link_down", kLevelFatal | kLevelWarning,                                                      \
    "DEV_READY NOT_SPECIFIED IP_OUTNOROUTES NEIGH_FAILED IP_INNOROUTES",                           \
    "a device on the path is down or has no carrier (FATAL when the packet must cross it)")        \
  X("link_missing", kLevelFatal | kLevelWarning, "DEV_READY IP_OUTNOROUTES",                       \
    "a device the path needs (veth peer, tunnel, sarena_host) does not exist")                     \
  X("martian_packet", kLevelFatal, "IP_INVALID_SOURCE IP_LOCALNET IP_RPFILTER IP_INADDRERRORS",    \
    "the kernel drops a martian source or destination")                                            \
  X("mtu_mismatch", kLevelFatal | kLevelWarning,                                                   \
    "PKT_TOO_BIG FRAG_TOO_FAR IP_INHDR NOT_SPECIFIED",                                             \
    "a packet of the query's size exceeds a device or route MTU on the path (FATAL with DF or "    \
    "a forced size; TCP accounts for the MSS both SYNs negotiate)")                                \
  X("multipath_route", kLevelInfo, "",                                                             \
    "the route has several live next hops; the kernel hashes each flow onto one of them "          \
    "(fib_multipath_hash_policy) and every next hop is walked")                                    \
  X("nat_outgoing", kLevelInfo, "", "Calico natOutgoing masquerades the packet leaving the pool")  \
  X("nat_outgoing_missing", kLevelFatal, "IP_INNOROUTES IP_OUTNOROUTES",                           \
    "traffic leaving the cluster with a pod address is not masqueraded (Calico: a natOutgoing "    \
    "pool without the cali-nat-outgoing rule; kind: no MASQUERADE in KIND-MASQ-AGENT), so "        \
    "replies cannot return")                                                                       \
  X("nat_outgoing_pool_destination", kLevelFatal, "",                                              \
    "a pod of a natOutgoing pool sends out of the cluster to an address inside an IPPool that no " \
    "pod or node has: Felix does not masquerade to pool addresses, so replies cannot return")      \
  X("neighbor_missing", kLevelFatal | kLevelWarning | kLevelInfo,                                  \
    "NEIGH_FAILED NEIGH_QUEUEFULL NEIGH_DEAD NEIGH_CREATEFAIL",                                    \
    "the next hop's neighbour does not resolve: nothing on the link answers ARP for it "           \
    "(arp_ignore, no proxy_arp, a missing address); INFO when only not cached yet")                \
  X("neighbor_stale", kLevelFatal | kLevelWarning, "OTHERHOST",                                    \
    "a cached neighbour entry names a MAC the device at the other end of the link does not "       \
    "have: the receiver drops the frames as PACKET_OTHERHOST (FATAL for permanent/static)")        \
  X("netfilter_drop", kLevelFatal | kLevelWarning | kLevelInfo, "NETFILTER_DROP",                  \
    "an iptables rule drops or rejects the packet (WARNING when only an unevaluated match "        \
    "decides)")                                                                                    \
  X("netfilter_unknown", kLevelInfo, "", "a match or target the model does not evaluate exactly")  \
  X("no_route", kLevelFatal, "IP_INNOROUTES IP_INADDRERRORS IP_OUTNOROUTES IP_INVALID_DEST",       \
    "no route (or an unreachable/blackhole/prohibit route) for the destination in the tables "     \
    "the policy rules select")                                                                     \
  X("node_address_missing", kLevelFatal | kLevelWarning, "",                                       \
    "a node has no usable address for the encapsulation or route the path needs")                  \
  X("not_listening", kLevelWarning | kLevelInfo, "NO_SOCKET TCP_CLOSE SOCKET_FILTER",              \
    "nothing listens on the destination port (TCP RST / ICMP port unreachable)")                   \
  X("overlay_mtu_too_big", kLevelWarning, "PKT_TOO_BIG FRAG_TOO_FAR",                              \
    "sarena: pod MTU + 50 exceeds the uplink MTU in tunnel mode: full-size packets are "           \
    "fragmented on the underlay")                                                                  \
  X("overlay_source_mismatch", kLevelFatal, "",                                                    \
    "sarena: from_overlay drops an inner source that is not of the sending peer's pod CIDRs")      \
  X("pod_ip_duplicate", kLevelFatal | kLevelWarning, "",                                           \
    "two or more live pods have the packet's destination address (IPAM handed it out twice): "     \
    "FATAL when the walk reaches another pod than the one the query named")                        \
  X("policy_route_unexpected", kLevelWarning | kLevelInfo, "",                                     \
    "a policy rule, not the main table, chose the route (WARNING where the CNI expects its "       \
    "main-table routes)")                                                                          \
  X("program_not_attached", kLevelFatal | kLevelWarning | kLevelInfo,                              \
    "TC_INGRESS TC_EGRESS IP_RPFILTER",                                                            \
    "sarena: a datapath program is not attached where the node's mode needs it")                   \
  X("remote_cidr_misrouted", kLevelFatal | kLevelWarning, "",                                      \
    "sarena: a remote pod CIDR's route is not the one its entry's mode needs, or is missing so "   \
    "the cluster CIDR's unreachable route answers")                                                \
  X("route_mismatch", kLevelFatal | kLevelWarning | kLevelInfo,                                    \
    "NEIGH_FAILED IP_INNOROUTES IP_INADDRERRORS",                                                  \
    "the route the kernel picks leaves by another device or gateway than the path needs")          \
  X("router", kLevelInfo, "",                                                                      \
    "a snapshot namespace that is not a Kubernetes node (a router between the nodes) forwards "    \
    "the packet: walked like a node, both ways")                                                   \
  X("rp_filter", kLevelInfo, "IP_RPFILTER",                                                        \
    "the reverse-path filter setting on the device (context)")                                     \
  X("rp_filter_drop", kLevelFatal, "IP_RPFILTER",                                                  \
    "the reverse-path filter (max(all, iif): 1 strict, 2 loose) drops the packet")                 \
  X("service_backend_mismatch", kLevelWarning, "",                                                 \
    "kube-proxy translates to an address that is not a ready endpoint (stale rules)")              \
  X("service_backends", kLevelInfo, "", "the Service's backends the walk fans out to")             \
  X("service_no_endpoints", kLevelFatal, "NETFILTER_DROP IP_INNOROUTES",                           \
    "the Service has no ready endpoint: kube-proxy rejects the connection")                        \
  X("service_not_programmed", kLevelFatal | kLevelInfo, "",                                        \
    "kube-proxy's rules do not translate the Service (FATAL), or there are no kube-proxy rules "   \
    "and the endpoints are used instead (INFO)")                                                   \
  X("snapshot_incomplete", kLevelWarning, "",                                                      \
    "a node, netns or file the path needs is not in the snapshot: the path ends unchecked")        \
  X("snat", kLevelInfo, "", "an SNAT / MASQUERADE at this hop")                                    \
  X("source_range_denied", kLevelFatal, "NETFILTER_DROP",                                          \
    "loadBalancerSourceRanges: kube-proxy drops a source outside the allowed ranges")              \
  X("stale_underlay", kLevelFatal | kLevelWarning, "",                                             \
    "sarena: a tunnel entry's underlay is not the peer's current address, or no underlay route "   \
    "reaches it")                                                                                  \
  X("ttl_exceeded", kLevelFatal, "IP_INHDR IP_TTL_EXCEEDED", "the TTL runs out on the path")       \
  X("tunnel_entry_missing", kLevelFatal | kLevelWarning, "NO_SOCKET IP_NOPROTO",                   \
    "sarena: a remote pod address with a route but no tunnel-map entry, or with neither")          \
  X("tunnel_missing", kLevelFatal, "NO_SOCKET IP_NOPROTO VXLAN_INVALID_HDR VXLAN_VNI_NOT_FOUND",   \
    "the tunnel device the encapsulation needs (vxlan.calico, tunl0, sarena_vxlan) is missing")    \
  X("tunnel_port_blocked", kLevelFatal, "NETFILTER_DROP",                                          \
    "netfilter drops a tunnel's outer UDP packets (sender OUTPUT/POSTROUTING, router FORWARD, "    \
    "receiver INPUT)")                                                                             \
  X("unknown_peer", kLevelFatal, "",                                                               \
    "sarena: from_overlay drops VXLAN from an underlay address that is not a cluster member")      \
  X("vxlan_fdb_missing", kLevelFatal, "NO_TX_TARGET VXLAN_NO_REMOTE NEIGH_FAILED NO_SOCKET",       \
    "the VXLAN device has no forwarding-database entry for the remote VTEP")                       \
  X("wrong_vni", kLevelFatal, "VXLAN_VNI_NOT_FOUND NO_SOCKET",                                     \
    "sarena: from_overlay drops VXLAN with another VNI than the cluster's")

/// One entry of the list.
struct SuspicionCode {
  absl::string_view code;          // e.g. "rp_filter_drop"
  uint8_t levels;                  // kLevel* bits; CRITICAL is implied by FATAL
  absl::string_view drop_reasons;  // e.g. "IP_RPFILTER", space-separated; "" for none
  absl::string_view meaning;
};

/// Every code, sorted by code.
const std::vector<SuspicionCode>& AllSuspicionCodes();

/// The entry of `code`, or nullptr when the diagnoser has no such code.
const SuspicionCode* FindSuspicionCode(absl::string_view code);

/// `code.drop_reasons` split into its names ("IP_RPFILTER", ...), in the list's order; views into
/// the list's static strings. Empty for a code that names no drop.
std::vector<absl::string_view> DropReasonsOf(const SuspicionCode& code);

/// Whether `code` may be reported with `level` (an unknown code never may).
bool CodeAllowsLevel(absl::string_view code, Level level);

/// "FATAL / WARNING" for a levels bit set, highest first (CRITICAL left implicit).
std::string LevelsText(uint8_t levels);

/// The list as a Markdown table ("| code | level | kernel drop reasons | meaning |", one row per
/// code, sorted): what
/// `sarena-diag codes -o markdown` prints and docs/diag-snapshot.md holds verbatim.
std::string SuspicionCodesMarkdown();

/// The list as JSON (protobuf's JSON mapping of sarena.diag.v1.SuspicionCodeList):
/// {"codes": [{"code": "asymmetric_return", "levels": ["FATAL", "CRITICAL"], "drop_reasons":
/// ["NETFILTER_DROP", ...], "meaning": "..."}, ...]}. CRITICAL is listed for every code that may be
/// FATAL. What `sarena-diag codes -o json` prints.
std::string SuspicionCodesJson();

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_CODES_H_
