#include "libsarena/model/netstack.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"
#include "libsarena/model/packet.h"

namespace sarena::model {

namespace {

uint32_t U32(const net::Ipv4& ip) { return ip.to_uint(); }

// IPV4_MIN_MTU (include/net/ip.h): the smallest MTU a device keeps IPv4 on.

uint32_t MaskOf(uint8_t len) { return len == 0 ? 0u : (0xffffffffu << (32 - len)); }

bool InPrefix(const net::Ipv4Prefix& p, uint32_t ip) {
  uint32_t m = MaskOf(static_cast<uint8_t>(p.prefix_length()));
  return (ip & m) == (p.address().to_uint() & m);
}

net::Ipv4Prefix MakePrefix(uint32_t addr, uint8_t len) {
  return net::Ipv4Prefix(net::Ipv4(addr & MaskOf(len)), len);
}

bool IsIpv6Text(absl::string_view s) { return s.find(':') != absl::string_view::npos; }

std::string Path(absl::string_view prefix, size_t i, absl::string_view field = {}) {
  std::string p = JsonIndexPath(prefix, i);
  if (!field.empty()) absl::StrAppend(&p, ".", field);
  return p;
}

// Parses "a.b.c.d" or "a.b.c.d/len" or "default"/"all" (0/0).
absl::StatusOr<net::Ipv4Prefix> ParseDst(absl::string_view s, absl::string_view file,
                                         absl::string_view path) {
  if (s == "default" || s == "all" || s == "any") return MakePrefix(0, 0);
  auto p = net::ParseIpv4Prefix(s, path);
  if (!p.ok()) return JsonFieldError(file, path, absl::StrCat("invalid IPv4 prefix '", s, "'"));
  return MakePrefix(p->address().to_uint(), static_cast<uint8_t>(p->prefix_length()));
}

absl::StatusOr<uint32_t> ParseHex32(absl::string_view s, absl::string_view file,
                                    absl::string_view path) {
  uint64_t v = 0;
  bool ok = false;
  if (absl::StartsWith(s, "0x") || absl::StartsWith(s, "0X")) {
    ok = absl::SimpleHexAtoi(s.substr(2), &v);
  } else {
    ok = absl::SimpleAtoi(s, &v);
  }
  if (!ok || v > 0xffffffffull) {
    return JsonFieldError(file, path, absl::StrCat("invalid 32-bit value '", s, "'"));
  }
  return static_cast<uint32_t>(v);
}

// A JSON number or numeric string ("0x10", "16") as uint32.
absl::StatusOr<std::optional<uint32_t>> GetU32Flexible(const JsonValue& obj, absl::string_view key,
                                                       absl::string_view file,
                                                       absl::string_view path) {
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return std::optional<uint32_t>();
  std::string p = absl::StrCat(path, ".", key);
  if (v->is_number()) {
    auto i = v->AsInt();
    if (!i || *i < 0 || *i > 0xffffffffll) return JsonFieldError(file, p, "invalid 32-bit value");
    return std::optional<uint32_t>(static_cast<uint32_t>(*i));
  }
  if (v->is_string()) {
    SARENA_ASSIGN_OR_RETURN(uint32_t u, ParseHex32(v->str(), file, p));
    return std::optional<uint32_t>(u);
  }
  return JsonFieldError(file, p, absl::StrCat("expected a number, got ", ToString(v->type())));
}

absl::StatusOr<std::vector<std::string>> GetStringArray(const JsonValue& obj, absl::string_view key,
                                                        absl::string_view file,
                                                        absl::string_view path) {
  std::vector<std::string> out;
  const JsonValue* v = obj.Find(key);
  if (v == nullptr) return out;
  if (v->is_string()) {  // some iproute2 fields are a string or an array depending on version
    out.emplace_back(v->str());
    return out;
  }
  if (!v->is_array()) {
    return JsonFieldError(file, absl::StrCat(path, ".", key),
                          absl::StrCat("expected an array of strings, got ", ToString(v->type())));
  }
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      return JsonFieldError(file, absl::StrCat(path, ".", key, "[", i, "]"), "expected a string");
    }
    out.emplace_back((*v)[i].str());
  }
  return out;
}

bool Contains(const std::vector<std::string>& v, absl::string_view s) {
  for (const auto& x : v) {
    if (x == s) return true;
  }
  return false;
}

absl::StatusOr<std::optional<net::Mac>> GetMac(const JsonValue& obj, absl::string_view key,
                                               absl::string_view file, absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(obj, key, file, path));
  if (!s.has_value() || s->size() != 17) return std::optional<net::Mac>();  // not a 6-byte MAC
  auto mac = net::ParseMac(*s);
  if (!mac.ok()) {
    return JsonFieldError(file, absl::StrCat(path, ".", key), absl::StrCat("invalid MAC '", *s, "'"));
  }
  return std::optional<net::Mac>(*mac);
}

// A neighbour's lladdr: a 6-byte MAC, or nullopt when absent or an address of another link
// type as iproute2 prints it (ll_addr_n2a: IPv4 text on an ipip/gre/sit tunnel, IPv6 text on an
// ip6tnl/gre6 one; hex bytes of another length on a device whose link_type, known from
// ip-link.json, is not "ether").
// Anything else is corrupt: an error naming the value, never read as "no entry".
absl::StatusOr<std::optional<net::Mac>> GetNeighLladdr(const JsonValue& obj, absl::string_view file,
                                                       absl::string_view path,
                                                       const Interface* dev) {
  SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(obj, "lladdr", file, path));
  if (!s.has_value()) return std::optional<net::Mac>();
  if (s->size() == 17) return GetMac(obj, "lladdr", file, path);
  bool hex_bytes = s->size() % 3 == 2;
  for (size_t i = 0; hex_bytes && i < s->size(); ++i) {
    hex_bytes = i % 3 == 2 ? (*s)[i] == ':' : absl::ascii_isxdigit(static_cast<unsigned char>((*s)[i]));
  }
  bool other_link_type = dev != nullptr && !dev->link_type.empty() && dev->link_type != "ether";
  in6_addr v6{};
  bool ip_text =
      net::ParseIpv4(*s).ok() || inet_pton(AF_INET6, std::string(*s).c_str(), &v6) == 1;
  if ((hex_bytes && other_link_type) || ip_text) return std::optional<net::Mac>();
  return JsonFieldError(file, absl::StrCat(path, ".lladdr"),
                        absl::StrCat("invalid link-layer address '", *s, "'"));
}

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
    return Contains(state, "NOARP") || Contains(state, "PERMANENT");
  }
  return !Contains(state, "FAILED") && !Contains(state, "INCOMPLETE");
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
// Index.

