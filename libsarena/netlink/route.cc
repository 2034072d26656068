#include "libsarena/netlink/route.h"

#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/netlink/internal.h"
#include "libsarena/netlink/socket.h"

namespace sarena::nl {

using internal::AttrIpv4;
using internal::AttrU32;
using internal::MsgBuf;

namespace {

Scope DefaultScope(const Route& r) {
  switch (r.type) {
    case RouteType::kLocal:
    case RouteType::kNat:
      return Scope::kHost;
    case RouteType::kBroadcast:
    case RouteType::kMulticast:
    case RouteType::kAnycast:
      return Scope::kLink;
    case RouteType::kUnicast:
    case RouteType::kUnspec:
      return r.gateway ? Scope::kUniverse : Scope::kLink;
    default:
      return Scope::kUniverse;
  }
}

std::string RouteWhat(absl::string_view verb, const Route& r) {
  std::string s = absl::StrCat(verb, " route '", r.dst.to_string(), "'");
  if (r.table != kTableMain) absl::StrAppend(&s, " in table ", TableName(r.table));
  return s;
}

// Header + attributes shared by add/replace/delete.
nlmsghdr* StartRouteMsg(MsgBuf& buf, uint16_t type, uint16_t flags, const Route& r,
                        bool for_delete) {
  nlmsghdr* nlh = buf.Start(type, flags);
  auto* rtm = MsgBuf::PutHeader<rtmsg>(nlh);
  rtm->rtm_family = AF_INET;
  rtm->rtm_dst_len = static_cast<uint8_t>(r.dst.prefix_length());
  rtm->rtm_tos = r.tos;
  rtm->rtm_table = r.table < 256 ? static_cast<uint8_t>(r.table) : uint8_t{RT_TABLE_UNSPEC};
  if (for_delete) {
    rtm->rtm_protocol = RTPROT_UNSPEC;
    rtm->rtm_scope = RT_SCOPE_NOWHERE;
    rtm->rtm_type =
        r.type == RouteType::kUnicast ? uint8_t{RTN_UNSPEC} : static_cast<uint8_t>(r.type);
  } else {
    rtm->rtm_protocol = static_cast<uint8_t>(r.protocol);
    rtm->rtm_scope = static_cast<uint8_t>(r.scope ? *r.scope : DefaultScope(r));
    rtm->rtm_type = static_cast<uint8_t>(r.type);
    if (r.onlink) rtm->rtm_flags |= RTNH_F_ONLINK;
  }
  mnl_attr_put_u32(nlh, RTA_TABLE, r.table);
  if (r.dst.prefix_length() > 0) internal::PutIpv4(nlh, RTA_DST, r.dst.address());
  if (r.gateway) internal::PutIpv4(nlh, RTA_GATEWAY, *r.gateway);
  if (r.oif > 0) mnl_attr_put_u32(nlh, RTA_OIF, static_cast<uint32_t>(r.oif));
  if (r.priority) mnl_attr_put_u32(nlh, RTA_PRIORITY, *r.priority);
  if (!for_delete) {
    if (r.prefsrc) internal::PutIpv4(nlh, RTA_PREFSRC, *r.prefsrc);
    if (r.mtu) {
      nlattr* metrics = mnl_attr_nest_start(nlh, RTA_METRICS);
      mnl_attr_put_u32(nlh, RTAX_MTU, *r.mtu);
      mnl_attr_nest_end(nlh, metrics);
    }
  }
  return nlh;
}

}  // namespace

std::string ToString(const Route& r) {
  std::string s;
  if (r.type != RouteType::kUnicast) absl::StrAppend(&s, ToString(r.type), " ");
  absl::StrAppend(&s, r.dst.prefix_length() == 0 ? "default" : r.dst.to_string());
  if (r.gateway) absl::StrAppend(&s, " via ", r.gateway->to_string());
  if (r.oif) absl::StrAppend(&s, " dev ", r.oif);
  absl::StrAppend(&s, " table ", TableName(r.table), " proto ", ToString(r.protocol));
  if (r.scope) absl::StrAppend(&s, " scope ", ToString(*r.scope));
  if (r.prefsrc) absl::StrAppend(&s, " src ", r.prefsrc->to_string());
  if (r.priority) absl::StrAppend(&s, " metric ", *r.priority);
  if (r.mtu) absl::StrAppend(&s, " mtu ", *r.mtu);
  if (r.onlink) absl::StrAppend(&s, " onlink");
  return s;
}

absl::StatusOr<Route> ParseRouteMessage(const nlmsghdr& nlh) {
  SARENA_RETURN_IF_ERROR(internal::CheckMessage(nlh, RTM_NEWROUTE, sizeof(rtmsg), "route"));
  const auto* rtm = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(&nlh));
  if (rtm->rtm_family != AF_INET) {
    return absl::InvalidArgumentError(
        absl::StrCat("parse route: family ", rtm->rtm_family, " is not AF_INET"));
  }
  if (rtm->rtm_dst_len > 32) return absl::InvalidArgumentError("parse route: dst_len > 32");
  Route r;
  r.table = rtm->rtm_table;
  r.type = static_cast<RouteType>(rtm->rtm_type);
  r.scope = static_cast<Scope>(rtm->rtm_scope);
  r.protocol = static_cast<RouteProtocol>(rtm->rtm_protocol);
  r.tos = rtm->rtm_tos;
  r.flags = rtm->rtm_flags;
  r.onlink = (rtm->rtm_flags & RTNH_F_ONLINK) != 0;
  net::Ipv4 dst;
  internal::ForEachAttr(nlh, sizeof(rtmsg), [&](const nlattr* a) {
    switch (mnl_attr_get_type(a)) {
      case RTA_TABLE:
        if (auto v = AttrU32(a)) r.table = *v;
        break;
      case RTA_DST:
        if (auto v = AttrIpv4(a)) dst = *v;
        break;
      case RTA_GATEWAY:
        r.gateway = AttrIpv4(a);
        break;
      case RTA_OIF:
        if (auto v = AttrU32(a)) r.oif = static_cast<int>(*v);
        break;
      case RTA_PREFSRC:
        r.prefsrc = AttrIpv4(a);
        break;
      case RTA_PRIORITY:
        r.priority = AttrU32(a);
        break;
      case RTA_METRICS: {
        internal::ForEachNested(a, [&](const nlattr* m) {
          if (mnl_attr_get_type(m) == RTAX_MTU) r.mtu = AttrU32(m);
        });
        break;
      }
      case RTA_MULTIPATH: {
        // Report the first nexthop only (see route.h).
        const size_t len = mnl_attr_get_payload_len(a);
        if (len >= sizeof(rtnexthop)) {
          const auto* nh = static_cast<const rtnexthop*>(mnl_attr_get_payload(a));
          if (nh->rtnh_len >= sizeof(rtnexthop) && nh->rtnh_len <= len) {
            r.oif = nh->rtnh_ifindex;
            r.onlink = r.onlink || (nh->rtnh_flags & RTNH_F_ONLINK);
            const char* p = reinterpret_cast<const char*>(nh) + RTNH_ALIGN(sizeof(rtnexthop));
            int left = static_cast<int>(nh->rtnh_len) - RTNH_ALIGN(sizeof(rtnexthop));
            const auto* na = reinterpret_cast<const nlattr*>(p);
            while (mnl_attr_ok(na, left)) {
              if (mnl_attr_get_type(na) == RTA_GATEWAY) r.gateway = AttrIpv4(na);
              left -= static_cast<int>(MNL_ALIGN(na->nla_len));
              na = mnl_attr_next(na);
            }
          }
        }
        break;
      }
      default:
        break;
    }
  });
  r.dst = net::Ipv4Prefix(dst, rtm->rtm_dst_len);
  return r;
}

