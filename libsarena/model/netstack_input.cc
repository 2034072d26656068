// The kernel's routing decisions on a Netstack: per-device forwarding, reverse-path filtering
// (fib_validate_source), input routing of a received packet (ip_route_input_slow) and output
// routing of a locally generated one (ip_route_output_key_hash_rcu).
#include <cerrno>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/netstack_internal.h"

namespace sarena::model {

using internal::U32;

bool Netstack::ForwardingAllowed(absl::string_view iif, bool* ip_forward_off) const {
  SysctlValue fwd = sysctls_.Forwarding(iif);
  if (ip_forward_off != nullptr) {
    SysctlValue g = sysctls_.IpForward();
    *ip_forward_off = g.known && g.value == 0;
  }
  // An unknown value (no sysctl.txt) is treated as enabled: the diag layer reports the missing
  // file instead of inventing a drop.
  if (!fwd.known) return true;
  return fwd.value != 0;
}

namespace {

bool NexthopsUseDev(const RouteResult& r, absl::string_view dev) {
  for (const Nexthop& nh : r.nexthops) {
    if (nh.dev == dev) return true;
  }
  return false;
}

}  // namespace

RpfResult Netstack::ReversePathCheck(const net::Ipv4& src, const net::Ipv4& dst,
                                     absl::string_view iif, int mode, bool accept_local,
                                     uint32_t mark) const {
  RpfResult out;
  out.mode = mode;
  out.mode_known = true;
  Flow rf;
  rf.dst = src;
  rf.src = dst;
  rf.mark = mark;
  out.reverse = Lookup(rf);
  if (out.reverse.error != 0) {
    out.pass = false;
    out.failure = RpfFailure::kNoRoute;
    out.detail = absl::StrCat("no route back to ", src.to_string(), ": ", out.reverse.ToString());
    return out;
  }
  if (out.reverse.type == RouteType::kLocal && !accept_local) {
    out.pass = false;
    out.failure = RpfFailure::kMartianSource;
    out.detail = absl::StrCat("source ", src.to_string(), " is a local address");
    return out;
  }
  if (out.reverse.type != RouteType::kUnicast && out.reverse.type != RouteType::kLocal) {
    out.pass = false;
    out.failure = RpfFailure::kMartianSource;
    out.detail = absl::StrCat("route back to ", src.to_string(), " is ",
                              ToString(out.reverse.type));
    return out;
  }
  if (mode == 1 && !NexthopsUseDev(out.reverse, iif)) {
    out.pass = false;
    out.failure = RpfFailure::kWrongInterface;
    out.detail = absl::StrCat("strict reverse path: route back to ", src.to_string(), " uses ",
                              out.reverse.oif, ", packet came in on ", iif);
    return out;
  }
  out.pass = true;
  return out;
}

RpfResult Netstack::ValidateSource(const net::Ipv4& src, const net::Ipv4& dst,
                                   absl::string_view iif, absl::string_view forward_oif,
                                   uint32_t mark, uint8_t tos) const {
  RpfResult out;
  SysctlValue rpf = sysctls_.RpFilter(iif);
  int r = static_cast<int>(rpf.value);
  out.mode = r;
  out.mode_known = rpf.known;
  bool accept_local = sysctls_.AcceptLocal(iif).value != 0;
  bool same_dev_redirect = !forward_oif.empty() && forward_oif == iif &&
                           sysctls_.SendRedirects(iif).value != 0;
  if (r == 0 && !same_dev_redirect) {
    if (accept_local) return out;
    if (!(index_->custom_local_routes || custom_rules_)) {
      if (IsLocalAddress(src)) {
        out.pass = false;
        out.failure = RpfFailure::kMartianSource;
        out.detail = absl::StrCat("source ", src.to_string(), " is one of our own addresses");
      }
      return out;
    }
  }
  // __fib_validate_source.
  Flow rf;
  rf.dst = src;
  rf.src = dst;
  rf.iif = forward_oif;  // empty = LOOPBACK_IFINDEX
  rf.tos = tos;
  rf.mark = sysctls_.SrcValidMark(iif).value ? mark : 0;
  out.reverse = Lookup(rf);
  const Interface* in = FindInterface(iif);
  bool no_addr = in == nullptr || in->addresses.empty();
  auto last_resort = [&](RpfFailure why, std::string detail) {
    if (r != 0) {
      out.pass = false;
      out.failure = why;
      out.detail = std::move(detail);
    }
    return out;
  };
  if (out.reverse.error != 0) {
    return last_resort(RpfFailure::kNoRoute,
                       absl::StrCat("rp_filter=", r, ": no route back to ", src.to_string(), " (",
                                    out.reverse.ToString(), ")"));
  }
  if (out.reverse.type != RouteType::kUnicast &&
      (out.reverse.type != RouteType::kLocal || !accept_local)) {
    out.pass = false;
    out.failure = RpfFailure::kMartianSource;
    out.detail = absl::StrCat("martian source ", src.to_string(), ": route back is ",
                              ToString(out.reverse.type));
    return out;
  }
  bool dev_match = NexthopsUseDev(out.reverse, iif) ||
                   (out.reverse.type == RouteType::kLocal && in != nullptr && in->loopback);
  if (dev_match) return out;
  if (no_addr) {
    return last_resort(RpfFailure::kNoAddressOnIngress,
                       absl::StrCat("rp_filter=", r, ": route back to ", src.to_string(), " uses ",
                                    out.reverse.oif, " and ", iif, " has no IPv4 address"));
  }
  if (r == 1) {
    out.pass = false;
    out.failure = RpfFailure::kWrongInterface;
    out.detail = absl::StrCat("rp_filter=1 (strict): route back to ", src.to_string(), " uses ",
                              out.reverse.oif, ", packet came in on ", iif);
    return out;
  }
  return out;  // loose (2) or 0: a unicast route back exists
}

namespace {

// The address checks of ip_route_input_slow before the FIB lookup (martian source and
// destination, limited broadcast, loopback without route_localnet, multicast): true when they
// decide the packet's fate (in *out).
bool InputAddressChecksDecide(const Flow& flow, bool localnet, InputResult* out) {
  uint32_t s = flow.src ? U32(*flow.src) : 0;
  uint32_t d = U32(flow.dst);
  auto martian_src = [out](std::string why) {
    out->drop = InputDrop::kMartianSource;
    out->detail = std::move(why);
    return true;
  };
  if ((s >> 28) == 0xe || s == 0xffffffffu) return martian_src("multicast/broadcast source");
  if (d == 0xffffffffu || (s == 0 && d == 0)) {
    out->decision = InputDecision::kBroadcast;
    return true;
  }
  if ((s >> 24) == 0) return martian_src("source in 0.0.0.0/8");
  if ((d >> 24) == 0) {
    out->drop = InputDrop::kMartianDestination;
    out->detail = "destination in 0.0.0.0/8";
    return true;
  }
  if ((d >> 24) == 127) {
    if (!localnet) {
      out->drop = InputDrop::kMartianDestination;
      out->detail = "loopback destination on a non-loopback device (route_localnet=0)";
      return true;
    }
  } else if ((s >> 24) == 127 && !localnet) {
    return martian_src("loopback source on a non-loopback device (route_localnet=0)");
  }
  if ((d >> 28) == 0xe) {
    out->decision = InputDecision::kBroadcast;  // multicast: delivered if joined; not modelled
    return true;
  }
  return false;
}

// The drop for a failed input lookup (ip_route_input_slow: ip_error's errno to the drop).
InputDrop DropOfLookupError(const RouteResult& r) {
  switch (r.error) {
    case EINVAL: return InputDrop::kBlackhole;
    case EACCES: return InputDrop::kProhibit;
    case EHOSTUNREACH: return InputDrop::kUnreachable;
    default:
      return r.route != nullptr || r.rule != nullptr ? InputDrop::kUnreachable
                                                      : InputDrop::kNoRoute;
  }
}

// Whether fib_validate_source rejected the packet: then the drop (martian source or rp_filter)
// is set on *out.
bool RejectedBySourceCheck(InputResult* out) {
  if (out->rpf.pass) return false;
  out->drop = out->rpf.failure == RpfFailure::kMartianSource ? InputDrop::kMartianSource
                                                              : InputDrop::kRpFilter;
  out->detail = out->rpf.detail;
  return true;
}

}  // namespace

InputResult Netstack::RouteInput(const Flow& flow) const {
  InputResult out;
  const Interface* in = FindInterface(flow.iif);
  if (Has(NetstackSource::kLinks) || Has(NetstackSource::kAddrs)) {
    if (in == nullptr) {
      out.drop = InputDrop::kIngressMissing;
      out.detail = absl::StrCat("no interface '", flow.iif, "'");
      return out;
    }
    if (!in->admin_up) {
      out.drop = InputDrop::kIngressDown;
      out.detail = absl::StrCat("interface ", flow.iif, " is down");
      return out;
    }
  }
  if (InputAddressChecksDecide(flow, sysctls_.RouteLocalnet(flow.iif).value != 0, &out)) {
    return out;
  }
  Flow f = flow;
  f.oif = {};
  f.scope = Scope::kUniverse;
  out.route = Lookup(f);
  bool ipfwd_off = false;
  bool fwd = ForwardingAllowed(flow.iif, &ipfwd_off);
  if (out.route.error != 0) {
    out.drop = DropOfLookupError(out.route);
    out.detail = out.route.ToString();
    return out;
  }
  if (out.route.type == RouteType::kBroadcast) {
    out.decision = InputDecision::kBroadcast;
    return out;
  }
  if (out.route.type == RouteType::kLocal) {
    out.rpf = ValidateSource(*flow.src, flow.dst, flow.iif, {}, flow.mark, flow.tos);
    if (RejectedBySourceCheck(&out)) return out;
    out.decision = InputDecision::kLocal;
    return out;
  }
  if (!fwd) {
    out.drop = InputDrop::kForwardingDisabled;
    out.ip_forward_disabled = ipfwd_off;
    out.detail = absl::StrCat("net.ipv4.conf.", flow.iif, ".forwarding = 0",
                              ipfwd_off ? " (net.ipv4.ip_forward = 0)" : "");
    return out;
  }
  if (out.route.type != RouteType::kUnicast) {
    out.drop = InputDrop::kMartianDestination;
    out.detail = absl::StrCat("route type ", ToString(out.route.type), " cannot be forwarded");
    return out;
  }
  out.rpf = ValidateSource(*flow.src, flow.dst, flow.iif, out.route.oif, flow.mark, flow.tos);
  if (RejectedBySourceCheck(&out)) return out;
  out.decision = InputDecision::kForward;
  return out;
}

RouteResult Netstack::RouteOutput(const Flow& flow) const {
  Flow f = flow;
  f.iif = {};
  if (f.src && U32(*f.src) != 0) {
    uint32_t s = U32(*f.src);
    if ((s >> 28) == 0xe || s == 0xffffffffu || !IsLocalAddress(*f.src)) {
      RouteResult r;
      r.error = EINVAL;
      r.type = RouteType::kUnspec;
      return r;
    }
  } else {
    f.src.reset();
  }
  RouteResult res = Lookup(f);
  if (res.error != 0) {
    if (!f.oif.empty() && res.error == ENETUNREACH) {
      // "Apparently, routing tables are wrong. Assume, that the destination is on link."
      RouteResult onlink;
      onlink.type = RouteType::kUnicast;
      onlink.oif = std::string(f.oif);
      onlink.prefsrc = f.src ? f.src : SelectSourceAddress(f.oif, std::nullopt, Scope::kLink);
      Nexthop nh;
      nh.dev = std::string(f.oif);
      onlink.nexthops.push_back(nh);
      return onlink;
    }
    return res;
  }
  if (res.type == RouteType::kLocal) {
    res.oif = "lo";
    res.prefsrc = f.src ? f.src : std::optional<net::Ipv4>(f.dst);
    return res;
  }
  if (f.src) {
    res.prefsrc = f.src;
    return res;
  }
  // ip_route_connect: once a source is chosen, the route is looked up again with it (rules
  // "from X" apply to connected sockets).
  if (res.prefsrc) {
    Flow again = f;
    again.src = res.prefsrc;
    RouteResult second = Lookup(again);
    if (second.error == 0) {
      second.prefsrc = res.prefsrc;
      if (second.type == RouteType::kLocal) second.oif = "lo";
      return second;
    }
    return second;
  }
  return res;
}

}  // namespace sarena::model