struct Netstack::Index {
  absl::flat_hash_map<std::string, size_t> by_name;
  absl::flat_hash_map<int, size_t> by_ifindex;
  absl::flat_hash_map<uint32_t, size_t> local_addrs;  // address -> interface index
  struct Table {
    // Prefix lengths present, longest first.
    std::vector<uint8_t> lens;
    // (len << 32 | network) -> route indexes in kernel alias order.
    absl::flat_hash_map<uint64_t, std::vector<uint32_t>> by_prefix;
  };
  absl::flat_hash_map<uint32_t, Table> tables;
  absl::flat_hash_map<uint32_t, size_t> rule_by_priority;  // first rule with a priority
  // Neighbour entries by address and FDB entries by MAC (a VXLAN node has one per remote VTEP),
  // indexes in file order; valid while the vectors keep the sizes they had at Finalize().
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> neigh_by_ip;
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> fdb_by_mac;
  size_t indexed_neighbors = 0, indexed_fdb = 0;
  bool custom_local_routes = false;
  bool finalized = false;
};

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

// ---------------------------------------------------------------------------------------------
// Parsing.

namespace {

// Link attributes common to `ip -j -d link` and `ip -j addr` entries.
absl::Status FillLinkAttrs(const JsonValue& it, absl::string_view file, const std::string& p,
                           Interface* ifc) {
  SARENA_ASSIGN_OR_RETURN(auto ifindex, JsonGetInt(it, "ifindex", file, p, 0, INT32_MAX));
  if (ifindex) ifc->ifindex = static_cast<int>(*ifindex);
  SARENA_ASSIGN_OR_RETURN(ifc->flags, GetStringArray(it, "flags", file, p));
  ifc->admin_up = Contains(ifc->flags, "UP");
  ifc->lower_up = Contains(ifc->flags, "LOWER_UP");
  ifc->loopback = Contains(ifc->flags, "LOOPBACK");
  ifc->noarp = Contains(ifc->flags, "NOARP");
  SARENA_ASSIGN_OR_RETURN(auto mtu, JsonGetInt(it, "mtu", file, p, 0, UINT32_MAX));
  // Below IPV4_MIN_MTU (68) the kernel removes a device's IPv4 configuration (devinet.c:
  // inetdev_event, NETDEV_CHANGEMTU, !inetdev_valid_mtu -> inetdev_destroy), but the mtu itself
  // is valid wherever the driver's min_mtu allows it (lo, dummy, ifb: 0; CAN: 16): such a device
  // loads, and carries no IPv4 path because it has no addresses or routes.
  if (mtu) ifc->mtu = static_cast<uint32_t>(*mtu);
  // iproute2 prints every link's flags (print_link_flags): a null or missing array would read as
  // "not UP", a device down that the kernel reports up.
  if (const JsonValue* fl = it.Find("flags", /*null_is_absent=*/false); fl == nullptr || fl->is_null()) {
    return JsonFieldError(file, absl::StrCat(p, ".flags"),
                          fl == nullptr ? "missing (iproute2 prints every link's flags)"
                                        : "null: expected an array of strings (iproute2 prints "
                                          "every link's flags)");
  }
  SARENA_ASSIGN_OR_RETURN(auto op, JsonGetString(it, "operstate", file, p));
  if (op) ifc->operstate = std::string(*op);
  SARENA_ASSIGN_OR_RETURN(auto lt, JsonGetString(it, "link_type", file, p));
  if (lt) ifc->link_type = std::string(*lt);
  SARENA_ASSIGN_OR_RETURN(ifc->mac, GetMac(it, "address", file, p));
  SARENA_ASSIGN_OR_RETURN(auto master, JsonGetString(it, "master", file, p));
  if (master) ifc->master = std::string(*master);
  SARENA_ASSIGN_OR_RETURN(auto link, JsonGetString(it, "link", file, p));
  if (link) ifc->link = std::string(*link);
  SARENA_ASSIGN_OR_RETURN(auto li, JsonGetInt(it, "link_index", file, p, 0, INT32_MAX));
  if (li) ifc->link_index = static_cast<int>(*li);
  SARENA_ASSIGN_OR_RETURN(auto ln, JsonGetInt(it, "link_netnsid", file, p, -1, INT32_MAX));
  if (ln) ifc->link_netnsid = static_cast<int>(*ln);

  if (const JsonValue* li_obj = it.Find("linkinfo"); li_obj != nullptr) {
    std::string lp = absl::StrCat(p, ".linkinfo");
    if (!li_obj->is_object()) return JsonFieldError(file, lp, "expected an object");
    SARENA_ASSIGN_OR_RETURN(auto kind, JsonGetString(*li_obj, "info_kind", file, lp));
    if (kind) ifc->kind = std::string(*kind);
    SARENA_ASSIGN_OR_RETURN(auto skind, JsonGetString(*li_obj, "info_slave_kind", file, lp));
    if (skind) ifc->slave_kind = std::string(*skind);
    if (ifc->slave_kind == "bridge") {
      BridgePortInfo bp;
      const JsonValue* sd = li_obj->Find("info_slave_data");
      std::string sp = absl::StrCat(lp, ".info_slave_data");
      if (sd != nullptr && !sd->is_object()) return JsonFieldError(file, sp, "expected an object");
      if (sd != nullptr) {
        SARENA_ASSIGN_OR_RETURN(auto state, JsonGetString(*sd, "state", file, sp));
        if (state) bp.state = std::string(*state);
        struct {
          const char* key;
          bool* out;
        } flags[] = {{"hairpin", &bp.hairpin},        {"isolated", &bp.isolated},
                     {"learning", &bp.learning},      {"flood", &bp.unicast_flood},
                     {"bcast_flood", &bp.bcast_flood}};
        for (const auto& fl : flags) {
          SARENA_ASSIGN_OR_RETURN(auto b, JsonGetBool(*sd, fl.key, file, sp));
          if (b) *fl.out = *b;
        }
      }
      ifc->bridge_port = bp;
    }
    const JsonValue* data = li_obj->Find("info_data");
    std::string dp = absl::StrCat(lp, ".info_data");
    if (ifc->kind == "bridge") {
      BridgeInfo bi;
      if (data != nullptr && data->is_object()) {
        SARENA_ASSIGN_OR_RETURN(auto nf, JsonGetInt(*data, "nf_call_iptables", file, dp, 0, 1));
        if (nf) bi.nf_call_iptables = *nf != 0;
      }
      ifc->bridge = bi;
    }
    if (data != nullptr && data->is_object()) {
      if (ifc->kind == "vxlan") {
        VxlanInfo vx;
        SARENA_ASSIGN_OR_RETURN(auto id, JsonGetInt(*data, "id", file, dp, 0, 0xffffff));
        if (id) vx.vni = static_cast<uint32_t>(*id);
        SARENA_ASSIGN_OR_RETURN(vx.local, JsonGetIpv4(*data, "local", file, dp));
        SARENA_ASSIGN_OR_RETURN(auto group, JsonGetIpv4(*data, "group", file, dp));
        SARENA_ASSIGN_OR_RETURN(auto remote, JsonGetIpv4(*data, "remote", file, dp));
        vx.group = group ? group : remote;
        SARENA_ASSIGN_OR_RETURN(auto dev, JsonGetString(*data, "link", file, dp));
        if (dev) vx.dev = std::string(*dev);
        SARENA_ASSIGN_OR_RETURN(auto port, JsonGetInt(*data, "port", file, dp, 0, 65535));
        if (port) vx.port = static_cast<uint16_t>(*port);
        SARENA_ASSIGN_OR_RETURN(auto learning, JsonGetBool(*data, "learning", file, dp));
        if (learning) vx.learning = *learning;
        SARENA_ASSIGN_OR_RETURN(auto ttl, JsonGetInt(*data, "ttl", file, dp, 0, 255));
        if (ttl) vx.ttl = static_cast<uint8_t>(*ttl);
        SARENA_ASSIGN_OR_RETURN(auto df, JsonGetString(*data, "df", file, dp));
        if (df) vx.df = std::string(*df);
        ifc->vxlan = vx;
      } else if (ifc->kind == "ipip" || ifc->kind == "gre" || ifc->kind == "sit" ||
                 ifc->kind == "gretap") {
        TunnelInfo t;
        if (data->Find("external") != nullptr) t.external = true;
        SARENA_ASSIGN_OR_RETURN(auto proto, JsonGetString(*data, "proto", file, dp));
        if (proto) t.proto = std::string(*proto);
        for (const char* key : {"local", "remote"}) {
          SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(*data, key, file, dp));
          if (!s || *s == "any" || s->empty() || IsIpv6Text(*s)) continue;
          auto ip = net::ParseIpv4(*s);
          if (!ip.ok()) {
            return JsonFieldError(file, absl::StrCat(dp, ".", key),
                                  absl::StrCat("invalid IPv4 address '", *s, "'"));
          }
          (absl::string_view(key) == "local" ? t.local : t.remote) = *ip;
        }
        SARENA_ASSIGN_OR_RETURN(auto dev, JsonGetString(*data, "link", file, dp));
        if (dev) t.dev = std::string(*dev);
        SARENA_ASSIGN_OR_RETURN(auto ttl, JsonGetInt(*data, "ttl", file, dp, 0, 255));
        if (ttl) t.ttl = static_cast<uint8_t>(*ttl);
        SARENA_ASSIGN_OR_RETURN(auto pmtu, JsonGetBool(*data, "pmtudisc", file, dp));
        if (pmtu) t.pmtudisc = *pmtu;
        ifc->tunnel = t;
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<InterfaceAddress>> ParseAddrInfo(const JsonValue& it,
                                                            absl::string_view file,
                                                            const std::string& p) {
  std::vector<InterfaceAddress> out;
  const JsonValue* ai = it.Find("addr_info");
  if (ai == nullptr) return out;
  std::string ap = absl::StrCat(p, ".addr_info");
  if (!ai->is_array()) return JsonFieldError(file, ap, "expected an array");
  for (size_t j = 0; j < ai->size(); ++j) {
    const JsonValue& a = (*ai)[j];
    std::string aj = JsonIndexPath(ap, j);
    if (!a.is_object()) return JsonFieldError(file, aj, "expected an object");
    SARENA_ASSIGN_OR_RETURN(auto family, JsonGetString(a, "family", file, aj));
    if (family && *family != "inet") continue;
    SARENA_ASSIGN_OR_RETURN(auto local_s, JsonGetString(a, "local", file, aj));
    if (!local_s) continue;  // e.g. an entry with only lifetimes
    if (IsIpv6Text(*local_s)) continue;
    InterfaceAddress addr;
    auto local = net::ParseIpv4(*local_s);
    if (!local.ok()) {
      return JsonFieldError(file, absl::StrCat(aj, ".local"),
                            absl::StrCat("invalid IPv4 address '", *local_s, "'"));
    }
    addr.local = *local;
    SARENA_ASSIGN_OR_RETURN(auto plen, JsonGetInt(a, "prefixlen", file, aj, 0, 32));
    addr.prefixlen = static_cast<uint8_t>(plen.value_or(32));
    SARENA_ASSIGN_OR_RETURN(addr.peer, JsonGetIpv4(a, "address", file, aj));
    SARENA_ASSIGN_OR_RETURN(addr.broadcast, JsonGetIpv4(a, "broadcast", file, aj));
    SARENA_ASSIGN_OR_RETURN(auto scope, JsonGetString(a, "scope", file, aj));
    if (scope) {
      auto sc = ParseScope(*scope);
      if (!sc.ok()) return JsonFieldError(file, absl::StrCat(aj, ".scope"), sc.status().message());
      addr.scope = *sc;
    }
    addr.secondary = a.Find("secondary") != nullptr && a.Find("secondary")->boolean();
    addr.noprefixroute = a.Find("noprefixroute") != nullptr;
    SARENA_ASSIGN_OR_RETURN(auto label, JsonGetString(a, "label", file, aj));
    if (label) addr.label = std::string(*label);
    out.push_back(std::move(addr));
  }
  return out;
}

absl::StatusOr<Nexthop> ParseNexthop(const JsonValue& o, absl::string_view file,
                                     const std::string& p, bool* ipv6) {
  Nexthop nh;
  SARENA_ASSIGN_OR_RETURN(auto gw, JsonGetString(o, "gateway", file, p));
  if (gw) {
    if (IsIpv6Text(*gw)) {
      *ipv6 = true;
      return nh;
    }
    auto ip = net::ParseIpv4(*gw);
    if (!ip.ok()) {
      return JsonFieldError(file, absl::StrCat(p, ".gateway"),
                            absl::StrCat("invalid IPv4 address '", *gw, "'"));
    }
    nh.gateway = *ip;
  } else if (const JsonValue* via = o.Find("via"); via != nullptr && via->is_object()) {
    SARENA_ASSIGN_OR_RETURN(auto fam, JsonGetString(*via, "family", file, absl::StrCat(p, ".via")));
    if (!fam || *fam == "inet") {
      SARENA_ASSIGN_OR_RETURN(nh.gateway, JsonGetIpv4(*via, "host", file, absl::StrCat(p, ".via")));
    }
  }
  SARENA_ASSIGN_OR_RETURN(auto dev, JsonGetString(o, "dev", file, p));
  if (dev) nh.dev = std::string(*dev);
  SARENA_ASSIGN_OR_RETURN(auto w, JsonGetInt(o, "weight", file, p, 1, 256));
  if (w) nh.weight = static_cast<uint32_t>(*w);
  SARENA_ASSIGN_OR_RETURN(auto flags, GetStringArray(o, "flags", file, p));
  nh.onlink = Contains(flags, "onlink");
  nh.linkdown = Contains(flags, "linkdown");
  nh.dead = Contains(flags, "dead");
  return nh;
}

}  // namespace

absl::Status Netstack::ParseLinks(absl::string_view json, absl::string_view file_name) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file_name));
  std::string prefix;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* items, JsonListItems(doc, &prefix));
  // Every network namespace has lo (created with it, never deleted), so `ip -j link` lists at
  // least one link: an empty list is a failed or truncated capture, not "no links".
  if (items->size() == 0) {
    return JsonFieldError(file_name, prefix,
                          "no links: ip -j link always lists lo, so an empty list is a failed "
                          "or truncated capture");
  }
  for (size_t i = 0; i < items->size(); ++i) {
    const JsonValue& it = (*items)[i];
    std::string p = Path(prefix, i);
    if (!it.is_object()) return JsonFieldError(file_name, p, "expected an object");
    SARENA_ASSIGN_OR_RETURN(auto name, JsonGetString(it, "ifname", file_name, p));
    if (!name || name->empty()) return JsonFieldError(file_name, p + ".ifname", "missing");
    Interface* ifc = nullptr;
    if (auto f = index_->by_name.find(*name); f != index_->by_name.end()) {
      ifc = &interfaces_[f->second];
    } else {
      index_->by_name.emplace(std::string(*name), interfaces_.size());
      interfaces_.emplace_back();
      ifc = &interfaces_.back();
      ifc->name = std::string(*name);
    }
    SARENA_RETURN_IF_ERROR(FillLinkAttrs(it, file_name, p, ifc));
  }
  MarkPresent(NetstackSource::kLinks);
  index_->finalized = false;
  return absl::OkStatus();
}

