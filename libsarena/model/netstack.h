// The IPv4 network stack of one network namespace (a node's host netns or a pod's netns) as a
// snapshot shows it, with the kernel's decision procedures re-implemented on top:
//   * policy routing (fib_rules_lookup), every table, longest-prefix match honouring route type,
//     scope, TOS, metric and dead/linkdown next hops (fib_table_lookup),
//   * source address selection (fib_result_prefsrc / inet_select_addr),
//   * input routing of a received packet (ip_route_input_slow: martians, local delivery,
//     per-ingress-device forwarding, reverse-path filtering via fib_validate_source),
//   * output routing of a locally generated packet (ip_route_output_key_hash_rcu).
// Sources: net/ipv4/fib_rules.c, fib_trie.c, fib_semantics.c, fib_frontend.c, route.c, devinet.c
// (Linux 6.x) and Documentation/networking/ip-sysctl.rst. IPv6 entries in the inputs are ignored.
//
// Input formats are iproute2 6.1's JSON (`ip -j -d link show`, `ip -j addr show`,
// `ip -j route show table all`, `ip -j rule show`, `ip -j neigh show`, `bridge -j fdb show`):
// see tests/data/model/iproute2/ for real samples.
#ifndef LIBSARENA_MODEL_NETSTACK_H_
#define LIBSARENA_MODEL_NETSTACK_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/sysctl.h"
#include "libsarena/net/ip.h"
#include "libsarena/net/rtnl.h"

namespace sarena::model {

// ---------------------------------------------------------------------------------------------
// Enumerations (values are the kernel's uapi numbers from linux/rtnetlink.h).

// The rtnetlink vocabulary (scope, route type, route protocol, table ids, rule action, neighbour
// state and their iproute2 names) is defined once in libsarena/net/rtnl.h, shared with netlink/;
// the model names it here so model::Route reads like the kernel's route.
using net::NeighState;
using net::RouteProtocol;
using net::RouteType;
using net::RuleAction;
using net::Scope;
using net::kTableDefault;
using net::kTableLocal;
using net::kTableMain;
using net::kTableUnspec;
using net::ParseRouteProtocol;
using net::ParseRouteType;
using net::ParseScope;
using net::ParseTable;
using net::TableName;
using net::ToString;

// ---------------------------------------------------------------------------------------------
// Objects.

/// One IPv4 address of an interface (`ip -j addr show` addr_info entry with family "inet").
struct InterfaceAddress {
  net::Ipv4 local;                   // the address itself ("local")
  uint8_t prefixlen = 32;            // 0..32
  std::optional<net::Ipv4> peer;     // "address" of point-to-point configs (ip addr ... peer P)
  std::optional<net::Ipv4> broadcast;
  Scope scope = Scope::kUniverse;
  bool secondary = false;            // IFA_F_SECONDARY: never used for source selection
  bool noprefixroute = false;
  std::string label;

