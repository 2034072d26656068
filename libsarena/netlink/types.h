// The rtnetlink vocabulary as netlink/ uses it: scopes, route types and protocols, routing
// tables, rule actions and neighbour states are defined once in libsarena/net/rtnl.h (shared
// with model/, which reads the same values from `ip -j` output) and named here under nl:: so
// the netlink structs read like the kernel's (nl::Route::scope is a net::Scope).
// Source: rtnetlink(7), <linux/rtnetlink.h>.
#ifndef LIBSARENA_NETLINK_TYPES_H_
#define LIBSARENA_NETLINK_TYPES_H_

#include "libsarena/net/rtnl.h"

namespace sarena::nl {

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

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_TYPES_H_