absl::Status Netstack::ParseAddrs(absl::string_view json, absl::string_view file_name) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file_name));
  std::string prefix;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* items, JsonListItems(doc, &prefix));
  for (size_t i = 0; i < items->size(); ++i) {
    const JsonValue& it = (*items)[i];
    std::string p = Path(prefix, i);
    if (!it.is_object()) return JsonFieldError(file_name, p, "expected an object");
    SARENA_ASSIGN_OR_RETURN(auto name, JsonGetString(it, "ifname", file_name, p));
    if (!name || name->empty()) return JsonFieldError(file_name, p + ".ifname", "missing");
    SARENA_ASSIGN_OR_RETURN(auto addrs, ParseAddrInfo(it, file_name, p));
    Interface* ifc = nullptr;
    if (auto f = index_->by_name.find(*name); f != index_->by_name.end()) {
      ifc = &interfaces_[f->second];
    } else {
      index_->by_name.emplace(std::string(*name), interfaces_.size());
      interfaces_.emplace_back();
      ifc = &interfaces_.back();
      ifc->name = std::string(*name);
      SARENA_RETURN_IF_ERROR(FillLinkAttrs(it, file_name, p, ifc));
    }
    ifc->addresses = std::move(addrs);
  }
  MarkPresent(NetstackSource::kAddrs);
  index_->finalized = false;
  return absl::OkStatus();
}