  /// The subnet (local/prefixlen canonical, or peer/32 for peer configs).
  net::Ipv4Prefix Subnet() const;
};

/// VXLAN attributes (`ip -d link` linkinfo.info_data of info_kind "vxlan").
struct VxlanInfo {
  uint32_t vni = 0;                   // "id"
  std::optional<net::Ipv4> local;     // outer source address
  std::optional<net::Ipv4> group;     // "group" (multicast) or "remote" (unicast default peer)
  std::string dev;                    // "link": underlay device name ("" = any)
  uint16_t port = 8472;               // UDP destination port ("port"); kernel default 8472
  bool learning = true;
  uint8_t ttl = 0;
  /// "df": the outer header's Don't Fragment bit — "unset" (the kernel default: the outer
  /// packet is fragmented when it exceeds the underlay MTU), "set", or "inherit" (the inner's).
  std::string df = "unset";
};

/// IPIP / GRE / SIT attributes (info_kind "ipip", "gre", "sit"; iproute2 link_iptnl.c).
struct TunnelInfo {
  std::string proto;                  // "ipip", "any", ... as printed
  std::optional<net::Ipv4> local;     // absent when printed as "any"
  std::optional<net::Ipv4> remote;    // absent when "any" (Calico's tunl0: remote any)
  std::string dev;                    // "link"
  uint8_t ttl = 0;
  bool pmtudisc = true;
  bool external = false;              // collect_metadata (flow-based) device
};

/// A bridge port's flags (IFLA_BRPORT_*; `ip -j -d link show` prints them in
/// linkinfo.info_slave_data of a device whose info_slave_kind is "bridge"; `bridge link set dev X
/// hairpin on|isolated on|learning off|flood off` sets them). Absent keys keep the kernel's
/// defaults for a new port (new_nbp: BR_LEARNING | BR_FLOOD | BR_MCAST_FLOOD | BR_BCAST_FLOOD),
/// so snapshots written before these fields were read load unchanged.
struct BridgePortInfo {
  /// "state" (IFLA_BRPORT_STATE): "disabled", "listening", "learning", "forwarding",
  /// "blocking"; only "forwarding" passes frames (br_handle_frame drops the others).
  std::string state = "forwarding";
  bool hairpin = false;               // IFLA_BRPORT_MODE: frames may leave by the port they came in
  bool isolated = false;              // IFLA_BRPORT_ISOLATED: never forwarded to another isolated port
  bool learning = true;               // IFLA_BRPORT_LEARNING: source MACs enter the fdb
  bool unicast_flood = true;          // "flood" (IFLA_BRPORT_UNICAST_FLOOD): unknown unicast sent here
  bool bcast_flood = true;            // "bcast_flood" (IFLA_BRPORT_BCAST_FLOOD): broadcast (ARP) sent here
};

/// A bridge's own settings (linkinfo.info_data of info_kind "bridge").
struct BridgeInfo {
  /// "nf_call_iptables" (IFLA_BR_NF_CALL_IPTABLES, `ip link set dev br0 type bridge
  /// nf_call_iptables 1`): bridged IPv4 passes iptables on this bridge even when the netns's
  /// net.bridge.bridge-nf-call-iptables is 0 (br_nf_pre_routing: the sysctl OR this option).
  bool nf_call_iptables = false;
};

/// One network interface (`ip -j -d link show` entry, merged with its `ip -j addr show` entry).
struct Interface {
  int ifindex = 0;
  std::string name;                   // "ifname"
  /// linkinfo.info_kind: "veth", "vxlan", "ipip", "bridge", "dummy", "tun", "gre", "wireguard",
  /// "netkit", ... Empty for devices without rtnl link ops (loopback, most physical NICs).
  std::string kind;
  std::string slave_kind;             // linkinfo.info_slave_kind ("bridge", "bond", "vrf")
  std::string link_type;              // "ether", "loopback", "ipip", "none", ...
  std::vector<std::string> flags;     // "UP", "LOWER_UP", "NO-CARRIER", "NOARP", "LOOPBACK", ...
  bool admin_up = false;              // IFF_UP present in flags
  bool lower_up = false;              // IFF_LOWER_UP (carrier) present in flags
  bool loopback = false;              // IFF_LOOPBACK
  bool noarp = false;                 // IFF_NOARP
  std::string operstate;              // "UP", "DOWN", "UNKNOWN", "LOWERLAYERDOWN", "DORMANT", ...
  uint32_t mtu = 0;                   // bytes (L3 MTU)
  std::optional<net::Mac> mac;        // "address" when it is a 6-byte MAC
  std::string master;                 // bridge/bond/vrf this device is enslaved to ("" none)
  /// Peer / lower device: for veth the peer. With the peer in the same netns iproute2 prints its
  /// name ("link"); with the peer in another netns it prints "link_index" (the peer's ifindex in
  /// that netns) and "link_netnsid".
  std::string link;
  std::optional<int> link_index;
  std::optional<int> link_netnsid;
  std::optional<VxlanInfo> vxlan;     // kind == "vxlan"
  std::optional<TunnelInfo> tunnel;   // kind == "ipip" / "gre" / "sit"
  std::optional<BridgePortInfo> bridge_port;  // slave_kind == "bridge" (defaults when not printed)
  std::optional<BridgeInfo> bridge;   // kind == "bridge"
  std::vector<InterfaceAddress> addresses;  // IPv4 only, in kernel order (primary first)

