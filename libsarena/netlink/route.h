// IPv4 routes (rtnetlink RTM_*ROUTE). Operations live on nl::Socket (socket.h).
// Source: rtnetlink(7) "RTM_NEWROUTE", <linux/rtnetlink.h>, ip-route(8).
#ifndef LIBSARENA_NETLINK_ROUTE_H_
#define LIBSARENA_NETLINK_ROUTE_H_

#include <linux/netlink.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/link.h"
#include "libsarena/netlink/types.h"

namespace sarena::nl {

/// One IPv4 route. Used both to describe a route to add/replace/delete and to report routes
/// from a dump or a lookup. Multipath (RTA_MULTIPATH) routes are reported with their first
/// nexthop only.
struct Route {
  net::Ipv4Prefix dst;          // RTA_DST / rtm_dst_len; 0.0.0.0/0 is "default"
  uint32_t table = kTableMain;  // RTA_TABLE (falls back to rtm_table)
  RouteType type = RouteType::kUnicast;
  /// rtm_scope. When unset on add/replace, chosen like iproute2: host for local/nat routes,
  /// link for broadcast/multicast/anycast and for unicast routes without a gateway, else
  /// universe. Always set in reported routes.
  std::optional<Scope> scope;
  RouteProtocol protocol = RouteProtocol::kBoot;  // rtm_protocol
  std::optional<net::Ipv4> gateway;               // RTA_GATEWAY ("via")
  int oif = 0;                                    // RTA_OIF ("dev"), 0 = none
  std::optional<net::Ipv4> prefsrc;               // RTA_PREFSRC ("src"): preferred source address
  std::optional<uint32_t> priority;               // RTA_PRIORITY ("metric")
  std::optional<uint32_t> mtu;                    // RTA_METRICS/RTAX_MTU ("mtu"), bytes
  bool onlink = false;  // RTNH_F_ONLINK: gateway is on-link even without a
                        // matching subnet route
  uint8_t tos = 0;      // rtm_tos
  uint32_t flags = 0;   // rtm_flags as reported (RTNH_F_*, RTM_F_*)
};

/// Extra inputs for Socket::GetRoute (`ip route get DST from SRC iif IIF oif OIF mark M`).
struct RouteLookup {
  std::optional<net::Ipv4> src;  // RTA_SRC: source address of the flow
  int iif = 0;                   // RTA_IIF: simulate a packet received on this link
                                 // (then `src` is required by the kernel)
  int oif = 0;                   // RTA_OIF: force the output link
  std::optional<uint32_t> mark;  // RTA_MARK: fwmark for policy rules
  /// RTM_F_FIB_MATCH: return the FIB entry that matched (its dst prefix, table, protocol,
  /// metric) instead of the resolved /32 route (`ip route get fibmatch`).
  bool fib_match = false;
};

/// Filter for Socket::ListRoutes.
struct RouteFilter {
  /// Only this table (default: main, like `ip route show`); nullopt = every table
  /// (`ip route show table all`).
  std::optional<uint32_t> table = kTableMain;
  int oif = 0;  // only routes out of this ifindex; 0 = any
};

/// Decodes one RTM_NEWROUTE message (AF_INET only). Errors: kInvalidArgument when malformed
/// or not IPv4.
absl::StatusOr<Route> ParseRouteMessage(const nlmsghdr& nlh);

/// "10.0.0.0/24 via 10.0.0.1 dev 5 table main proto boot scope global ..." (ip-route-like, for
/// messages and logs; devices are ifindexes).
std::string ToString(const Route& route);

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_ROUTE_H_