absl::Status Netstack::ParseRoutes(absl::string_view json, absl::string_view file_name) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file_name));
  std::string prefix;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* items, JsonListItems(doc, &prefix));
  routes_.clear();
  routes_.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    const JsonValue& it = (*items)[i];
    std::string p = Path(prefix, i);
    if (!it.is_object()) return JsonFieldError(file_name, p, "expected an object");
    SARENA_ASSIGN_OR_RETURN(auto dst, JsonGetString(it, "dst", file_name, p));
    if (!dst) return JsonFieldError(file_name, p + ".dst", "missing");
    if (IsIpv6Text(*dst) || it.Find("pref") != nullptr) continue;  // IPv6 (RTA_PREF is v6-only)
    if (auto fam = it.Find("family"); fam && fam->is_string() && fam->str() == "inet6") continue;
    Route r;
    SARENA_ASSIGN_OR_RETURN(r.dst, ParseDst(*dst, file_name, p + ".dst"));
    SARENA_ASSIGN_OR_RETURN(auto type, JsonGetString(it, "type", file_name, p));
    if (type) {
      auto t = ParseRouteType(*type);
      if (!t.ok()) return JsonFieldError(file_name, p + ".type", t.status().message());
      r.type = *t;
    }
    if (const JsonValue* tb = it.Find("table"); tb != nullptr) {
      if (tb->is_number()) {
        auto n = tb->AsInt();
        if (!n || *n < 0 || *n > 0xffffffffll) return JsonFieldError(file_name, p + ".table", "invalid table");
        r.table = static_cast<uint32_t>(*n);
      } else if (tb->is_string()) {
        auto t = ParseTable(tb->str());
        if (!t.ok()) return JsonFieldError(file_name, p + ".table", t.status().message());
        r.table = *t;
      } else {
        return JsonFieldError(file_name, p + ".table", "expected a string or number");
      }
    }
    SARENA_ASSIGN_OR_RETURN(auto scope, JsonGetString(it, "scope", file_name, p));
    if (scope) {
      auto sc = ParseScope(*scope);
      if (!sc.ok()) return JsonFieldError(file_name, p + ".scope", sc.status().message());
      r.scope = *sc;
    }
    if (const JsonValue* pr = it.Find("protocol"); pr != nullptr) {
      if (pr->is_number()) {
        auto n = pr->AsInt();
        if (!n || *n < 0 || *n > 255) return JsonFieldError(file_name, p + ".protocol", "invalid protocol");
        r.protocol = static_cast<RouteProtocol>(*n);
      } else if (pr->is_string()) {
        auto n = ParseRouteProtocol(pr->str());
        if (!n.ok()) return JsonFieldError(file_name, p + ".protocol", n.status().message());
        r.protocol = *n;
      } else {
        return JsonFieldError(file_name, p + ".protocol", "expected a string or number");
      }
    }
    SARENA_ASSIGN_OR_RETURN(auto metric, JsonGetInt(it, "metric", file_name, p, 0, UINT32_MAX));
    if (metric) r.metric = static_cast<uint32_t>(*metric);
    SARENA_ASSIGN_OR_RETURN(auto tos, GetU32Flexible(it, "tos", file_name, p));
    if (!tos) {
      SARENA_ASSIGN_OR_RETURN(tos, GetU32Flexible(it, "dsfield", file_name, p));
    }
    if (tos) r.tos = static_cast<uint8_t>(*tos);
    SARENA_ASSIGN_OR_RETURN(auto prefsrc, JsonGetString(it, "prefsrc", file_name, p));
    if (prefsrc && IsIpv6Text(*prefsrc)) continue;
    SARENA_ASSIGN_OR_RETURN(r.prefsrc, JsonGetIpv4(it, "prefsrc", file_name, p));
    if (const JsonValue* metrics = it.Find("metrics"); metrics != nullptr) {
      // iproute2 prints [{"mtu": 1400, "advmss": 1360, ...}].
      if (!metrics->is_array()) return JsonFieldError(file_name, p + ".metrics", "expected an array");
      for (size_t j = 0; j < metrics->size(); ++j) {
        const JsonValue& m = (*metrics)[j];
        std::string mp = JsonIndexPath(p + ".metrics", j);
        if (!m.is_object()) return JsonFieldError(file_name, mp, "expected an object");
        SARENA_ASSIGN_OR_RETURN(auto mtu, JsonGetInt(m, "mtu", file_name, mp, 0, UINT32_MAX));
        if (mtu) r.mtu = static_cast<uint32_t>(*mtu);
        SARENA_ASSIGN_OR_RETURN(auto mss, JsonGetInt(m, "advmss", file_name, mp, 0, UINT32_MAX));
        if (mss) r.advmss = static_cast<uint32_t>(*mss);
      }
    }
    bool ipv6 = false;
    if (const JsonValue* nhs = it.Find("nexthops"); nhs != nullptr && nhs->is_array()) {
      for (size_t j = 0; j < nhs->size(); ++j) {
        SARENA_ASSIGN_OR_RETURN(
            Nexthop nh, ParseNexthop((*nhs)[j], file_name, JsonIndexPath(p + ".nexthops", j), &ipv6));
        r.nexthops.push_back(std::move(nh));
      }
    } else {
      SARENA_ASSIGN_OR_RETURN(Nexthop nh, ParseNexthop(it, file_name, p, &ipv6));
      if (nh.gateway || !nh.dev.empty()) r.nexthops.push_back(std::move(nh));
    }
    if (ipv6) continue;
    r.index = static_cast<int>(routes_.size());
    routes_.push_back(std::move(r));
  }
  MarkPresent(NetstackSource::kRoutes);
  index_->finalized = false;
  return absl::OkStatus();
}