  /// True when the kernel can transmit on it: IFF_UP and the carrier is on (LOWER_UP, or
  /// operstate "UP"/"UNKNOWN" when flags lack LOWER_UP — loopback, tunl0, dummy print UNKNOWN).
  bool CanTransmit() const;
  /// First primary (non-secondary) address, if any.
  const InterfaceAddress* PrimaryAddress() const;
};

/// One next hop of a route. `dev` empty for routes without a device (blackhole, unreachable).
struct Nexthop {
  std::optional<net::Ipv4> gateway;
  std::string dev;
  uint32_t weight = 1;
  bool onlink = false;                // RTNH_F_ONLINK ("onlink" in flags)
  bool linkdown = false;              // RTNH_F_LINKDOWN: device has no carrier
  bool dead = false;                  // RTNH_F_DEAD
};

/// One IPv4 route (`ip -j route show table all` entry). Absent keys take iproute2's implicit
/// values: type unicast, table main, scope global (universe), protocol boot, metric 0.
struct Route {
  RouteType type = RouteType::kUnicast;
  net::Ipv4Prefix dst;                // canonical network; "default" = 0.0.0.0/0
  uint32_t table = kTableMain;
  Scope scope = Scope::kUniverse;
  RouteProtocol protocol = RouteProtocol::kBoot;  // iproute2 omits "protocol" for boot
  uint32_t metric = 0;                // "metric" (priority); lower wins among equal prefixes
  uint8_t tos = 0;
  std::optional<net::Ipv4> prefsrc;   // "prefsrc"
  uint32_t mtu = 0;                   // metrics[].mtu (RTAX_MTU, bytes); 0 = the device's MTU
  uint32_t advmss = 0;                // metrics[].advmss (bytes); 0 = unset
  std::vector<Nexthop> nexthops;      // one entry for single-path routes; empty for no device
  /// Index of this route in the order of the input file (stable id for reports).
  int index = -1;

  /// The first next hop, or nullptr.
  const Nexthop* first() const { return nexthops.empty() ? nullptr : &nexthops.front(); }
  /// "10.0.0.0/24 via 10.0.0.1 dev eth0 proto bird table 77 metric 100" (iproute2-like).
  std::string ToString() const;
};

/// One policy-routing rule (`ip -j rule show` entry).
struct Rule {
  uint32_t priority = 0;
  bool invert = false;                // "not"
  std::optional<net::Ipv4Prefix> src; // absent = "all"
  std::optional<net::Ipv4Prefix> dst;
  std::string iif;                    // "" = any. "lo" matches locally generated packets.
  std::string oif;
  std::optional<uint32_t> fwmark;
  uint32_t fwmask = 0xffffffff;       // only meaningful with fwmark
  uint8_t tos = 0;
  uint8_t ipproto = 0;                // 0 = any
  uint16_t sport_start = 0, sport_end = 0;  // 0/0 = any
  uint16_t dport_start = 0, dport_end = 0;
  RuleAction action = RuleAction::kToTable;
  uint32_t table = 0;                 // for kToTable
  uint32_t goto_priority = 0;         // for kGoto
  std::optional<uint32_t> suppress_prefixlen;
  bool l3mdev = false;                // "l3mdev": lookup in the VRF table of the device
  bool has_uidrange = false;          // present but not evaluated (always matches)
  int index = -1;

  /// "100: from 10.65.1.0/24 lookup 77" (iproute2-like).
  std::string ToString() const;
};

/// One neighbour entry (`ip -j neigh show`).
struct Neighbor {
  net::Ipv4 dst;
  std::string dev;
  std::optional<net::Mac> lladdr;
  NeighState state = NeighState::kNone;  // NUD_* bits from the "state" names ("REACHABLE", ...)
  bool router = false;

