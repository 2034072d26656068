// The rtnetlink vocabulary: scopes, route types, route protocols, routing table ids, policy rule
// actions and neighbour states, with iproute2's names for them. One home for both sides that
// speak it: netlink/ (the kernel's messages) and model/ (`ip -j` output in a snapshot).
// Values are the kernel's uapi numbers; any other value the kernel may report is kept as is.
// Sources: rtnetlink(7); <linux/rtnetlink.h> (RT_SCOPE_*, RTN_*, RTPROT_*, RT_TABLE_*);
// <linux/fib_rules.h> (FR_ACT_*); <linux/neighbour.h> (NUD_*); iproute2's rt_scopes,
// rt_protos and rt_tables files and its print code (ip/iproute.c, ip/ipneigh.c).
#ifndef LIBSARENA_NET_RTNL_H_
#define LIBSARENA_NET_RTNL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sarena::net {

/// Address / route scope (rtm_scope, ifa_scope, flowi4_scope): the distance to the destination.
/// Numeric order matters: a larger value is a narrower scope.
enum class Scope : uint8_t {
  kUniverse = 0,  // RT_SCOPE_UNIVERSE: "global" in iproute2
  kSite = 200,    // RT_SCOPE_SITE
  kLink = 253,    // RT_SCOPE_LINK: on-link, no gateway
  kHost = 254,    // RT_SCOPE_HOST: local addresses
  kNowhere = 255  // RT_SCOPE_NOWHERE
};
/// iproute2's names: "global", "site", "link", "host", "nowhere"; any other value as its
/// decimal number (what `ip` prints without an rt_scopes entry).
std::string ToString(Scope scope);
/// Inverse of ToString; also accepts "universe" and a decimal 0..255.
/// Errors: kInvalidArgument "invalid scope '<text>'".
absl::StatusOr<Scope> ParseScope(absl::string_view text);

/// Route type (rtm_type, RTN_*).
enum class RouteType : uint8_t {
  kUnspec = 0,
  kUnicast = 1,  // a gateway or direct route; iproute2 prints no "type" for it
  kLocal = 2,    // accept locally (table local)
  kBroadcast = 3,
  kAnycast = 4,
  kMulticast = 5,
  kBlackhole = 6,    // drop silently (EINVAL for a local sender)
  kUnreachable = 7,  // drop, ICMP host unreachable (EHOSTUNREACH locally)
  kProhibit = 8,     // drop, ICMP administratively prohibited (EACCES locally)
  kThrow = 9,        // continue with the next policy rule
  kNat = 10,
  kXresolve = 11,
};
/// iproute2's names: "unspec", "unicast", "local", "broadcast", "anycast", "multicast",
/// "blackhole", "unreachable", "prohibit", "throw", "nat", "xresolve"; others as the number.
std::string ToString(RouteType type);
/// Inverse of ToString for the names. Errors: kInvalidArgument "invalid route type '<text>'".
absl::StatusOr<RouteType> ParseRouteType(absl::string_view text);

/// Well-known routing table ids (RT_TABLE_*). Table ids are 32-bit (RTA_TABLE / FRA_TABLE).
inline constexpr uint32_t kTableUnspec = 0;
inline constexpr uint32_t kTableDefault = 253;
inline constexpr uint32_t kTableMain = 254;
inline constexpr uint32_t kTableLocal = 255;
/// iproute2's names: "unspec", "default", "main", "local", else the decimal id.
std::string TableName(uint32_t table);
/// Inverse of TableName (names or a decimal id).
/// Errors: kInvalidArgument "invalid routing table '<text>'".
absl::StatusOr<uint32_t> ParseTable(absl::string_view text);

