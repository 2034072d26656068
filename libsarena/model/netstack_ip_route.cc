// iproute2 JSON: the route list (`ip -j route show table all`) and the policy rule list
// (`ip -j rule show`) into Netstack's routes and rules.
#include <utility>

#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/netstack_internal.h"
#include "libsarena/model/packet.h"

namespace sarena::model {

namespace {

using internal::Contains;
using internal::GetStringArray;
using internal::GetU32Flexible;
using internal::IsIpv6Text;
using internal::ParseDst;
using internal::Path;

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

// A route's "table": a number or an iproute2 name ("main", "local", ...).
absl::Status RouteTableField(const JsonValue* tb, absl::string_view file, const std::string& path,
                             uint32_t* table) {
  if (tb->is_number()) {
    auto n = tb->AsInt();
    if (!n || *n < 0 || *n > 0xffffffffll) return JsonFieldError(file, path, "invalid table");
    *table = static_cast<uint32_t>(*n);
  } else if (tb->is_string()) {
    auto t = ParseTable(tb->str());
    if (!t.ok()) return JsonFieldError(file, path, t.status().message());
    *table = *t;
  } else {
    return JsonFieldError(file, path, "expected a string or number");
  }
  return absl::OkStatus();
}

// A route's "protocol": a number or an iproute2 name ("kernel", "boot", "bird", ...).
absl::Status RouteProtocolField(const JsonValue* pr, absl::string_view file,
                                const std::string& path, RouteProtocol* protocol) {
  if (pr->is_number()) {
    auto n = pr->AsInt();
    if (!n || *n < 0 || *n > 255) return JsonFieldError(file, path, "invalid protocol");
    *protocol = static_cast<RouteProtocol>(*n);
  } else if (pr->is_string()) {
    auto n = ParseRouteProtocol(pr->str());
    if (!n.ok()) return JsonFieldError(file, path, n.status().message());
    *protocol = *n;
  } else {
    return JsonFieldError(file, path, "expected a string or number");
  }
  return absl::OkStatus();
}

// A route's "metrics": iproute2 prints [{"mtu": 1400, "advmss": 1360, ...}].
absl::Status RouteMetrics(const JsonValue* metrics, absl::string_view file, const std::string& path,
                          Route* r) {
  if (!metrics->is_array()) return JsonFieldError(file, path, "expected an array");
  for (size_t j = 0; j < metrics->size(); ++j) {
    const JsonValue& m = (*metrics)[j];
    std::string mp = JsonIndexPath(path, j);
    if (!m.is_object()) return JsonFieldError(file, mp, "expected an object");
    SARENA_ASSIGN_OR_RETURN(auto mtu, JsonGetInt(m, "mtu", file, mp, 0, UINT32_MAX));
    if (mtu) r->mtu = static_cast<uint32_t>(*mtu);
    SARENA_ASSIGN_OR_RETURN(auto mss, JsonGetInt(m, "advmss", file, mp, 0, UINT32_MAX));
    if (mss) r->advmss = static_cast<uint32_t>(*mss);
  }
  return absl::OkStatus();
}

// One item of `ip -j route show` (`p` its JSON path) into *r; false when it is an IPv6 route.
absl::StatusOr<bool> ParseRouteItem(const JsonValue& it, absl::string_view file_name,
                                    const std::string& p, Route* r) {
  SARENA_ASSIGN_OR_RETURN(auto dst, JsonGetString(it, "dst", file_name, p));
  if (!dst) return JsonFieldError(file_name, p + ".dst", "missing");
  if (IsIpv6Text(*dst) || it.Find("pref") != nullptr) return false;  // IPv6 (RTA_PREF is v6-only)
  if (auto fam = it.Find("family"); fam && fam->is_string() && fam->str() == "inet6") return false;
  SARENA_ASSIGN_OR_RETURN(r->dst, ParseDst(*dst, file_name, p + ".dst"));
  SARENA_ASSIGN_OR_RETURN(auto type, JsonGetString(it, "type", file_name, p));
  if (type) {
    auto t = ParseRouteType(*type);
    if (!t.ok()) return JsonFieldError(file_name, p + ".type", t.status().message());
    r->type = *t;
  }
  if (const JsonValue* tb = it.Find("table"); tb != nullptr) {
    SARENA_RETURN_IF_ERROR(RouteTableField(tb, file_name, p + ".table", &r->table));
  }
  SARENA_ASSIGN_OR_RETURN(auto scope, JsonGetString(it, "scope", file_name, p));
  if (scope) {
    auto sc = ParseScope(*scope);
    if (!sc.ok()) return JsonFieldError(file_name, p + ".scope", sc.status().message());
    r->scope = *sc;
  }
  if (const JsonValue* pr = it.Find("protocol"); pr != nullptr) {
    SARENA_RETURN_IF_ERROR(RouteProtocolField(pr, file_name, p + ".protocol", &r->protocol));
  }
  SARENA_ASSIGN_OR_RETURN(auto metric, JsonGetInt(it, "metric", file_name, p, 0, UINT32_MAX));
  if (metric) r->metric = static_cast<uint32_t>(*metric);
  SARENA_ASSIGN_OR_RETURN(auto tos, GetU32Flexible(it, "tos", file_name, p));
  if (!tos) {
    SARENA_ASSIGN_OR_RETURN(tos, GetU32Flexible(it, "dsfield", file_name, p));
  }
  if (tos) r->tos = static_cast<uint8_t>(*tos);
  SARENA_ASSIGN_OR_RETURN(auto prefsrc, JsonGetString(it, "prefsrc", file_name, p));
  if (prefsrc && IsIpv6Text(*prefsrc)) return false;
  SARENA_ASSIGN_OR_RETURN(r->prefsrc, JsonGetIpv4(it, "prefsrc", file_name, p));
  if (const JsonValue* metrics = it.Find("metrics"); metrics != nullptr) {
    SARENA_RETURN_IF_ERROR(RouteMetrics(metrics, file_name, p + ".metrics", r));
  }
  bool ipv6 = false;
  if (const JsonValue* nhs = it.Find("nexthops"); nhs != nullptr && nhs->is_array()) {
    for (size_t j = 0; j < nhs->size(); ++j) {
      SARENA_ASSIGN_OR_RETURN(
          Nexthop nh, ParseNexthop((*nhs)[j], file_name, JsonIndexPath(p + ".nexthops", j), &ipv6));
      r->nexthops.push_back(std::move(nh));
    }
  } else {
    SARENA_ASSIGN_OR_RETURN(Nexthop nh, ParseNexthop(it, file_name, p, &ipv6));
    if (nh.gateway || !nh.dev.empty()) r->nexthops.push_back(std::move(nh));
  }
  return !ipv6;
}

// A rule's "src"/"dst" selectors (with "srclen"/"dstlen"); false when the rule is IPv6.
absl::StatusOr<bool> RuleSelectors(const JsonValue& it, absl::string_view file_name,
                                   const std::string& p, Rule* r) {
  for (const char* key : {"src", "dst"}) {
    SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(it, key, file_name, p));
    if (!s || *s == "all") continue;
    if (IsIpv6Text(*s)) return false;
    std::string lenkey = absl::StrCat(key, "len");
    SARENA_ASSIGN_OR_RETURN(auto len, JsonGetInt(it, lenkey, file_name, p, 0, 32));
    std::string text = len ? absl::StrCat(*s, "/", *len) : std::string(*s);
    SARENA_ASSIGN_OR_RETURN(auto pfx, ParseDst(text, file_name, absl::StrCat(p, ".", key)));
    (absl::string_view(key) == "src" ? r->src : r->dst) = pfx;
  }
  return true;
}

// A rule's match keys besides the selectors: iif, oif, fwmark, tos, ipproto, ports, uidrange,
// l3mdev, suppress_prefixlength.
absl::Status RuleKeys(const JsonValue& it, absl::string_view file_name, const std::string& p,
                      Rule* r) {
  SARENA_ASSIGN_OR_RETURN(auto iif, JsonGetString(it, "iif", file_name, p));
  if (iif) r->iif = std::string(*iif);
  SARENA_ASSIGN_OR_RETURN(auto oif, JsonGetString(it, "oif", file_name, p));
  if (oif) r->oif = std::string(*oif);
  SARENA_ASSIGN_OR_RETURN(r->fwmark, GetU32Flexible(it, "fwmark", file_name, p));
  SARENA_ASSIGN_OR_RETURN(auto fwmask, GetU32Flexible(it, "fwmask", file_name, p));
  if (fwmask) r->fwmask = *fwmask;
  SARENA_ASSIGN_OR_RETURN(auto tos, GetU32Flexible(it, "tos", file_name, p));
  if (!tos) {
    SARENA_ASSIGN_OR_RETURN(tos, GetU32Flexible(it, "dsfield", file_name, p));
  }
  if (tos) r->tos = static_cast<uint8_t>(*tos);
  if (const JsonValue* ipp = it.Find("ipproto"); ipp != nullptr) {
    if (ipp->is_string()) {
      auto pr = ParseProto(ipp->str(), "ipproto");
      if (!pr.ok()) return JsonFieldError(file_name, p + ".ipproto", pr.status().message());
      r->ipproto = *pr;
    } else if (auto n = ipp->AsInt(); n && *n >= 0 && *n <= 255) {
      r->ipproto = static_cast<uint8_t>(*n);
    } else {
      return JsonFieldError(file_name, p + ".ipproto", "invalid protocol");
    }
  }
  for (const char* port : {"sport", "dport"}) {
    uint16_t* start = absl::string_view(port) == "sport" ? &r->sport_start : &r->dport_start;
    uint16_t* end = absl::string_view(port) == "sport" ? &r->sport_end : &r->dport_end;
    SARENA_ASSIGN_OR_RETURN(auto single, JsonGetInt(it, port, file_name, p, 0, 65535));
    if (single) {
      *start = *end = static_cast<uint16_t>(*single);
    }
    SARENA_ASSIGN_OR_RETURN(auto s, JsonGetInt(it, absl::StrCat(port, "_start"), file_name, p, 0, 65535));
    SARENA_ASSIGN_OR_RETURN(auto e, JsonGetInt(it, absl::StrCat(port, "_end"), file_name, p, 0, 65535));
    if (s) *start = static_cast<uint16_t>(*s);
    if (e) *end = static_cast<uint16_t>(*e);
  }
  r->has_uidrange = it.Find("uid_start") != nullptr;
  r->l3mdev = it.Find("l3mdev", false) != nullptr;
  SARENA_ASSIGN_OR_RETURN(auto sp, JsonGetInt(it, "suppress_prefixlen", file_name, p, -1, 128));
  if (sp && *sp >= 0) r->suppress_prefixlen = static_cast<uint32_t>(*sp);
  return absl::OkStatus();
}

// A rule's action: lookup <table>, goto, nop, blackhole / unreachable / prohibit.
absl::Status RuleActionFields(const JsonValue& it, absl::string_view file_name,
                              const std::string& p, Rule* r) {
  if (const JsonValue* tb = it.Find("table"); tb != nullptr) {
    r->action = RuleAction::kToTable;
    if (tb->is_number()) {
      auto n = tb->AsInt();
      if (!n || *n < 0 || *n > 0xffffffffll) return JsonFieldError(file_name, p + ".table", "invalid table");
      r->table = static_cast<uint32_t>(*n);
    } else {
      auto t = ParseTable(tb->str());
      if (!t.ok()) return JsonFieldError(file_name, p + ".table", t.status().message());
      r->table = *t;
    }
  }
  SARENA_ASSIGN_OR_RETURN(auto go, JsonGetInt(it, "goto", file_name, p, 0, UINT32_MAX));
  if (go) {
    r->action = RuleAction::kGoto;
    r->goto_priority = static_cast<uint32_t>(*go);
  }
  if (it.Find("nop", false) != nullptr) r->action = RuleAction::kNop;
  SARENA_ASSIGN_OR_RETURN(auto action, JsonGetString(it, "action", file_name, p));
  if (action) {
    if (*action == "blackhole") {
      r->action = RuleAction::kBlackhole;
    } else if (*action == "unreachable") {
      r->action = RuleAction::kUnreachable;
    } else if (*action == "prohibit") {
      r->action = RuleAction::kProhibit;
    } else if (*action == "nop") {
      r->action = RuleAction::kNop;
    } else if (*action == "goto") {
      r->action = RuleAction::kGoto;
    } else if (*action != "lookup" && *action != "to_tbl") {
      return JsonFieldError(file_name, p + ".action",
                            absl::StrCat("unknown rule action '", *action, "'"));
    }
  }
  if (r->l3mdev && !it.Find("table")) r->action = RuleAction::kToTable;
  return absl::OkStatus();
}

// One item of `ip -j rule show` (`p` its JSON path) into *r; false when it is an IPv6 rule.
absl::StatusOr<bool> ParseRuleItem(const JsonValue& it, absl::string_view file_name,
                                   const std::string& p, Rule* r) {
  SARENA_ASSIGN_OR_RETURN(auto prio, JsonGetInt(it, "priority", file_name, p, 0, UINT32_MAX));
  r->priority = static_cast<uint32_t>(prio.value_or(0));
  r->invert = it.Find("not", /*null_is_absent=*/false) != nullptr;
  SARENA_ASSIGN_OR_RETURN(bool ipv4, RuleSelectors(it, file_name, p, r));
  if (!ipv4) return false;
  SARENA_RETURN_IF_ERROR(RuleKeys(it, file_name, p, r));
  SARENA_RETURN_IF_ERROR(RuleActionFields(it, file_name, p, r));
  return true;
}

}  // namespace

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
    Route r;
    SARENA_ASSIGN_OR_RETURN(bool ipv4, ParseRouteItem(it, file_name, p, &r));
    if (!ipv4) continue;
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
    SARENA_ASSIGN_OR_RETURN(bool ipv4, ParseRuleItem(it, file_name, p, &r));
    if (!ipv4) continue;
    r.index = static_cast<int>(rules_.size());
    rules_.push_back(std::move(r));
  }
  MarkPresent(NetstackSource::kRules);
  index_->finalized = false;
  return absl::OkStatus();
}

}  // namespace sarena::model