absl::Status Netstack::ParseRules(absl::string_view json, absl::string_view file_name) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file_name));
  std::string prefix;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* items, JsonListItems(doc, &prefix));
  rules_.clear();
  for (size_t i = 0; i < items->size(); ++i) {
    const JsonValue& it = (*items)[i];
    std::string p = Path(prefix, i);
    if (!it.is_object()) return JsonFieldError(file_name, p, "expected an object");
    Rule r;
    SARENA_ASSIGN_OR_RETURN(auto prio, JsonGetInt(it, "priority", file_name, p, 0, UINT32_MAX));
    r.priority = static_cast<uint32_t>(prio.value_or(0));
    r.invert = it.Find("not", /*null_is_absent=*/false) != nullptr;
    bool ipv6 = false;
    for (const char* key : {"src", "dst"}) {
      SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(it, key, file_name, p));
      if (!s || *s == "all") continue;
      if (IsIpv6Text(*s)) {
        ipv6 = true;
        break;
      }
      std::string lenkey = absl::StrCat(key, "len");
      SARENA_ASSIGN_OR_RETURN(auto len, JsonGetInt(it, lenkey, file_name, p, 0, 32));
      std::string text = len ? absl::StrCat(*s, "/", *len) : std::string(*s);
      SARENA_ASSIGN_OR_RETURN(auto pfx, ParseDst(text, file_name, absl::StrCat(p, ".", key)));
      (absl::string_view(key) == "src" ? r.src : r.dst) = pfx;
    }
    if (ipv6) continue;
    SARENA_ASSIGN_OR_RETURN(auto iif, JsonGetString(it, "iif", file_name, p));
    if (iif) r.iif = std::string(*iif);
    SARENA_ASSIGN_OR_RETURN(auto oif, JsonGetString(it, "oif", file_name, p));
    if (oif) r.oif = std::string(*oif);
    SARENA_ASSIGN_OR_RETURN(r.fwmark, GetU32Flexible(it, "fwmark", file_name, p));
    SARENA_ASSIGN_OR_RETURN(auto fwmask, GetU32Flexible(it, "fwmask", file_name, p));
    if (fwmask) r.fwmask = *fwmask;
    SARENA_ASSIGN_OR_RETURN(auto tos, GetU32Flexible(it, "tos", file_name, p));
    if (!tos) {
      SARENA_ASSIGN_OR_RETURN(tos, GetU32Flexible(it, "dsfield", file_name, p));
    }
    if (tos) r.tos = static_cast<uint8_t>(*tos);
    if (const JsonValue* ipp = it.Find("ipproto"); ipp != nullptr) {
      if (ipp->is_string()) {
        auto pr = ParseProto(ipp->str(), "ipproto");
        if (!pr.ok()) return JsonFieldError(file_name, p + ".ipproto", pr.status().message());
        r.ipproto = *pr;
      } else if (auto n = ipp->AsInt(); n && *n >= 0 && *n <= 255) {
        r.ipproto = static_cast<uint8_t>(*n);
      } else {
        return JsonFieldError(file_name, p + ".ipproto", "invalid protocol");
      }
    }
    for (const char* port : {"sport", "dport"}) {
      uint16_t* start = absl::string_view(port) == "sport" ? &r.sport_start : &r.dport_start;
      uint16_t* end = absl::string_view(port) == "sport" ? &r.sport_end : &r.dport_end;
      SARENA_ASSIGN_OR_RETURN(auto single, JsonGetInt(it, port, file_name, p, 0, 65535));
      if (single) {
        *start = *end = static_cast<uint16_t>(*single);
      }
      SARENA_ASSIGN_OR_RETURN(auto s, JsonGetInt(it, absl::StrCat(port, "_start"), file_name, p, 0, 65535));
      SARENA_ASSIGN_OR_RETURN(auto e, JsonGetInt(it, absl::StrCat(port, "_end"), file_name, p, 0, 65535));
      if (s) *start = static_cast<uint16_t>(*s);
      if (e) *end = static_cast<uint16_t>(*e);
    }
    r.has_uidrange = it.Find("uid_start") != nullptr;
    r.l3mdev = it.Find("l3mdev", false) != nullptr;
    SARENA_ASSIGN_OR_RETURN(auto sp, JsonGetInt(it, "suppress_prefixlen", file_name, p, -1, 128));
    if (sp && *sp >= 0) r.suppress_prefixlen = static_cast<uint32_t>(*sp);
    if (const JsonValue* tb = it.Find("table"); tb != nullptr) {
      r.action = RuleAction::kToTable;
      if (tb->is_number()) {
        auto n = tb->AsInt();
        if (!n || *n < 0 || *n > 0xffffffffll) return JsonFieldError(file_name, p + ".table", "invalid table");
        r.table = static_cast<uint32_t>(*n);
      } else {
        auto t = ParseTable(tb->str());
        if (!t.ok()) return JsonFieldError(file_name, p + ".table", t.status().message());
        r.table = *t;
      }
    }
    SARENA_ASSIGN_OR_RETURN(auto go, JsonGetInt(it, "goto", file_name, p, 0, UINT32_MAX));
    if (go) {
      r.action = RuleAction::kGoto;
      r.goto_priority = static_cast<uint32_t>(*go);
    }
    if (it.Find("nop", false) != nullptr) r.action = RuleAction::kNop;
    SARENA_ASSIGN_OR_RETURN(auto action, JsonGetString(it, "action", file_name, p));
    if (action) {
      if (*action == "blackhole") {
        r.action = RuleAction::kBlackhole;
      } else if (*action == "unreachable") {
        r.action = RuleAction::kUnreachable;
      } else if (*action == "prohibit") {
        r.action = RuleAction::kProhibit;
      } else if (*action == "nop") {
        r.action = RuleAction::kNop;
      } else if (*action == "goto") {
        r.action = RuleAction::kGoto;
      } else if (*action != "lookup" && *action != "to_tbl") {
        return JsonFieldError(file_name, p + ".action",
                              absl::StrCat("unknown rule action '", *action, "'"));
      }
    }
    if (r.l3mdev && !it.Find("table")) r.action = RuleAction::kToTable;
    r.index = static_cast<int>(rules_.size());
    rules_.push_back(std::move(r));
  }
  MarkPresent(NetstackSource::kRules);
  index_->finalized = false;
  return absl::OkStatus();
}