absl::Status Socket::ModifyRoute(const Route& r, uint16_t type, uint16_t flags,
                                 absl::string_view verb) {
  MsgBuf buf;
  nlmsghdr* nlh = StartRouteMsg(buf, type, flags, r, type == RTM_DELROUTE);
  absl::Status st = Request(nlh, RouteWhat(verb, r));
  // ENETUNREACH on add/replace: the gateway is not reachable with the current routes
  // (extack "Nexthop has invalid gateway") — a precondition, not an internal error.
  if (!st.ok() && type == RTM_NEWROUTE && last_errno_ == ENETUNREACH) {
    return internal::WithCode(std::move(st), absl::StatusCode::kFailedPrecondition);
  }
  return st;
}

absl::Status Socket::AddRoute(const Route& route) {
  return ModifyRoute(route, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, "add");
}

absl::Status Socket::ReplaceRoute(const Route& route) {
  return ModifyRoute(route, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, "replace");
}

absl::Status Socket::DeleteRoute(const Route& route) {
  return ModifyRoute(route, RTM_DELROUTE, 0, "delete");
}

absl::StatusOr<Route> Socket::GetRoute(const net::Ipv4& dst, const RouteLookup& lookup) {
  const std::string what = absl::StrCat("get route '", dst.to_string(), "'");
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_GETROUTE, 0);
  auto* rtm = MsgBuf::PutHeader<rtmsg>(nlh);
  rtm->rtm_family = AF_INET;
  rtm->rtm_dst_len = 32;
  // RTM_F_LOOKUP_TABLE: report the table the answer came from (as `ip route get` does).
  rtm->rtm_flags |= RTM_F_LOOKUP_TABLE;
  if (lookup.fib_match) rtm->rtm_flags |= RTM_F_FIB_MATCH;
  internal::PutIpv4(nlh, RTA_DST, dst);
  if (lookup.src) {
    rtm->rtm_src_len = 32;
    internal::PutIpv4(nlh, RTA_SRC, *lookup.src);
  }
  if (lookup.iif > 0) mnl_attr_put_u32(nlh, RTA_IIF, static_cast<uint32_t>(lookup.iif));
  if (lookup.oif > 0) mnl_attr_put_u32(nlh, RTA_OIF, static_cast<uint32_t>(lookup.oif));
  if (lookup.mark) mnl_attr_put_u32(nlh, RTA_MARK, *lookup.mark);
  std::optional<Route> out;
  absl::Status st = Request(nlh, what, [&](const nlmsghdr& m) -> absl::Status {
    if (m.nlmsg_type != RTM_NEWROUTE) return absl::OkStatus();
    SARENA_ASSIGN_OR_RETURN(Route r, ParseRouteMessage(m));
    out = std::move(r);
    return absl::OkStatus();
  });
  if (!st.ok()) {
    if (last_errno_ == ENETUNREACH || last_errno_ == EHOSTUNREACH) {
      return internal::WithCode(std::move(st), absl::StatusCode::kNotFound);
    }
    return st;
  }
  if (!out) return absl::InternalError(absl::StrCat(what, ": the kernel sent no route"));
  return *std::move(out);
}

absl::StatusOr<std::vector<Route>> Socket::ListRoutes(const RouteFilter& filter) {
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_GETROUTE, 0);
  MsgBuf::PutHeader<rtmsg>(nlh)->rtm_family = AF_INET;
  std::vector<Route> out;
  const std::string what =
      absl::StrCat("list routes 'table ", filter.table ? TableName(*filter.table) : "all", "'");
  SARENA_RETURN_IF_ERROR(Dump(
      nlh, what,
      [&](const nlmsghdr& m) -> absl::Status {
        if (m.nlmsg_type != RTM_NEWROUTE) return absl::OkStatus();
        const auto* h = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(&m));
        if (h->rtm_family != AF_INET || (h->rtm_flags & RTM_F_CLONED)) return absl::OkStatus();
        SARENA_ASSIGN_OR_RETURN(Route r, ParseRouteMessage(m));
        if (filter.table && r.table != *filter.table) return absl::OkStatus();
        if (filter.oif > 0 && r.oif != filter.oif) return absl::OkStatus();
        out.push_back(std::move(r));
        return absl::OkStatus();
      },
      [&] { out.clear(); }));
  return out;
}

}  // namespace sarena::nl