  /// A usable resolution: lladdr present and state not FAILED/INCOMPLETE (without an lladdr,
  /// NOARP or PERMANENT).
  bool Usable() const;
  /// The state as `ip neigh` prints it: iproute2's names joined with ',' in bit order
  /// ("REACHABLE", "NOARP,PERMANENT"); "" for NUD_NONE (`ip -j neigh` prints no "state").
  std::string StateNames() const;
};

/// One forwarding-database entry (`bridge -j fdb show`).
struct FdbEntry {
  net::Mac mac{};
  std::string dev;                    // "ifname"
  std::optional<net::Ipv4> dst;       // VXLAN remote VTEP ("dst")
  std::string master;
  std::optional<uint32_t> vni;        // "vni" when set per entry
  std::vector<std::string> flags;     // "self", "master", "extern_learn", ...
  std::string state;                  // "permanent", "static", "" (dynamic)
};

// ---------------------------------------------------------------------------------------------
// Queries.

/// A flow as the routing code sees it (struct flowi4).
struct Flow {
  net::Ipv4 dst;
  /// Source address. For output lookups nullopt means "let the kernel choose" (saddr 0).
  std::optional<net::Ipv4> src;
  /// Ingress device. Empty = locally generated (rules see iif "lo", fib_rules_lookup with
  /// flowi4_iif = LOOPBACK_IFINDEX).
  absl::string_view iif;
  /// Output device the socket is bound to (SO_BINDTODEVICE / ip route get ... oif). Empty = none.
  absl::string_view oif;
  uint32_t mark = 0;                  // fwmark
  uint8_t tos = 0;
  uint8_t proto = 0;                  // for rules with ipproto/sport/dport
  uint16_t sport = 0, dport = 0;      // host byte order
  Scope scope = Scope::kUniverse;     // flowi4_scope: routes with narrower scope are skipped
};

/// Outcome of a policy-routing + table lookup (what `ip route get` reports).
struct RouteResult {
  /// 0 on success, else the kernel's errno: ENETUNREACH (nothing matched, or an "unreachable"
  /// rule), EHOSTUNREACH (unreachable route), EINVAL (blackhole route or rule), EACCES
  /// (prohibit route or rule). fib_props[] in fib_semantics.c.
  int error = 0;
  RouteType type = RouteType::kUnspec;  // of the route (or rule action) that decided
  const Route* route = nullptr;       // the matched route; nullptr when a rule decided / no match
  const Rule* rule = nullptr;         // the rule whose table matched (or whose action decided)
  uint32_t table = 0;                 // table of `route`
  std::string oif;                    // output device of the first next hop ("lo" for local)
  std::optional<net::Ipv4> gateway;   // first next hop's gateway
  /// Source the kernel would use: route prefsrc, else inet_select_addr(oif, gateway, scope).
  /// nullopt when no address qualifies (the kernel then sends with saddr 0.0.0.0 / fails).
  std::optional<net::Ipv4> prefsrc;
  /// All next hops of a multipath route (the kernel picks one per flow hash; the model reports
  /// every candidate). Single-path routes have one.
  std::vector<Nexthop> nexthops;

  bool ok() const { return error == 0; }
  /// "10.0.0.2 via 10.0.0.1 dev eth0 table main src 10.0.0.5" or "unreachable (ENETUNREACH)".
  std::string ToString() const;
};

/// Why fib_validate_source rejected (or accepted) a source address.
enum class RpfFailure : uint8_t {
  kNone,                // accepted
  kNoRoute,             // no route back to the source and rp_filter on ("last_resort")
  kWrongInterface,      // strict mode: the reverse route does not use the ingress device
  kNoAddressOnIngress,  // strict/loose: ingress device has no IPv4 address and no dev match
  kMartianSource,       // reverse route is local/blackhole/... (source is ours, or not unicast)
};
absl::string_view ToString(RpfFailure failure);

/// Reverse-path check of a received packet (fib_validate_source).
struct RpfResult {
  bool pass = true;
  /// Effective rp_filter of the ingress device: max(all, dev); 0 off, 1 strict, 2 loose.
  int mode = 0;
  /// False when the sysctl was not in the snapshot (the check then assumes 0 = off, and the diag
  /// layer should say so).
  bool mode_known = false;
  RpfFailure failure = RpfFailure::kNone;
  /// The reverse lookup (dst = packet source, src = packet destination, iif = forward route's
  /// oif or "lo"). Its error is 0 when some route was found.
  RouteResult reverse;
  std::string detail;   // one line for reports
};

/// Outcome of routing a received packet (ip_route_input_slow).
enum class InputDecision : uint8_t { kLocal, kForward, kBroadcast, kDrop };
absl::string_view ToString(InputDecision decision);

enum class InputDrop : uint8_t {
  kNone,
  kIngressMissing,       // iif is not an interface of this netns
  kIngressDown,          // iif is not up: the kernel never receives on it
  kMartianSource,        // multicast/broadcast/0.0.0.0/loopback(without route_localnet) source
  kMartianDestination,   // 0.0.0.0 / loopback destination, or a route type that cannot be forwarded
  kNoRoute,              // lookup failed with ENETUNREACH
  kUnreachable,          // unreachable route/rule (EHOSTUNREACH / ENETUNREACH)
  kBlackhole,            // blackhole route/rule (EINVAL)
  kProhibit,             // prohibit route/rule (EACCES)
  kForwardingDisabled,   // conf.<iif>.forwarding == 0 (ingress device decides)
  kRpFilter,             // fib_validate_source failed (rp_filter strict/loose)
};
absl::string_view ToString(InputDrop drop);

struct InputResult {
  InputDecision decision = InputDecision::kDrop;
  InputDrop drop = InputDrop::kNone;
  RouteResult route;                  // the forward (or local) lookup
  RpfResult rpf;                      // reverse-path check (run for local and forwarded packets)
  /// For kForwardingDisabled: also whether net.ipv4.ip_forward itself is 0 (then the global
  /// switch is the root cause, diag code ip_forward_disabled; else iface_forwarding_disabled).
  bool ip_forward_disabled = false;
  std::string detail;
};

/// Which iproute2 / sysctl inputs a Netstack was built from; a query touching a missing source
/// should become an INFO suspicion ("cannot check X: file Y missing").
enum class NetstackSource : uint8_t {
  kLinks = 0, kAddrs, kRoutes, kRules, kNeighbors, kSysctls, kFdb,
};
absl::string_view ToString(NetstackSource source);  // "ip-link.json", "ip-addr.json", ...

/// The IPv4 stack of one network namespace. Built once (parse), then immutable and safe to query
/// from several threads. Lookups do not allocate except for the strings/vectors they return.
struct Packet;  // packet.h

class Netstack {
 public:
  Netstack();
  ~Netstack();
  Netstack(Netstack&&) noexcept;
  Netstack& operator=(Netstack&&) noexcept;