absl::Status Netstack::ParseNeighbors(absl::string_view json, absl::string_view file_name) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file_name));
  std::string prefix;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* items, JsonListItems(doc, &prefix));
  neighbors_.clear();
  for (size_t i = 0; i < items->size(); ++i) {
    const JsonValue& it = (*items)[i];
    std::string p = Path(prefix, i);
    if (!it.is_object()) return JsonFieldError(file_name, p, "expected an object");
    SARENA_ASSIGN_OR_RETURN(auto dst, JsonGetString(it, "dst", file_name, p));
    if (!dst || IsIpv6Text(*dst)) continue;
    Neighbor n;
    SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4(it, "dst", file_name, p));
    if (!ip) continue;
    n.dst = *ip;
    SARENA_ASSIGN_OR_RETURN(auto dev, JsonGetString(it, "dev", file_name, p));
    if (dev) n.dev = std::string(*dev);
    const Interface* ndev = nullptr;
    if (auto f = index_->by_name.find(n.dev); f != index_->by_name.end()) {
      ndev = &interfaces_[f->second];
    }
    SARENA_ASSIGN_OR_RETURN(n.lladdr, GetNeighLladdr(it, file_name, p, ndev));
    SARENA_ASSIGN_OR_RETURN(n.state, GetStringArray(it, "state", file_name, p));
    n.router = it.Find("router", false) != nullptr;
    neighbors_.push_back(std::move(n));
  }
  MarkPresent(NetstackSource::kNeighbors);
  return absl::OkStatus();
}

