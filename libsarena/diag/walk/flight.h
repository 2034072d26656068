// The path walk's private types (not installed): the packet in flight and its per-branch
// state, the TCP segment-size bookkeeping, and the helpers over them that mtu.cc / hops.cc
// define. The Walker class that uses them is in walker.h.
#ifndef LIBSARENA_DIAG_WALK_FLIGHT_H_
#define LIBSARENA_DIAG_WALK_FLIGHT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "libsarena/diag/snapshot_input.h"
#include "libsarena/diag/walk.h"
#include "libsarena/model/conntrack.h"
#include "libsarena/model/tunnel.h"

namespace sarena::diag::internal {

using model::CtState;
using model::DeviceRef;
using model::InputDecision;
using model::InputDrop;
using model::Interface;
using model::Netstack;
using model::NetstackSource;
using model::NfHook;
using model::NfOutcome;
using model::NfVerdict;
using model::RouteResult;
using model::RouteType;
using Vertex = PathGraph::Vertex;

// Tunnel overheads: model/tunnel.h's table.
constexpr uint32_t kIpipOverhead = *model::TunnelOverheadOf("ipip");
constexpr uint32_t kVxlanOverhead = *model::TunnelOverheadOf("vxlan");
constexpr uint32_t kWireguardOverhead = *model::TunnelOverheadOf("wireguard");

// ---- absent data (absent.cc; the rule is libsarena/diag/snapshot_input.h) ----
// What the file_missing of an absent ip-rule.json names: lookups go on with the kernel's default
// rules (most hosts have no others), but a failed lookup proves nothing (ReportRouteError).
inline constexpr absl::string_view kRulesAssumed =
    "policy routing (the kernel's default rules assumed)";
// The inputs besides the routes a drop by input routing (`in`, decision kDrop) rests on, each
// with the check it names; empty when the drop follows from the snapshot's data whatever the
// missing files hold.
std::vector<std::pair<SnapshotInput, std::string>> InputDropRestsOn(const model::InputResult& in);

// True when the netfilter outcome `o` was decided by the namespace's addresses (MASQUERADE with
// no address on the egress device drops).
bool RestsOnNetstack(const NfOutcome& o);

// Defined in hops.cc.
std::string Ep(const net::Ipv4& ip, uint16_t port);
std::string Tuple(const Packet& p);

// Per-branch state; copied when a Service fans out.
struct Branch {
  // Where the request passed and the NAT bindings it got (the reply meets them).
  model::Conntrack ct;
  absl::flat_hash_set<std::string> visited;
  std::vector<Packet> host_flows;
  int hops = 0;
  // Where the request left the cluster (for the reply of an external destination).
  std::string egress_node;
  std::string egress_iface;
};

// One end of a TCP connection as its SYN describes it. The MSS option a Linux socket announces
// (RFC 9293 3.7.1; tcp_advertise_mss / ipv4_default_advmss) is the route's advmss metric, else
// its path MTU - 40 (IPv4 + TCP headers); the path MTU is the route's mtu metric, else the MTU
// of the route's device. No segment this end sends is larger than its path MTU.
struct TcpEnd {
  std::string who;           // "node node-a", "pod default/web"
  std::string dev;           // the route's output device
  uint32_t pmtu = 0;         // bytes; 0 = unknown
  bool pmtu_metric = false;  // pmtu is the route's mtu metric (else the device MTU)
  uint32_t mss = 0;          // the MSS option of its SYN (bytes); 0 = unknown
  bool advmss = false;       // mss is the route's advmss metric
};

// An MTU check of the packet in flight (Walker::CheckSize): a packet of more than `limit` bytes
// (inner IP size) does not pass; `flag(size, forced, tcp)` adds the suspicion (`tcp`: how the
// TCP segment size was negotiated, or empty) and returns whether the packet is dropped there
// (only ever for a --size packet, `forced`); after a mismatch the packet is `settle` bytes (0 =
// unchanged), the size PMTU discovery settles on.
using SizeFlag = std::function<bool(uint32_t size, bool forced, const std::string& tcp)>;
struct SizeCheck {
  uint32_t limit = 0;
  uint32_t settle = 0;
  SizeFlag flag;  // null: a silent limit (PMTU discovery against a tunnel MTU)
};

// A request's MTU checks whose packet size is not known yet: a TCP client's segments are
// min(its path MTU, the server's MSS + 40), and the server's MSS is known only when the
// SYN-ACK reaches the client. A persistent list (each node points to the check before it), so a
// fan-out shares its prefix; Walker::ResolveChecks decides a chain once the size is known.
struct SizeCheckNode {
  SizeCheck check;
  std::shared_ptr<SizeCheckNode> prev;
  std::shared_ptr<const TcpEnd> client;
  bool resolved = false;  // decided at least once
  bool flagged = false;   // its suspicion was added (once, however many servers)
};

// TCP segment sizes of a TCP query without --size (a real connection never sends a segment
// larger than the peer's MSS + 40, nor than its own path MTU: tcp_sync_mss).
struct TcpFlight {
  bool active = false;
  TcpEnd self;          // the sender of this direction: the client, then (reply) the server
  bool self_known = false;
  uint32_t syn = 0;     // self's MSS option as its SYN (SYN-ACK) carries it here
  std::string clamps;   // the TCPMSS rules that lowered `syn`: ", clamped to 1360 at ..."
  std::shared_ptr<SizeCheckNode> pending;  // request: the checks so far (leaf of the chain)
  // Reply only: the client's SYN as the server received it, and the server's segment size.
  TcpEnd peer;
  uint32_t peer_syn = 0;
  std::string peer_clamps;
  std::shared_ptr<SizeCheckNode> request;  // the request's checks, decided when the reply arrives
  uint32_t segment = 0;  // the reply's negotiated segment size (bytes), for its messages
};

// The packet in flight.
struct Flight {
  Packet pkt;                   // the inner (or only) packet
  std::optional<Packet> outer;  // encapsulation header while crossing the underlay
  std::string encap_kind;       // "ipip", "vxlan", "wireguard"
  std::optional<uint32_t> vni;  // VXLAN network identifier of `outer`
  // A plugin's description of what the far end of a tunnel / redirect must do, reported when
  // that far end is not a node of the snapshot (PluginAction::peer_expectation).
  std::string peer_expectation;
  uint32_t size = 0;            // bytes of the (inner) IP packet
  bool reply = false;
  TcpFlight tcp;                // a TCP query without --size: the segment sizes (MSS)
  // The bridge port the packet entered the current node by, "<netns id>|<bridge>|<port>", and
  // its destination address then (a DNAT on the node changes it: br_netfilter's bridged DNAT).
  // Set when a pod's frame enters a bridge port; cleared when the node routes it (Dispatch).
  std::string bridge_in;
  net::Ipv4 bridge_in_dst;
};

struct Prev {
  std::optional<Vertex> v;
  std::string label;
};

constexpr uint32_t kTcpIpHeaders = 40;  // IPv4 + TCP headers without options (RFC 9293 3.7.1)

// Defined in mtu.cc.
TcpEnd MakeTcpEnd(std::string who, const RouteResult& r, const Interface* out);
std::string PathMtuText(const TcpEnd& e);
std::string SegmentWhy(const TcpEnd& sender, const TcpEnd* receiver, uint32_t rcvd,
                       const std::string& clamps, uint32_t size);
std::string SizeText(uint32_t size, const std::string& tcp);

struct NfPass {
  bool dropped = false;
  std::vector<NfOutcome> accepted;  // most probable first
};

}  // namespace sarena::diag::internal

#endif  // LIBSARENA_DIAG_WALK_FLIGHT_H_