  // --- Building (each parser replaces what it owns; call Finalize() after the last one). ---
  // Every parser takes the text of the file and its name (for errors). Errors: kInvalidArgument
  // "parse <file_name>: [<index>].<field>: <cause>" (JSON path of the bad field) or
  // "parse <file_name>: JSON syntax error at byte N: <cause>".

  /// `ip -j -d link show`. Interfaces keep file order. Refused (kInvalidArgument, naming file
  /// and field):
  ///   - an empty list ("parse <file>: (root): no links: ..."): every netns has lo, which
  ///     `ip -j link` always lists, so an empty list is a failed or truncated capture;
  ///   - a link whose "flags" is null or missing ("parse <file>: [i].flags: null: ..."): iproute2
  ///     prints every link's flags (print_link_flags), and reading none would call an UP device
  ///     down;
  ///   - a negative "mtu". An mtu below 68 (IPV4_MIN_MTU) loads: the kernel allows it where the
  ///     driver's min_mtu does (lo, dummy, ifb: 0; CAN: 16) and removes only the device's IPv4
  ///     configuration (net/ipv4/devinet.c inetdev_event, NETDEV_CHANGEMTU -> inetdev_destroy),
  ///     so no IPv4 path the model walks crosses it. The same flags and mtu rules apply to the
  ///     link attributes of ParseAddrs entries;
  ///   - two devices with one ifindex ("parse <file>: [i].ifindex: duplicate ifindex N (also
  ///     [j] '<name>') ..."): the kernel gives each device of a netns its own (dev_new_index),
  ///     and veth peers and bridge ports are matched by it.
  absl::Status ParseLinks(absl::string_view json, absl::string_view file_name = "ip-link.json");
  /// `ip -j addr show`: fills Interface::addresses (and creates interfaces missing from the link
  /// file, since `ip -j addr` carries the same link attributes).
  absl::Status ParseAddrs(absl::string_view json, absl::string_view file_name = "ip-addr.json");
  /// `ip -j route show table all` (IPv6 entries skipped).
  absl::Status ParseRoutes(absl::string_view json, absl::string_view file_name = "ip-route.json");
  /// `ip -j rule show`. Without this file the kernel's three default rules are assumed
  /// (0 lookup local, 32766 lookup main, 32767 lookup default).
  absl::Status ParseRules(absl::string_view json, absl::string_view file_name = "ip-rule.json");
  /// `ip -j neigh show` (IPv6 entries skipped). An "lladdr" must be a MAC
  /// ("aa:bb:cc:dd:ee:ff"), or another link type's address as iproute2's ll_addr_n2a prints it
  /// (IPv4 text on a tunnel; hex bytes of another length on a device ParseLinks gave a
  /// link_type other than "ether"; read as no MAC); anything else is
  /// kInvalidArgument "parse <file>: [i].lladdr: invalid link-layer address '<value>'" (or
  /// "invalid MAC '<value>'"), never read as a missing neighbour.
  absl::Status ParseNeighbors(absl::string_view json, absl::string_view file_name = "ip-neigh.json");
  /// `bridge -j fdb show`.
  absl::Status ParseFdb(absl::string_view json, absl::string_view file_name = "bridge-fdb.json");
  /// `sysctl -a`.
  absl::Status ParseSysctls(absl::string_view text, absl::string_view file_name = "sysctl.txt");