absl::Status Netstack::ParseFdb(absl::string_view json, absl::string_view file_name) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file_name));
  std::string prefix;
  SARENA_ASSIGN_OR_RETURN(const JsonValue* items, JsonListItems(doc, &prefix));
  fdb_.clear();
  for (size_t i = 0; i < items->size(); ++i) {
    const JsonValue& it = (*items)[i];
    std::string p = Path(prefix, i);
    if (!it.is_object()) return JsonFieldError(file_name, p, "expected an object");
    FdbEntry e;
    SARENA_ASSIGN_OR_RETURN(auto mac, GetMac(it, "mac", file_name, p));
    if (!mac) return JsonFieldError(file_name, p + ".mac", "missing or not a MAC address");
    e.mac = *mac;
    SARENA_ASSIGN_OR_RETURN(auto dev, JsonGetString(it, "ifname", file_name, p));
    if (dev) e.dev = std::string(*dev);
    SARENA_ASSIGN_OR_RETURN(auto dst, JsonGetString(it, "dst", file_name, p));
    if (dst && IsIpv6Text(*dst)) continue;
    SARENA_ASSIGN_OR_RETURN(e.dst, JsonGetIpv4(it, "dst", file_name, p));
    SARENA_ASSIGN_OR_RETURN(auto master, JsonGetString(it, "master", file_name, p));
    if (master) e.master = std::string(*master);
    SARENA_ASSIGN_OR_RETURN(auto vni, JsonGetInt(it, "vni", file_name, p, 0, 0xffffff));
    if (vni) e.vni = static_cast<uint32_t>(*vni);
    SARENA_ASSIGN_OR_RETURN(e.flags, GetStringArray(it, "flags", file_name, p));
    SARENA_ASSIGN_OR_RETURN(auto state, JsonGetString(it, "state", file_name, p));
    if (state) e.state = std::string(*state);
    fdb_.push_back(std::move(e));
  }
  MarkPresent(NetstackSource::kFdb);
  return absl::OkStatus();
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

namespace {
uint64_t MacKey(const net::Mac& mac) {
  uint64_t k = 0;
  for (uint8_t b : mac) k = (k << 8) | b;
  return k;
}
}  // namespace

void Netstack::Finalize() {
  Index& ix = *index_;
  ix.by_name.clear();
  ix.by_ifindex.clear();
  ix.local_addrs.clear();
  ix.neigh_by_ip.clear();
  ix.fdb_by_mac.clear();
  for (size_t i = 0; i < neighbors_.size(); ++i) {
    ix.neigh_by_ip[U32(neighbors_[i].dst)].push_back(static_cast<uint32_t>(i));
  }
  for (size_t i = 0; i < fdb_.size(); ++i) {
    ix.fdb_by_mac[MacKey(fdb_[i].mac)].push_back(static_cast<uint32_t>(i));
  }
  ix.indexed_neighbors = neighbors_.size();
  ix.indexed_fdb = fdb_.size();
  for (size_t i = 0; i < interfaces_.size(); ++i) {
    ix.by_name.emplace(interfaces_[i].name, i);
    if (interfaces_[i].ifindex > 0) ix.by_ifindex.emplace(interfaces_[i].ifindex, i);
    for (const auto& a : interfaces_[i].addresses) ix.local_addrs.emplace(U32(a.local), i);
  }
  // Without ip-rule.json the kernel's defaults apply.
  if (!Has(NetstackSource::kRules) && rules_.empty()) {
    Rule local;
    local.priority = 0;
    local.table = kTableLocal;
    Rule main;
    main.priority = 32766;
    main.table = kTableMain;
    Rule def;
    def.priority = 32767;
    def.table = kTableDefault;
    rules_ = {local, main, def};
    for (size_t i = 0; i < rules_.size(); ++i) rules_[i].index = static_cast<int>(i);
  }
  std::stable_sort(rules_.begin(), rules_.end(),
                   [](const Rule& a, const Rule& b) { return a.priority < b.priority; });
  ix.rule_by_priority.clear();
  for (size_t i = 0; i < rules_.size(); ++i) ix.rule_by_priority.emplace(rules_[i].priority, i);
  // Custom rules: anything beyond the three defaults (fib4_has_custom_rules).
  custom_rules_ = false;
  for (const Rule& r : rules_) {
    bool is_default = !r.invert && !r.src && !r.dst && r.iif.empty() && r.oif.empty() &&
                      !r.fwmark && r.tos == 0 && r.action == RuleAction::kToTable &&
                      ((r.priority == 0 && r.table == kTableLocal) ||
                       (r.priority == 32766 && r.table == kTableMain) ||
                       (r.priority == 32767 && r.table == kTableDefault));
    if (!is_default) custom_rules_ = true;
  }
  ix.tables.clear();
  ix.custom_local_routes = false;
  for (size_t i = 0; i < routes_.size(); ++i) {
    const Route& r = routes_[i];
    if (r.type == RouteType::kLocal && (r.table != kTableLocal || r.protocol != RouteProtocol::kKernel)) {
      ix.custom_local_routes = true;
    }
    auto& t = ix.tables[r.table];
    uint8_t len = static_cast<uint8_t>(r.dst.prefix_length());
    uint64_t key = (static_cast<uint64_t>(len) << 32) | r.dst.address().to_uint();
    t.by_prefix[key].push_back(static_cast<uint32_t>(i));
    if (std::find(t.lens.begin(), t.lens.end(), len) == t.lens.end()) t.lens.push_back(len);
  }
  for (auto& [id, t] : ix.tables) {
    std::sort(t.lens.begin(), t.lens.end(), std::greater<uint8_t>());
    for (auto& [k, v] : t.by_prefix) {
      // Kernel alias order: TOS-specific first (descending TOS), then metric ascending; stable.
      std::stable_sort(v.begin(), v.end(), [this](uint32_t a, uint32_t b) {
        const Route& ra = routes_[a];
        const Route& rb = routes_[b];
        if (ra.tos != rb.tos) return ra.tos > rb.tos;
        return ra.metric < rb.metric;
      });
    }
  }
  ix.finalized = true;
}