/// Route protocol (rtm_protocol, RTPROT_*): who installed the route. Any value 0..255 may
/// appear; the named ones are iproute2's rt_protos plus sarenad's own.
enum class RouteProtocol : uint8_t {
  kUnspec = 0,
  kRedirect = 1,
  kKernel = 2,  // installed by the kernel (prefix routes of addresses, table local)
  kBoot = 3,    // iproute2's default for `ip route add`; iproute2 prints no "proto" for it
  kStatic = 4,
  kGated = 8,
  kRa = 9,
  kMrt = 10,
  kZebra = 11,
  kBird = 12,  // BIRD (Calico's BGP routes show "proto bird")
  kDnrouted = 13,
  kXorp = 14,
  kNtk = 15,
  kDhcp = 16,
  kKeepalived = 18,
  kBabel = 42,
  /// sarenad's cluster routes (remote pod CIDRs, the cluster-CIDR unreachable route):
  /// `ip route show proto 93`. Not registered in iproute2's rt_protos; chosen so a route sync
  /// can tell its own routes from everyone else's.
  kSarena = 93,
  kOpenr = 99,
  kBgp = 186,
  kIsis = 187,
  kOspf = 188,
  kRip = 189,
  kEigrp = 192,
};
/// iproute2's rt_protos names ("kernel", "boot", "static", "bird", "zebra", "bgp", "dhcp", ...);
/// any other value (sarenad's 93 included) as its decimal number, as `ip` prints it.
std::string ToString(RouteProtocol protocol);
/// Inverse of ToString (names or a decimal 0..255).
/// Errors: kInvalidArgument "invalid route protocol '<text>'".
absl::StatusOr<RouteProtocol> ParseRouteProtocol(absl::string_view text);

/// Policy rule action (fib_rule_hdr.action, FR_ACT_*).
enum class RuleAction : uint8_t {
  kUnspec = 0,
  kToTable = 1,  // "lookup TABLE" (the default)
  kGoto = 2,     // "goto PRIORITY"
  kNop = 3,
  kBlackhole = 6,
  kUnreachable = 7,
  kProhibit = 8,
};
/// iproute2's names: "lookup", "goto", "nop", "blackhole", "unreachable", "prohibit"
/// ("unspec" for 0); others as the decimal number.
std::string ToString(RuleAction action);

/// Neighbour entry state (ndm_state, NUD_* bits; an entry normally has exactly one).
enum class NeighState : uint16_t {
  kNone = 0x00,
  kIncomplete = 0x01,
  kReachable = 0x02,
  kStale = 0x04,
  kDelay = 0x08,
  kProbe = 0x10,
  kFailed = 0x20,
  kNoArp = 0x40,
  kPermanent = 0x80,
};
/// A set of states is the union of its bits (the kernel's ndm_state is such a set).
constexpr NeighState operator|(NeighState a, NeighState b) {
  return static_cast<NeighState>(static_cast<uint16_t>(a) | static_cast<uint16_t>(b));
}
constexpr NeighState& operator|=(NeighState& a, NeighState b) { return a = a | b; }
/// Whether `state` has any of the bits of `bits` (HasAny(s, kFailed | kIncomplete)).
constexpr bool HasAny(NeighState state, NeighState bits) {
  return (static_cast<uint16_t>(state) & static_cast<uint16_t>(bits)) != 0;
}
/// iproute2's names: "PERMANENT", "REACHABLE", "STALE", ... ("NONE" for 0); several bits are
/// joined with ',' in bit order (as `ip neigh` prints them); unknown bits as hex ("0x100").
std::string ToString(NeighState state);
/// One state bit from its iproute2 name: one of the eight that `ip neigh` prints ("INCOMPLETE",
/// "REACHABLE", "STALE", "DELAY", "PROBE", "FAILED", "NOARP", "PERMANENT"; an element of
/// `ip -j neigh`'s "state" array), exactly as printed. "NONE" is no such name (iproute2 prints
/// no state at all for NUD_NONE) and neither is a ','-joined list.
/// Errors: kInvalidArgument "invalid neighbour state '<text>'".
absl::StatusOr<NeighState> ParseNeighState(absl::string_view text);

}  // namespace sarena::net

#endif  // LIBSARENA_NET_RTNL_H_
