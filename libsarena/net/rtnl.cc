#include "libsarena/net/rtnl.h"

#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace sarena::net {

namespace {

constexpr const char* kRouteTypeNames[] = {
    "unspec",      "unicast",  "local", "broadcast", "anycast", "multicast", "blackhole",
    "unreachable", "prohibit", "throw", "nat",       "xresolve"};

struct ProtoName {
  RouteProtocol proto;
  const char* name;
};
// iproute2's /etc/iproute2/rt_protos (sarenad's 93 is deliberately not named there).
constexpr ProtoName kProtoNames[] = {
    {RouteProtocol::kUnspec, "unspec"},     {RouteProtocol::kRedirect, "redirect"},
    {RouteProtocol::kKernel, "kernel"},     {RouteProtocol::kBoot, "boot"},
    {RouteProtocol::kStatic, "static"},     {RouteProtocol::kGated, "gated"},
    {RouteProtocol::kRa, "ra"},             {RouteProtocol::kMrt, "mrt"},
    {RouteProtocol::kZebra, "zebra"},       {RouteProtocol::kBird, "bird"},
    {RouteProtocol::kDnrouted, "dnrouted"}, {RouteProtocol::kXorp, "xorp"},
    {RouteProtocol::kNtk, "ntk"},           {RouteProtocol::kDhcp, "dhcp"},
    {RouteProtocol::kKeepalived, "keepalived"}, {RouteProtocol::kBabel, "babel"},
    {RouteProtocol::kOpenr, "openr"},       {RouteProtocol::kBgp, "bgp"},
    {RouteProtocol::kIsis, "isis"},         {RouteProtocol::kOspf, "ospf"},
    {RouteProtocol::kRip, "rip"},           {RouteProtocol::kEigrp, "eigrp"},
};

// ip/ipneigh.c print_neigh_state: the bits in this order, each by its NUD_ name.
constexpr std::pair<uint16_t, absl::string_view> kNeighStateNames[] = {
    {0x01, "INCOMPLETE"}, {0x02, "REACHABLE"}, {0x04, "STALE"}, {0x08, "DELAY"},
    {0x10, "PROBE"},      {0x20, "FAILED"},    {0x40, "NOARP"}, {0x80, "PERMANENT"},
};

// A decimal 0..255.
bool ParseByte(absl::string_view text, uint8_t* out) {
  uint32_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v > 255) return false;
  *out = static_cast<uint8_t>(v);
  return true;
}

}  // namespace

std::string ToString(Scope scope) {
  switch (scope) {
    case Scope::kUniverse: return "global";
    case Scope::kSite: return "site";
    case Scope::kLink: return "link";
    case Scope::kHost: return "host";
    case Scope::kNowhere: return "nowhere";
  }
  return absl::StrCat(static_cast<int>(scope));
}

absl::StatusOr<Scope> ParseScope(absl::string_view text) {
  if (text == "global" || text == "universe") return Scope::kUniverse;
  if (text == "site") return Scope::kSite;
  if (text == "link") return Scope::kLink;
  if (text == "host") return Scope::kHost;
  if (text == "nowhere") return Scope::kNowhere;
  uint8_t v = 0;
  if (ParseByte(text, &v)) return static_cast<Scope>(v);
  return absl::InvalidArgumentError(absl::StrCat("invalid scope '", text, "'"));
}

std::string ToString(RouteType type) {
  const auto v = static_cast<size_t>(type);
  if (v < std::size(kRouteTypeNames)) return kRouteTypeNames[v];
  return absl::StrCat(v);
}

absl::StatusOr<RouteType> ParseRouteType(absl::string_view text) {
  for (size_t i = 0; i < std::size(kRouteTypeNames); ++i) {
    if (text == kRouteTypeNames[i]) return static_cast<RouteType>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("invalid route type '", text, "'"));
}

std::string TableName(uint32_t table) {
  switch (table) {
    case kTableUnspec: return "unspec";
    case kTableDefault: return "default";
    case kTableMain: return "main";
    case kTableLocal: return "local";
    default: return absl::StrCat(table);
  }
}

absl::StatusOr<uint32_t> ParseTable(absl::string_view text) {
  if (text == "main") return kTableMain;
  if (text == "local") return kTableLocal;
  if (text == "default") return kTableDefault;
  if (text == "unspec") return kTableUnspec;
  uint32_t n = 0;
  if (absl::SimpleAtoi(text, &n)) return n;
  return absl::InvalidArgumentError(absl::StrCat("invalid routing table '", text, "'"));
}

std::string ToString(RouteProtocol protocol) {
  for (const ProtoName& p : kProtoNames) {
    if (p.proto == protocol) return p.name;
  }
  return absl::StrCat(static_cast<int>(protocol));
}

absl::StatusOr<RouteProtocol> ParseRouteProtocol(absl::string_view text) {
  for (const ProtoName& p : kProtoNames) {
    if (text == p.name) return p.proto;
  }
  uint8_t v = 0;
  if (ParseByte(text, &v)) return static_cast<RouteProtocol>(v);
  return absl::InvalidArgumentError(absl::StrCat("invalid route protocol '", text, "'"));
}

std::string ToString(RuleAction action) {
  switch (action) {
    case RuleAction::kUnspec: return "unspec";
    case RuleAction::kToTable: return "lookup";
    case RuleAction::kGoto: return "goto";
    case RuleAction::kNop: return "nop";
    case RuleAction::kBlackhole: return "blackhole";
    case RuleAction::kUnreachable: return "unreachable";
    case RuleAction::kProhibit: return "prohibit";
  }
  return absl::StrCat(static_cast<int>(action));
}

std::string ToString(NeighState state) {
  auto v = static_cast<uint16_t>(state);
  if (v == 0) return "NONE";
  std::vector<std::string> parts;
  for (const auto& [bit, name] : kNeighStateNames) {
    if (v & bit) {
      parts.emplace_back(name);
      v &= ~bit;
    }
  }
  if (v) parts.push_back(absl::StrFormat("0x%x", v));
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<NeighState> ParseNeighState(absl::string_view text) {
  for (const auto& [bit, name] : kNeighStateNames) {
    if (text == name) return static_cast<NeighState>(bit);
  }
  return absl::InvalidArgumentError(absl::StrCat("invalid neighbour state '", text, "'"));
}

}  // namespace sarena::net