  /// Programmatic building (tests, synthetic snapshots). Each marks its source present.
  void AddInterface(Interface iface);
  void AddRoute(Route route);
  void AddRule(Rule rule);
  void AddNeighbor(Neighbor neighbor);
  void AddFdb(FdbEntry entry);
  Sysctls& mutable_sysctls();

  /// Builds the lookup indexes (sorted rules, per-table prefix maps, local address set). Must be
  /// called after building and before any query; calling it again rebuilds.
  void Finalize();

  // --- Inventory. ---
  bool Has(NetstackSource source) const;
  const std::vector<Interface>& interfaces() const { return interfaces_; }
  const std::vector<Route>& routes() const { return routes_; }
  /// Rules sorted by priority (stable for equal priorities, as the kernel keeps insertion order).
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<Neighbor>& neighbors() const { return neighbors_; }
  const std::vector<FdbEntry>& fdb() const { return fdb_; }
  const Sysctls& sysctls() const { return sysctls_; }

  const Interface* FindInterface(absl::string_view name) const;
  const Interface* FindInterfaceByIndex(int ifindex) const;
  /// The interface holding `ip` as one of its addresses (any scope), or nullptr.
  const Interface* InterfaceWithAddress(const net::Ipv4& ip) const;
  /// True when `ip` is configured on some interface of this netns (inet_lookup_ifaddr).
  bool IsLocalAddress(const net::Ipv4& ip) const;
  /// The neighbour entry for `ip` on `dev`, or nullptr.
  const Neighbor* FindNeighbor(const net::Ipv4& ip, absl::string_view dev) const;
  /// The FDB entries the kernel's vxlan_xmit would use for `mac` on `dev`: the exact entries
  /// (several remotes = replicated), or when there is none the all-zero default entries
  /// (flooding / head-end replication). Empty = unknown destination MAC with no default: dropped.
  std::vector<const FdbEntry*> FindFdb(absl::string_view dev, const net::Mac& mac) const;
  /// Routes of `table` in file order.
  std::vector<const Route*> TableRoutes(uint32_t table) const;
  /// The tunnel device of this netns that takes in `outer`, an encapsulated packet addressed to
  /// this netns (netstack_tunnel.cc), or nullptr when none does (the kernel drops it on arrival):
  ///   - IPIP (proto 4): ipip_rcv -> ip_tunnel_lookup (net/ipv4/ip_tunnel.c). A device ("ipip"
  ///     kind, or an `ip tunnel` of proto ipip) whose local address is set must have
  ///     outer.dst as local; among those, the first whose remote is outer.src, else the first
  ///     with no remote ("remote any", e.g. Calico's tunl0, the kernel's wildcard / fallback
  ///     device).
  ///   - UDP (proto 17): the VXLAN device whose UDP socket receives it (vxlan_rcv finds the
  ///     socket by destination port, bound to the device's local address when it has one): the
  ///     first, in link order, with port outer.dport and no local or local outer.dst. The VNI
  ///     is not matched here. Else, when `wireguard` (the sender encapsulated with WireGuard),
  ///     the first "wireguard" device: its listen port is not in the snapshot, so any
  ///     WireGuard device is taken to own the port.
  ///   - any other protocol: nullptr.
  /// Reads the links only (ParseLinks); without them it returns nullptr, which the caller
  /// cannot tell from a missing device (check Has(NetstackSource::kLinks)).
  const Interface* TunnelReceiver(const Packet& outer, bool wireguard) const;

  // --- Kernel decision procedures. ---

