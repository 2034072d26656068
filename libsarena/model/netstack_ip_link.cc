// iproute2 JSON: the link list (`ip -j -d link show`) and the address list (`ip -j addr show`)
// into Netstack's interfaces.
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/netstack_internal.h"

namespace sarena::model {

namespace {

using internal::Contains;
using internal::GetMac;
using internal::GetStringArray;
using internal::IsIpv6Text;
using internal::Path;

// linkinfo.info_slave_data of a bridge port (`ip -d link`: state, hairpin, isolated, ...).
absl::StatusOr<BridgePortInfo> ParseBridgePort(const JsonValue& li_obj, absl::string_view file,
                                               const std::string& lp) {
  BridgePortInfo bp;
  const JsonValue* sd = li_obj.Find("info_slave_data");
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
  return bp;
}

// linkinfo.info_data of a vxlan device.
absl::StatusOr<VxlanInfo> ParseVxlanInfo(const JsonValue& data, absl::string_view file,
                                         const std::string& dp) {
  VxlanInfo vx;
  SARENA_ASSIGN_OR_RETURN(auto id, JsonGetInt(data, "id", file, dp, 0, 0xffffff));
  if (id) vx.vni = static_cast<uint32_t>(*id);
  SARENA_ASSIGN_OR_RETURN(vx.local, JsonGetIpv4(data, "local", file, dp));
  SARENA_ASSIGN_OR_RETURN(auto group, JsonGetIpv4(data, "group", file, dp));
  SARENA_ASSIGN_OR_RETURN(auto remote, JsonGetIpv4(data, "remote", file, dp));
  vx.group = group ? group : remote;
  SARENA_ASSIGN_OR_RETURN(auto dev, JsonGetString(data, "link", file, dp));
  if (dev) vx.dev = std::string(*dev);
  SARENA_ASSIGN_OR_RETURN(auto port, JsonGetInt(data, "port", file, dp, 0, 65535));
  if (port) vx.port = static_cast<uint16_t>(*port);
  SARENA_ASSIGN_OR_RETURN(auto learning, JsonGetBool(data, "learning", file, dp));
  if (learning) vx.learning = *learning;
  SARENA_ASSIGN_OR_RETURN(auto ttl, JsonGetInt(data, "ttl", file, dp, 0, 255));
  if (ttl) vx.ttl = static_cast<uint8_t>(*ttl);
  SARENA_ASSIGN_OR_RETURN(auto df, JsonGetString(data, "df", file, dp));
  if (df) vx.df = std::string(*df);
  return vx;
}

// linkinfo.info_data of an ipip / gre / sit / gretap device.
absl::StatusOr<TunnelInfo> ParseTunnelInfo(const JsonValue& data, absl::string_view file,
                                           const std::string& dp) {
  TunnelInfo t;
  if (data.Find("external") != nullptr) t.external = true;
  SARENA_ASSIGN_OR_RETURN(auto proto, JsonGetString(data, "proto", file, dp));
  if (proto) t.proto = std::string(*proto);
  for (const char* key : {"local", "remote"}) {
    SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(data, key, file, dp));
    if (!s || *s == "any" || s->empty() || IsIpv6Text(*s)) continue;
    auto ip = net::ParseIpv4(*s);
    if (!ip.ok()) {
      return JsonFieldError(file, absl::StrCat(dp, ".", key),
                            absl::StrCat("invalid IPv4 address '", *s, "'"));
    }
    (absl::string_view(key) == "local" ? t.local : t.remote) = *ip;
  }
  SARENA_ASSIGN_OR_RETURN(auto dev, JsonGetString(data, "link", file, dp));
  if (dev) t.dev = std::string(*dev);
  SARENA_ASSIGN_OR_RETURN(auto ttl, JsonGetInt(data, "ttl", file, dp, 0, 255));
  if (ttl) t.ttl = static_cast<uint8_t>(*ttl);
  SARENA_ASSIGN_OR_RETURN(auto pmtu, JsonGetBool(data, "pmtudisc", file, dp));
  if (pmtu) t.pmtudisc = *pmtu;
  return t;
}

// linkinfo (`ip -d link`): the device kind and the kind-specific data the model reads.
absl::Status FillLinkInfo(const JsonValue& li_obj, absl::string_view file, const std::string& lp,
                          Interface* ifc) {
  if (!li_obj.is_object()) return JsonFieldError(file, lp, "expected an object");
  SARENA_ASSIGN_OR_RETURN(auto kind, JsonGetString(li_obj, "info_kind", file, lp));
  if (kind) ifc->kind = std::string(*kind);
  SARENA_ASSIGN_OR_RETURN(auto skind, JsonGetString(li_obj, "info_slave_kind", file, lp));
  if (skind) ifc->slave_kind = std::string(*skind);
  if (ifc->slave_kind == "bridge") {
    SARENA_ASSIGN_OR_RETURN(ifc->bridge_port, ParseBridgePort(li_obj, file, lp));
  }
  const JsonValue* data = li_obj.Find("info_data");
  std::string dp = absl::StrCat(lp, ".info_data");
  if (ifc->kind == "bridge") {
    BridgeInfo bi;
    if (data != nullptr && data->is_object()) {
      SARENA_ASSIGN_OR_RETURN(auto nf, JsonGetInt(*data, "nf_call_iptables", file, dp, 0, 1));
      if (nf) bi.nf_call_iptables = *nf != 0;
    }
    ifc->bridge = bi;
  }
  if (data == nullptr || !data->is_object()) return absl::OkStatus();
  if (ifc->kind == "vxlan") {
    SARENA_ASSIGN_OR_RETURN(ifc->vxlan, ParseVxlanInfo(*data, file, dp));
  } else if (ifc->kind == "ipip" || ifc->kind == "gre" || ifc->kind == "sit" ||
             ifc->kind == "gretap") {
    SARENA_ASSIGN_OR_RETURN(ifc->tunnel, ParseTunnelInfo(*data, file, dp));
  }
  return absl::OkStatus();
}

// The interface named `name`, appended with only its name when there is none yet (then *added).
Interface* FindOrAddInterface(absl::string_view name,
                              absl::flat_hash_map<std::string, size_t>* by_name,
                              std::vector<Interface>* interfaces, bool* added) {
  if (auto f = by_name->find(name); f != by_name->end()) return &(*interfaces)[f->second];
  by_name->emplace(std::string(name), interfaces->size());
  interfaces->emplace_back();
  interfaces->back().name = std::string(name);
  *added = true;
  return &interfaces->back();
}

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
    SARENA_RETURN_IF_ERROR(FillLinkInfo(*li_obj, file, absl::StrCat(p, ".linkinfo"), ifc));
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
  // ifindex -> (entry path, ifname) of the entries read so far: an ifindex is unique within a
  // netns (dev_new_index), and veth peers and bridge ports are found by it.
  absl::flat_hash_map<int, std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < items->size(); ++i) {
    const JsonValue& it = (*items)[i];
    std::string p = Path(prefix, i);
    if (!it.is_object()) return JsonFieldError(file_name, p, "expected an object");
    SARENA_ASSIGN_OR_RETURN(auto name, JsonGetString(it, "ifname", file_name, p));
    if (!name || name->empty()) return JsonFieldError(file_name, p + ".ifname", "missing");
    bool added = false;
    Interface* ifc = FindOrAddInterface(*name, &index_->by_name, &interfaces_, &added);
    SARENA_RETURN_IF_ERROR(FillLinkAttrs(it, file_name, p, ifc));
    if (ifc->ifindex > 0) {
      auto [at, fresh] = seen.try_emplace(ifc->ifindex, p, *name);
      if (!fresh && at->second.second != *name) {
        return JsonFieldError(
            file_name, p + ".ifindex",
            absl::StrCat("duplicate ifindex ", ifc->ifindex, " (also ", at->second.first, " '",
                         at->second.second, "'): an ifindex names one device of a netns"));
      }
    }
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
    bool added = false;
    Interface* ifc = FindOrAddInterface(*name, &index_->by_name, &interfaces_, &added);
    if (added) SARENA_RETURN_IF_ERROR(FillLinkAttrs(it, file_name, p, ifc));
    ifc->addresses = std::move(addrs);
  }
  MarkPresent(NetstackSource::kAddrs);
  index_->finalized = false;
  return absl::OkStatus();
}

}  // namespace sarena::model
