// iproute2 JSON: the field readers the `ip -j` parsers share (netstack_internal.h), and the
// neighbour (`ip -j neigh show`) and bridge FDB (`bridge -j fdb show`) lists.
#include <arpa/inet.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/netstack_internal.h"

namespace sarena::model {

namespace {

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

}  // namespace

namespace internal {

std::string Path(absl::string_view prefix, size_t i, absl::string_view field) {
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

}  // namespace internal

namespace {

using internal::GetMac;
using internal::GetStringArray;
using internal::IsIpv6Text;
using internal::Path;

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

// A neighbour's "state": the names iproute2 prints for the NUD_* bits of ndm_state (absent for
// NUD_NONE), as one set. iproute2 prints no other name, so any other is corrupt: an error
// naming the element and the value.
absl::StatusOr<NeighState> GetNeighState(const JsonValue& obj, absl::string_view file,
                                         absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          GetStringArray(obj, "state", file, path));
  NeighState state = NeighState::kNone;
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StatusOr<NeighState> bit = net::ParseNeighState(names[i]);
    if (!bit.ok()) {
      return JsonFieldError(file, absl::StrCat(path, ".state[", i, "]"), bit.status().message());
    }
    state |= *bit;
  }
  return state;
}

}  // namespace

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
    SARENA_ASSIGN_OR_RETURN(n.state, GetNeighState(it, file_name, p));
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

}  // namespace sarena::model
