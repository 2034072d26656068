// The kernel's FIB on a Netstack: policy rules (fib_rules_lookup), the longest-prefix match of
// one table (fib_table_lookup: route type, scope, TOS, metric, dead/linkdown next hops), source
// address selection (inet_select_addr) and address types (inet_addr_type).
#include <algorithm>
#include <cerrno>
#include <utility>

#include "libsarena/model/netstack.h"
#include "libsarena/model/netstack_internal.h"

namespace sarena::model {

namespace {

using internal::InPrefix;
using internal::MaskOf;
using internal::U32;

int ErrorOfType(RouteType t) {
  switch (t) {
    case RouteType::kBlackhole: return EINVAL;
    case RouteType::kUnreachable: return EHOSTUNREACH;
    case RouteType::kProhibit: return EACCES;
    case RouteType::kThrow: return EAGAIN;
    case RouteType::kNat: return EINVAL;
    case RouteType::kXresolve: return EINVAL;
    default: return 0;
  }
}

bool RuleMatches(const Rule& r, const Flow& f, uint32_t src) {
  bool m = true;
  absl::string_view iif = f.iif.empty() ? absl::string_view("lo") : f.iif;
  if (!r.iif.empty() && r.iif != iif) m = false;
  if (m && !r.oif.empty() && r.oif != f.oif) m = false;
  if (m && r.fwmark.has_value() && ((*r.fwmark ^ f.mark) & r.fwmask) != 0) m = false;
  if (m && r.src && !InPrefix(*r.src, src)) m = false;
  if (m && r.dst && !InPrefix(*r.dst, U32(f.dst))) m = false;
  if (m && r.tos != 0 && r.tos != f.tos) m = false;
  if (m && r.ipproto != 0 && r.ipproto != f.proto) m = false;
  if (m && (r.sport_start || r.sport_end) && (f.sport < r.sport_start || f.sport > r.sport_end)) {
    m = false;
  }
  if (m && (r.dport_start || r.dport_end) && (f.dport < r.dport_start || f.dport > r.dport_end)) {
    m = false;
  }
  return r.invert ? !m : m;
}

}  // namespace

RouteResult Netstack::LookupTable(uint32_t table, const Flow& flow) const {
  RouteResult res;
  res.error = ENETUNREACH;
  res.table = table;
  auto tit = index_->tables.find(table);
  if (tit == index_->tables.end()) {
    res.error = EAGAIN;  // no such table: the rule continues
    return res;
  }
  const Index::Table& t = tit->second;
  uint32_t dst = U32(flow.dst);
  for (uint8_t len : t.lens) {
    uint64_t key = (static_cast<uint64_t>(len) << 32) | (dst & MaskOf(len));
    auto pit = t.by_prefix.find(key);
    if (pit == t.by_prefix.end()) continue;
    for (uint32_t ri : pit->second) {
      const Route& r = routes_[ri];
      if (r.tos != 0 && r.tos != flow.tos) continue;
      if (static_cast<uint8_t>(r.scope) < static_cast<uint8_t>(flow.scope)) continue;
      int err = ErrorOfType(r.type);
      if (err != 0) {
        res.error = err;
        res.type = r.type;
        res.route = &r;
        return res;
      }
      // Next-hop liveness (fib_lookup_good_nhc) and the bound-device constraint.
      std::vector<Nexthop> alive;
      for (const Nexthop& nh : r.nexthops) {
        if (nh.dead) continue;
        if (!nh.dev.empty() && Has(NetstackSource::kLinks)) {
          const Interface* ifc = FindInterface(nh.dev);
          // A device the links lack: the snapshot is inconsistent (the kernel deletes a device's
          // routes with it). The next hop is kept, so the caller meets the missing device
          // (FindInterface(res.oif) == nullptr) instead of a less specific route taking over.
          if (ifc != nullptr) {
            // The kernel flushes the routes of a device that goes down — except the local
            // routes of its addresses, which stay and keep delivering (the weak host model).
            if (!ifc->admin_up && r.type != RouteType::kLocal) continue;
            bool linkdown = nh.linkdown || (!ifc->CanTransmit());
            if (linkdown && sysctls_.IgnoreRoutesWithLinkdown(nh.dev).value != 0) continue;
          }
        }
        if (!flow.oif.empty() && nh.dev != flow.oif) continue;
        alive.push_back(nh);
      }
      if (r.nexthops.empty()) {
        if (!flow.oif.empty() && r.type == RouteType::kUnicast) continue;
      } else if (alive.empty()) {
        continue;
      }
      res.error = 0;
      res.type = r.type;
      res.route = &r;
      res.nexthops = std::move(alive);
      if (!res.nexthops.empty()) {
        res.oif = res.nexthops[0].dev;
        res.gateway = res.nexthops[0].gateway;
      }
      if (r.type == RouteType::kLocal) res.oif = "lo";
      // Source address (fib_result_prefsrc).
      if (r.prefsrc) {
        res.prefsrc = r.prefsrc;
      } else if (!res.nexthops.empty()) {
        res.prefsrc = SelectSourceAddress(res.nexthops[0].dev, res.nexthops[0].gateway, r.scope);
      }
      return res;
    }
  }
  return res;
}

RouteResult Netstack::Lookup(const Flow& flow) const {
  uint32_t src = flow.src ? U32(*flow.src) : 0;
  RouteResult last;
  last.error = ENETUNREACH;
  last.type = RouteType::kUnreachable;
  size_t i = 0;
  int jumps = 0;
  while (i < rules_.size()) {
    const Rule& r = rules_[i];
    if (!RuleMatches(r, flow, src)) {
      ++i;
      continue;
    }
    switch (r.action) {
      case RuleAction::kGoto: {
        auto it = index_->rule_by_priority.find(r.goto_priority);
        if (it == index_->rule_by_priority.end() || ++jumps > 256) {
          ++i;  // unresolved goto: skipped
        } else {
          i = it->second;  // evaluated like any rule (fib_rules_lookup "goto jumped")
        }
        continue;
      }
      case RuleAction::kNop:
        ++i;
        continue;
      case RuleAction::kBlackhole:
      case RuleAction::kUnreachable:
      case RuleAction::kProhibit: {
        RouteResult res;
        res.rule = &r;
        res.error = r.action == RuleAction::kUnreachable ? ENETUNREACH
                    : r.action == RuleAction::kProhibit  ? EACCES
                                                         : EINVAL;
        res.type = r.action == RuleAction::kUnreachable ? RouteType::kUnreachable
                   : r.action == RuleAction::kProhibit  ? RouteType::kProhibit
                                                        : RouteType::kBlackhole;
        return res;
      }
      case RuleAction::kToTable: {
        if (r.l3mdev) {  // VRF tables are not modelled: the rule yields nothing.
          ++i;
          continue;
        }
        RouteResult res = LookupTable(r.table, flow);
        res.rule = &r;
        if (res.error == 0 && r.suppress_prefixlen.has_value() && res.route != nullptr &&
            static_cast<uint32_t>(res.route->dst.prefix_length()) <= *r.suppress_prefixlen) {
          ++i;  // suppressed (fib4_rule_suppress)
          continue;
        }
        if (res.error != EAGAIN && res.error != ENETUNREACH) return res;
        if (res.error == ENETUNREACH) res.error = EAGAIN;  // fib_table_lookup: -EAGAIN on miss
        ++i;
        continue;
      }
    }
    ++i;
  }
  return last;  // -ESRCH -> -ENETUNREACH
}

std::optional<net::Ipv4> Netstack::SelectSourceAddress(absl::string_view dev,
                                                       const std::optional<net::Ipv4>& dst,
                                                       Scope scope) const {
  const Interface* ifc = FindInterface(dev);
  uint8_t sc = static_cast<uint8_t>(scope);
  std::optional<net::Ipv4> addr;
  if (ifc != nullptr) {
    uint8_t localnet = sysctls_.RouteLocalnet(dev).value ? static_cast<uint8_t>(Scope::kLink)
                                                         : static_cast<uint8_t>(Scope::kHost);
    for (const InterfaceAddress& a : ifc->addresses) {
      if (a.secondary) continue;
      if (std::min(static_cast<uint8_t>(a.scope), localnet) > sc) continue;
      if (!dst || InPrefix(a.Subnet(), U32(*dst))) return a.local;
      if (!addr) addr = a.local;
    }
    if (addr) return addr;
  }
  // Any other device: loopback first, then in interface order (for_each_netdev).
  std::vector<const Interface*> order;
  for (const Interface& i : interfaces_) {
    if (i.loopback) order.insert(order.begin(), &i);
    else order.push_back(&i);
  }
  for (const Interface* i : order) {
    for (const InterfaceAddress& a : i->addresses) {
      if (a.secondary) continue;
      if (a.scope != Scope::kLink && static_cast<uint8_t>(a.scope) <= sc) return a.local;
    }
  }
  return std::nullopt;
}

RouteType Netstack::AddressType(const net::Ipv4& ip, absl::string_view dev) const {
  uint32_t a = U32(ip);
  if (a == 0 || a == 0xffffffffu) return RouteType::kBroadcast;
  if ((a >> 28) == 0xe) return RouteType::kMulticast;
  Flow f;
  f.dst = ip;
  RouteResult r = LookupTable(kTableLocal, f);
  if (r.error != 0 || r.route == nullptr) return RouteType::kUnicast;
  if (!dev.empty()) {
    const Nexthop* nh = r.route->first();
    if (nh == nullptr || nh->dev != dev) return RouteType::kUnicast;
  }
  return r.route->type;
}

}  // namespace sarena::model