  /// Policy routing + longest-prefix match (fib_lookup): rules in priority order (iif/oif/from/to/
  /// fwmark/tos/ipproto/ports/not), actions lookup/goto/nop/blackhole/unreachable/prohibit,
  /// suppress_prefixlength, "throw" routes and empty tables continue with the next rule. Within a
  /// table: longest prefix; among equal prefixes the lowest metric whose TOS matches (0 matches
  /// any), whose scope is not narrower than flow.scope, and whose next hops are alive (device
  /// up; linkdown skipped only if ignore_routes_with_linkdown). A next hop on a device that the
  /// snapshot's links do not hold (an inconsistent snapshot: the kernel deletes a device's routes
  /// with it) is kept, never skipped: the result's oif then names a device FindInterface does not
  /// find, and the caller reports it (the walk: FATAL link_missing). The source is then
  /// selected as the kernel does (RouteResult::prefsrc). Never fails: errors are in the result.
  RouteResult Lookup(const Flow& flow) const;

  /// Lookup in one table only (no rules). error ENETUNREACH when nothing matches, EAGAIN for a
  /// throw route.
  RouteResult LookupTable(uint32_t table, const Flow& flow) const;

  /// inet_select_addr(dev, dst, scope): the first primary address of `dev` whose scope is not
  /// narrower than `scope`, preferring one whose subnet contains `dst` (when dst is given), then
  /// any such address of any other device with scope other than link (loopback first).
  std::optional<net::Ipv4> SelectSourceAddress(absl::string_view dev,
                                               const std::optional<net::Ipv4>& dst,
                                               Scope scope) const;

  /// Route type of `ip` as seen from `dev` (inet_dev_addr_type with the local table): kLocal,
  /// kBroadcast, kMulticast or kUnicast. `dev` empty = any device. Used by `-m addrtype`.
  RouteType AddressType(const net::Ipv4& ip, absl::string_view dev = {}) const;

  /// fib_validate_source for a packet src -> dst received on `iif`: the effective rp_filter is
  /// max(conf.all, conf.<iif>) (0 off, 1 strict, 2 loose). The reverse lookup has dst = src,
  /// src = dst, iif = `forward_oif` (the forward route's device) or "lo" when the packet is
  /// delivered locally (forward_oif empty), mark = packet mark only with src_valid_mark.
  /// Strict passes when a next hop of the reverse route uses `iif`; loose when any unicast route
  /// back exists; both fail when there is none (or it is not unicast/local-with-accept_local).
  /// With rp_filter 0 the check only rejects a source that is one of our own addresses (unless
  /// accept_local) — or, with custom rules/local routes present, a non-unicast reverse route.
  RpfResult ValidateSource(const net::Ipv4& src, const net::Ipv4& dst, absl::string_view iif,
                           absl::string_view forward_oif = {}, uint32_t mark = 0,
                           uint8_t tos = 0) const;

  /// Same check as the `-m rpfilter` netfilter match does it, with an explicit mode (1 strict,
  /// 2 loose) and accept_local flag, independent of the sysctls.
  RpfResult ReversePathCheck(const net::Ipv4& src, const net::Ipv4& dst, absl::string_view iif,
                             int mode, bool accept_local, uint32_t mark = 0) const;

  /// The forwarding switch for packets entering on `iif`: conf.<iif>.forwarding (falls back to
  /// ip_forward when absent). `ip_forward_off` is set when net.ipv4.ip_forward is 0 too.
  bool ForwardingAllowed(absl::string_view iif, bool* ip_forward_off = nullptr) const;

  /// ip_route_input_slow for `flow` (flow.iif required, flow.src required): martian checks,
  /// lookup, local delivery (with fib_validate_source), broadcast, per-ingress-device forwarding
  /// check, then fib_validate_source for forwarded packets. Netfilter is NOT applied here (the
  /// caller runs PREROUTING before and FORWARD/INPUT after).
  InputResult RouteInput(const Flow& flow) const;

  /// ip_route_output_key for a locally generated packet: a given flow.src must be a local address
  /// (else error EINVAL); a kLocal result goes out on "lo" with src = dst when unset; otherwise
  /// the source is selected as Lookup does.
  RouteResult RouteOutput(const Flow& flow) const;

 private:
  struct Index;
  void MarkPresent(NetstackSource source);
  const Interface* OifInterface(const Route& route) const;

  std::vector<Interface> interfaces_;
  std::vector<Route> routes_;
  std::vector<Rule> rules_;
  std::vector<Neighbor> neighbors_;
  std::vector<FdbEntry> fdb_;
  Sysctls sysctls_;
  uint32_t present_ = 0;  // bit per NetstackSource
  bool custom_rules_ = false;
  std::unique_ptr<Index> index_;
};

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_NETSTACK_H_
