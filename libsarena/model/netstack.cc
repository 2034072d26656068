// Netstack's objects: the enumerations' names, the objects' helpers and text forms (ip route /
// ip rule style), the source bits and the Add* builders. Parsing and semantics live in the
// netstack_*.cc files named in netstack_internal.h.
#include "libsarena/model/netstack.h"

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/netstack_internal.h"

namespace sarena::model {

namespace internal {

bool Contains(const std::vector<std::string>& v, absl::string_view s) {
  for (const auto& x : v) {
    if (x == s) return true;
  }
  return false;
}

}  // namespace internal

namespace {

using internal::Contains;
using internal::MakePrefix;

absl::string_view ErrnoName(int e) {
  switch (e) {
    case 0: return "OK";
    case ENETUNREACH: return "ENETUNREACH";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case EINVAL: return "EINVAL";
    case EACCES: return "EACCES";
    case EAGAIN: return "EAGAIN";
    default: return "error";
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Enum helpers.

absl::string_view ToString(RpfFailure failure) {
  switch (failure) {
    case RpfFailure::kNone: return "none";
    case RpfFailure::kNoRoute: return "no_route_to_source";
    case RpfFailure::kWrongInterface: return "wrong_interface";
    case RpfFailure::kNoAddressOnIngress: return "no_address_on_ingress";
    case RpfFailure::kMartianSource: return "martian_source";
  }
  return "?";
}

absl::string_view ToString(InputDecision decision) {
  switch (decision) {
    case InputDecision::kLocal: return "local";
    case InputDecision::kForward: return "forward";
    case InputDecision::kBroadcast: return "broadcast";
    case InputDecision::kDrop: return "drop";
  }
  return "?";
}

absl::string_view ToString(InputDrop drop) {
  switch (drop) {
    case InputDrop::kNone: return "none";
    case InputDrop::kIngressMissing: return "ingress_missing";
    case InputDrop::kIngressDown: return "ingress_down";
    case InputDrop::kMartianSource: return "martian_source";
    case InputDrop::kMartianDestination: return "martian_destination";
    case InputDrop::kNoRoute: return "no_route";
    case InputDrop::kUnreachable: return "unreachable";
    case InputDrop::kBlackhole: return "blackhole";
    case InputDrop::kProhibit: return "prohibit";
    case InputDrop::kForwardingDisabled: return "forwarding_disabled";
    case InputDrop::kRpFilter: return "rp_filter";
  }
  return "?";
}

absl::string_view ToString(NetstackSource source) {
  switch (source) {
    case NetstackSource::kLinks: return "ip-link.json";
    case NetstackSource::kAddrs: return "ip-addr.json";
    case NetstackSource::kRoutes: return "ip-route.json";
    case NetstackSource::kRules: return "ip-rule.json";
    case NetstackSource::kNeighbors: return "ip-neigh.json";
    case NetstackSource::kSysctls: return "sysctl.txt";
    case NetstackSource::kFdb: return "bridge-fdb.json";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Object helpers.

net::Ipv4Prefix InterfaceAddress::Subnet() const {
  if (peer.has_value()) return MakePrefix(peer->to_uint(), prefixlen);
  return MakePrefix(local.to_uint(), prefixlen);
}

bool Interface::CanTransmit() const {
  if (!admin_up) return false;
  if (lower_up) return true;
  if (Contains(flags, "NO-CARRIER")) return false;
  return operstate == "UP" || operstate == "UNKNOWN" || operstate.empty();
}

const InterfaceAddress* Interface::PrimaryAddress() const {
  for (const auto& a : addresses) {
    if (!a.secondary) return &a;
  }
  return nullptr;
}

bool Neighbor::Usable() const {
  if (!lladdr.has_value()) {
    // NOARP devices (tunl0, point-to-point) need no lladdr.
    return HasAny(state, NeighState::kNoArp | NeighState::kPermanent);
  }
  return !HasAny(state, NeighState::kFailed | NeighState::kIncomplete);
}

std::string Neighbor::StateNames() const {
  return state == NeighState::kNone ? std::string() : ToString(state);
}

std::string Route::ToString() const {
  std::string s;
  if (type != RouteType::kUnicast) absl::StrAppend(&s, sarena::model::ToString(type), " ");
  absl::StrAppend(&s, dst.prefix_length() == 0 ? "default" : dst.to_string());
  if (nexthops.size() == 1) {
    const Nexthop& nh = nexthops[0];
    if (nh.gateway) absl::StrAppend(&s, " via ", nh.gateway->to_string());
    if (!nh.dev.empty()) absl::StrAppend(&s, " dev ", nh.dev);
  }
  if (table != kTableMain) absl::StrAppend(&s, " table ", TableName(table));
  if (protocol != RouteProtocol::kBoot) absl::StrAppend(&s, " proto ", sarena::model::ToString(protocol));
  if (scope != Scope::kUniverse) absl::StrAppend(&s, " scope ", sarena::model::ToString(scope));
  if (prefsrc) absl::StrAppend(&s, " src ", prefsrc->to_string());
  if (metric != 0) absl::StrAppend(&s, " metric ", metric);
  if (mtu != 0) absl::StrAppend(&s, " mtu ", mtu);
  if (nexthops.size() == 1 && nexthops[0].onlink) absl::StrAppend(&s, " onlink");
  if (nexthops.size() > 1) {
    for (const Nexthop& nh : nexthops) {
      absl::StrAppend(&s, " nexthop");
      if (nh.gateway) absl::StrAppend(&s, " via ", nh.gateway->to_string());
      if (!nh.dev.empty()) absl::StrAppend(&s, " dev ", nh.dev);
      absl::StrAppend(&s, " weight ", nh.weight);
    }
  }
  return s;
}

std::string Rule::ToString() const {
  std::string s = absl::StrCat(priority, ":");
  if (invert) absl::StrAppend(&s, " not");
  absl::StrAppend(&s, " from ", src ? src->to_string() : "all");
  if (dst) absl::StrAppend(&s, " to ", dst->to_string());
  if (tos) absl::StrAppend(&s, absl::StrFormat(" tos 0x%x", tos));
  if (fwmark) {
    absl::StrAppend(&s, absl::StrFormat(" fwmark 0x%x", *fwmark));
    if (fwmask != 0xffffffff) absl::StrAppend(&s, absl::StrFormat("/0x%x", fwmask));
  }
  if (!iif.empty()) absl::StrAppend(&s, " iif ", iif);
  if (!oif.empty()) absl::StrAppend(&s, " oif ", oif);
  if (ipproto) absl::StrAppend(&s, " ipproto ", ipproto);
  if (sport_start || sport_end) absl::StrAppend(&s, " sport ", sport_start, "-", sport_end);
  if (dport_start || dport_end) absl::StrAppend(&s, " dport ", dport_start, "-", dport_end);
  if (l3mdev) absl::StrAppend(&s, " lookup [l3mdev-table]");
  switch (action) {
    case RuleAction::kToTable:
      if (!l3mdev) absl::StrAppend(&s, " lookup ", TableName(table));
      break;
    case RuleAction::kGoto: absl::StrAppend(&s, " goto ", goto_priority); break;
    default: absl::StrAppend(&s, " ", sarena::model::ToString(action)); break;
  }
  if (suppress_prefixlen) absl::StrAppend(&s, " suppress_prefixlength ", *suppress_prefixlen);
  return s;
}

std::string RouteResult::ToString() const {
  if (error != 0) {
    std::string s = absl::StrCat(sarena::model::ToString(type), " (", ErrnoName(error), ")");
    if (route) absl::StrAppend(&s, " by route '", route->ToString(), "'");
    if (rule) absl::StrAppend(&s, " by rule '", rule->ToString(), "'");
    return s;
  }
  std::string s(sarena::model::ToString(type));
  if (route) absl::StrAppend(&s, " ", route->dst.to_string());
  if (gateway) absl::StrAppend(&s, " via ", gateway->to_string());
  if (!oif.empty()) absl::StrAppend(&s, " dev ", oif);
  absl::StrAppend(&s, " table ", TableName(table));
  if (prefsrc) absl::StrAppend(&s, " src ", prefsrc->to_string());
  return s;
}

// ---------------------------------------------------------------------------------------------
// Sources and builders.

Netstack::Netstack() : index_(std::make_unique<Index>()) {}
Netstack::~Netstack() = default;
Netstack::Netstack(Netstack&&) noexcept = default;
Netstack& Netstack::operator=(Netstack&&) noexcept = default;

void Netstack::MarkPresent(NetstackSource source) {
  present_ |= 1u << static_cast<uint32_t>(source);
}

bool Netstack::Has(NetstackSource source) const {
  return (present_ & (1u << static_cast<uint32_t>(source))) != 0;
}

absl::Status Netstack::ParseSysctls(absl::string_view text, absl::string_view file_name) {
  SARENA_ASSIGN_OR_RETURN(sysctls_, Sysctls::Parse(text, file_name));
  MarkPresent(NetstackSource::kSysctls);
  return absl::OkStatus();
}

void Netstack::AddInterface(Interface iface) {
  if (auto f = index_->by_name.find(iface.name); f != index_->by_name.end()) {
    interfaces_[f->second] = std::move(iface);
  } else {
    index_->by_name.emplace(iface.name, interfaces_.size());
    interfaces_.push_back(std::move(iface));
  }
  MarkPresent(NetstackSource::kLinks);
  MarkPresent(NetstackSource::kAddrs);
  index_->finalized = false;
}

void Netstack::AddRoute(Route route) {
  route.dst = MakePrefix(route.dst.address().to_uint(), static_cast<uint8_t>(route.dst.prefix_length()));
  route.index = static_cast<int>(routes_.size());
  routes_.push_back(std::move(route));
  MarkPresent(NetstackSource::kRoutes);
  index_->finalized = false;
}

void Netstack::AddRule(Rule rule) {
  rule.index = static_cast<int>(rules_.size());
  rules_.push_back(std::move(rule));
  MarkPresent(NetstackSource::kRules);
  index_->finalized = false;
}

void Netstack::AddNeighbor(Neighbor neighbor) {
  neighbors_.push_back(std::move(neighbor));
  MarkPresent(NetstackSource::kNeighbors);
}

void Netstack::AddFdb(FdbEntry entry) {
  fdb_.push_back(std::move(entry));
  MarkPresent(NetstackSource::kFdb);
}

Sysctls& Netstack::mutable_sysctls() {
  MarkPresent(NetstackSource::kSysctls);
  return sysctls_;
}

}  // namespace sarena::model