// ---------------------------------------------------------------------------------------------
// Inventory.

const Interface* Netstack::FindInterface(absl::string_view name) const {
  auto it = index_->by_name.find(name);
  return it == index_->by_name.end() ? nullptr : &interfaces_[it->second];
}

const Interface* Netstack::FindInterfaceByIndex(int ifindex) const {
  auto it = index_->by_ifindex.find(ifindex);
  return it == index_->by_ifindex.end() ? nullptr : &interfaces_[it->second];
}

const Interface* Netstack::InterfaceWithAddress(const net::Ipv4& ip) const {
  auto it = index_->local_addrs.find(U32(ip));
  return it == index_->local_addrs.end() ? nullptr : &interfaces_[it->second];
}

bool Netstack::IsLocalAddress(const net::Ipv4& ip) const {
  return index_->local_addrs.contains(U32(ip));
}

const Neighbor* Netstack::FindNeighbor(const net::Ipv4& ip, absl::string_view dev) const {
  const Index& ix = *index_;
  if (ix.indexed_neighbors == neighbors_.size()) {
    auto it = ix.neigh_by_ip.find(U32(ip));
    if (it == ix.neigh_by_ip.end()) return nullptr;
    for (uint32_t i : it->second) {
      const Neighbor& n = neighbors_[i];
      if (dev.empty() || n.dev == dev) return &n;
    }
    return nullptr;
  }
  for (const Neighbor& n : neighbors_) {
    if (n.dst == ip && (dev.empty() || n.dev == dev)) return &n;
  }
  return nullptr;
}

std::vector<const FdbEntry*> Netstack::FindFdb(absl::string_view dev, const net::Mac& mac) const {
  std::vector<const FdbEntry*> out;
  static const net::Mac kZero{};
  const Index& ix = *index_;
  if (ix.indexed_fdb == fdb_.size()) {
    auto collect = [&](const net::Mac& m) {
      auto it = ix.fdb_by_mac.find(MacKey(m));
      if (it == ix.fdb_by_mac.end()) return;
      for (uint32_t i : it->second) {
        if (fdb_[i].dev == dev) out.push_back(&fdb_[i]);
      }
    };
    collect(mac);
    if (out.empty() && mac != kZero) collect(kZero);
    return out;
  }
  for (const FdbEntry& e : fdb_) {
    if (e.dev == dev && e.mac == mac) out.push_back(&e);
  }
  if (out.empty() && mac != kZero) {
    for (const FdbEntry& e : fdb_) {
      if (e.dev == dev && e.mac == kZero) out.push_back(&e);
    }
  }
  return out;
}

std::vector<const Route*> Netstack::TableRoutes(uint32_t table) const {
  std::vector<const Route*> out;
  for (const Route& r : routes_) {
    if (r.table == table) out.push_back(&r);
  }
  return out;
}

const Interface* Netstack::OifInterface(const Route& route) const {
  const Nexthop* nh = route.first();
  return nh == nullptr ? nullptr : FindInterface(nh->dev);
}

// ---------------------------------------------------------------------------------------------
// Lookups.

namespace {

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
  uint32_t s = flow.src ? U32(*flow.src) : 0;
  uint32_t d = U32(flow.dst);
  auto martian_src = [&](std::string why) {
    out.drop = InputDrop::kMartianSource;
    out.detail = std::move(why);
    return out;
  };
  if ((s >> 28) == 0xe || s == 0xffffffffu) return martian_src("multicast/broadcast source");
  if (d == 0xffffffffu || (s == 0 && d == 0)) {
    out.decision = InputDecision::kBroadcast;
    return out;
  }
  if ((s >> 24) == 0) return martian_src("source in 0.0.0.0/8");
  if ((d >> 24) == 0) {
    out.drop = InputDrop::kMartianDestination;
    out.detail = "destination in 0.0.0.0/8";
    return out;
  }
  bool localnet = sysctls_.RouteLocalnet(flow.iif).value != 0;
  if ((d >> 24) == 127) {
    if (!localnet) {
      out.drop = InputDrop::kMartianDestination;
      out.detail = "loopback destination on a non-loopback device (route_localnet=0)";
      return out;
    }
  } else if ((s >> 24) == 127 && !localnet) {
    return martian_src("loopback source on a non-loopback device (route_localnet=0)");
  }
  if ((d >> 28) == 0xe) {
    out.decision = InputDecision::kBroadcast;  // multicast: delivered if joined; not modelled
    return out;
  }
  Flow f = flow;
  f.oif = {};
  f.scope = Scope::kUniverse;
  out.route = Lookup(f);
  bool ipfwd_off = false;
  bool fwd = ForwardingAllowed(flow.iif, &ipfwd_off);
  if (out.route.error != 0) {
    switch (out.route.error) {
      case EINVAL: out.drop = InputDrop::kBlackhole; break;
      case EACCES: out.drop = InputDrop::kProhibit; break;
      case EHOSTUNREACH: out.drop = InputDrop::kUnreachable; break;
      default:
        out.drop = out.route.route != nullptr || out.route.rule != nullptr ? InputDrop::kUnreachable
                                                                          : InputDrop::kNoRoute;
        break;
    }
    out.detail = out.route.ToString();
    return out;
  }
  if (out.route.type == RouteType::kBroadcast) {
    out.decision = InputDecision::kBroadcast;
    return out;
  }
  if (out.route.type == RouteType::kLocal) {
    out.rpf = ValidateSource(*flow.src, flow.dst, flow.iif, {}, flow.mark, flow.tos);
    if (!out.rpf.pass) {
      out.drop = out.rpf.failure == RpfFailure::kMartianSource ? InputDrop::kMartianSource
                                                                : InputDrop::kRpFilter;
      out.detail = out.rpf.detail;
      return out;
    }
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
  if (!out.rpf.pass) {
    out.drop = out.rpf.failure == RpfFailure::kMartianSource ? InputDrop::kMartianSource
                                                              : InputDrop::kRpFilter;
    out.detail = out.rpf.detail;
    return out;
  }
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
