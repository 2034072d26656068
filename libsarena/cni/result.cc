#include "libsarena/cni/result.h"

#include <algorithm>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/cni/error.h"
#include "libsarena/cni/version.h"

namespace sarena::cni {
namespace {

namespace ip = boost::asio::ip;

bool VersionAtLeast(absl::string_view version, int major, int minor) {
  absl::StatusOr<SpecVersion> v = SpecVersion::Parse(version);
  if (!v.ok()) return true;  // unknown: newest shape
  return *v >= SpecVersion{major, minor, 0};
}

// Parses "addr/len" as an IPv4 or IPv6 CIDR; returns the canonical text "addr/len".
std::optional<std::string> CanonicalCidr(absl::string_view text) {
  boost::system::error_code ec;
  std::string s(text);
  if (absl::StrContains(text, ':')) {
    ip::network_v6 n = ip::make_network_v6(s, ec);
    if (ec) return std::nullopt;
    return n.to_string();
  }
  ip::network_v4 n = ip::make_network_v4(s, ec);
  if (ec) return std::nullopt;
  return n.to_string();
}

bool IsAddress(absl::string_view text) {
  boost::system::error_code ec;
  ip::make_address(std::string(text), ec);
  return !ec;
}

absl::Status Invalid(absl::string_view path, absl::string_view value, absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat("field '", path, "' is \"", value, "\", want ", want));
}

absl::Status CheckFailed(absl::string_view message) {
  return MakeCniError(ErrorCode::kCheckFailed, absl::StatusCode::kFailedPrecondition,
                      absl::StrCat("CHECK: ", message));
}

std::string Lower(absl::string_view s) { return absl::AsciiStrToLower(s); }

}  // namespace

JsonObject ResultToJsonObject(const Result& result, absl::string_view cni_version) {
  const bool has_ip_version = !VersionAtLeast(cni_version, 1, 0);
  const bool has_iface_mtu = VersionAtLeast(cni_version, 1, 1);
  JsonObject o;
  o.Set("cniVersion", cni_version);

  std::vector<JsonObject> interfaces;
  for (const Interface& i : result.interfaces) {
    JsonObject j;
    j.Set("name", i.name);
    if (!i.mac.empty()) j.Set("mac", i.mac);
    if (!i.sandbox.empty()) j.Set("sandbox", i.sandbox);
    if (has_iface_mtu && i.mtu && *i.mtu != 0) j.Set("mtu", *i.mtu);
    interfaces.push_back(std::move(j));
  }
  o.Set("interfaces", interfaces);

  std::vector<JsonObject> ips;
  for (const IpConfig& c : result.ips) {
    JsonObject j;
    if (has_ip_version) j.Set("version", absl::StrContains(c.address, ':') ? "6" : "4");
    j.Set("address", c.address);
    if (!c.gateway.empty()) j.Set("gateway", c.gateway);
    if (c.interface) j.Set("interface", *c.interface);
    ips.push_back(std::move(j));
  }
  o.Set("ips", ips);

  std::vector<JsonObject> routes;
  for (const Route& r : result.routes) {
    JsonObject j;
    j.Set("dst", r.dst);
    if (!r.gw.empty()) j.Set("gw", r.gw);
    routes.push_back(std::move(j));
  }
  o.Set("routes", routes);

  JsonObject dns;
  if (!result.dns.nameservers.empty()) dns.Set("nameservers", result.dns.nameservers);
  if (!result.dns.domain.empty()) dns.Set("domain", result.dns.domain);
  if (!result.dns.search.empty()) dns.Set("search", result.dns.search);
  if (!result.dns.options.empty()) dns.Set("options", result.dns.options);
  o.Set("dns", dns);
  return o;
}

std::string ResultToJson(const Result& result, absl::string_view cni_version) {
  return ResultToJsonObject(result, cni_version).ToJson();
}

absl::StatusOr<Result> ParseResult(const JsonObject& obj) {
  Result r;
  SARENA_ASSIGN_OR_RETURN(auto version, obj.GetString("cniVersion"));
  r.cni_version = version.value_or("");

  SARENA_ASSIGN_OR_RETURN(auto interfaces, obj.GetObjectArray("interfaces"));
  for (const JsonObject& j : interfaces.value_or(std::vector<JsonObject>{})) {
    Interface i;
    SARENA_ASSIGN_OR_RETURN(auto name, j.GetString("name"));
    if (!name || name->empty()) {
      return absl::InvalidArgumentError(absl::StrCat("missing field '", j.PathOf("name"), "'"));
    }
    i.name = *name;
    SARENA_ASSIGN_OR_RETURN(auto mac, j.GetString("mac"));
    i.mac = mac.value_or("");
    SARENA_ASSIGN_OR_RETURN(auto sandbox, j.GetString("sandbox"));
    i.sandbox = sandbox.value_or("");
    SARENA_ASSIGN_OR_RETURN(auto mtu, j.GetUint("mtu"));
    if (mtu) i.mtu = static_cast<uint32_t>(*mtu);
    r.interfaces.push_back(std::move(i));
  }

  SARENA_ASSIGN_OR_RETURN(auto ips, obj.GetObjectArray("ips"));
  for (const JsonObject& j : ips.value_or(std::vector<JsonObject>{})) {
    IpConfig c;
    SARENA_ASSIGN_OR_RETURN(auto address, j.GetString("address"));
    if (!address) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing field '", j.PathOf("address"), "'"));
    }
    if (!CanonicalCidr(*address)) {
      return Invalid(j.PathOf("address"), *address, "an address in CIDR form (10.244.1.5/32)");
    }
    c.address = *address;
    SARENA_ASSIGN_OR_RETURN(auto gateway, j.GetString("gateway"));
    if (gateway && !gateway->empty() && !IsAddress(*gateway)) {
      return Invalid(j.PathOf("gateway"), *gateway, "an IP address");
    }
    c.gateway = gateway.value_or("");
    SARENA_ASSIGN_OR_RETURN(auto index, j.GetUint("interface"));
    if (index) {
      if (*index >= r.interfaces.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "field '", j.PathOf("interface"), "' is ", *index, ", but interfaces has ",
            r.interfaces.size(), " entr", r.interfaces.size() == 1 ? "y" : "ies"));
      }
      c.interface = static_cast<uint32_t>(*index);
    }
    r.ips.push_back(std::move(c));
  }

  SARENA_ASSIGN_OR_RETURN(auto routes, obj.GetObjectArray("routes"));
  for (const JsonObject& j : routes.value_or(std::vector<JsonObject>{})) {
    Route rt;
    SARENA_ASSIGN_OR_RETURN(auto dst, j.GetString("dst"));
    if (!dst) {
      return absl::InvalidArgumentError(absl::StrCat("missing field '", j.PathOf("dst"), "'"));
    }
    if (!CanonicalCidr(*dst)) return Invalid(j.PathOf("dst"), *dst, "a CIDR prefix");
    rt.dst = *dst;
    SARENA_ASSIGN_OR_RETURN(auto gw, j.GetString("gw"));
    if (gw && !gw->empty() && !IsAddress(*gw)) return Invalid(j.PathOf("gw"), *gw, "an IP address");
    rt.gw = gw.value_or("");
    r.routes.push_back(std::move(rt));
  }

  SARENA_ASSIGN_OR_RETURN(auto dns, obj.GetObject("dns"));
  if (dns) {
    SARENA_ASSIGN_OR_RETURN(auto ns, dns->GetStringArray("nameservers"));
    r.dns.nameservers = ns.value_or(std::vector<std::string>{});
    SARENA_ASSIGN_OR_RETURN(auto domain, dns->GetString("domain"));
    r.dns.domain = domain.value_or("");
    SARENA_ASSIGN_OR_RETURN(auto search, dns->GetStringArray("search"));
    r.dns.search = search.value_or(std::vector<std::string>{});
    SARENA_ASSIGN_OR_RETURN(auto options, dns->GetStringArray("options"));
    r.dns.options = options.value_or(std::vector<std::string>{});
  }
  return r;
}

absl::StatusOr<Result> ParseResultJson(absl::string_view json) {
  SARENA_ASSIGN_OR_RETURN(JsonObject obj, JsonObject::Parse(json));
  return ParseResult(obj);
}

Result BuildResult(const EndpointInfo& ep, const Dns& dns) {
  Result r;
  Interface host;
  host.name = ep.host_ifname;
  host.mac = ep.host_mac;
  r.interfaces.push_back(std::move(host));
  Interface pod;
  pod.name = ep.ifname;
  pod.mac = ep.pod_mac;
  pod.sandbox = ep.netns;
  if (ep.mtu != 0) pod.mtu = ep.mtu;
  r.interfaces.push_back(std::move(pod));
  IpConfig ip;
  ip.address = absl::StrCat(ep.ip, "/", ep.prefix_len);
  ip.gateway = ep.gateway;
  ip.interface = 1;
  r.ips.push_back(std::move(ip));
  if (!ep.gateway.empty()) {
    Route onlink;
    onlink.dst = absl::StrCat(ep.gateway, "/32");
    r.routes.push_back(std::move(onlink));
    Route def;
    def.dst = "0.0.0.0/0";
    def.gw = ep.gateway;
    r.routes.push_back(std::move(def));
  }
  r.dns = dns;
  return r;
}

Result MergeResults(const Result& prev, const Result& ours) {
  Result r = prev;
  const uint32_t shift = static_cast<uint32_t>(prev.interfaces.size());
  r.interfaces.insert(r.interfaces.end(), ours.interfaces.begin(), ours.interfaces.end());
  for (IpConfig ip : ours.ips) {
    if (ip.interface) *ip.interface += shift;
    r.ips.push_back(std::move(ip));
  }
  r.routes.insert(r.routes.end(), ours.routes.begin(), ours.routes.end());
  if (!ours.dns.nameservers.empty()) r.dns = ours.dns;
  return r;
}

absl::Status CheckPrevResult(const Result& prev, const EndpointInfo& live) {
  // The container interface.
  std::optional<size_t> pod_index;
  for (size_t i = 0; i < prev.interfaces.size(); ++i) {
    if (prev.interfaces[i].name == live.ifname && !prev.interfaces[i].sandbox.empty()) {
      pod_index = i;
      break;
    }
  }
  if (!pod_index) {
    return CheckFailed(absl::StrCat("prevResult.interfaces lists no interface '", live.ifname,
                                    "' with a sandbox; sarenad has it in '", live.netns, "'"));
  }
  const Interface& pod = prev.interfaces[*pod_index];
  if (!live.netns.empty() && pod.sandbox != live.netns) {
    return CheckFailed(absl::StrCat("prevResult.interfaces[", *pod_index, "].sandbox is '",
                                    pod.sandbox, "' but sarenad has '", live.netns, "'"));
  }
  if (!pod.mac.empty() && !live.pod_mac.empty() && Lower(pod.mac) != Lower(live.pod_mac)) {
    return CheckFailed(absl::StrCat("prevResult.interfaces[", *pod_index, "].mac is '", pod.mac,
                                    "' but sarenad has '", live.pod_mac, "'"));
  }
  // The host-side veth, when host interfaces (no sandbox) are listed: one must be sarenad's.
  std::vector<std::string> host_names;
  for (const Interface& h : prev.interfaces) {
    if (h.sandbox.empty()) host_names.push_back(h.name);
  }
  if (!host_names.empty() && !live.host_ifname.empty() &&
      std::find(host_names.begin(), host_names.end(), live.host_ifname) == host_names.end()) {
    return CheckFailed(absl::StrCat("prevResult.interfaces lists host interface(s) '",
                                    absl::StrJoin(host_names, "', '"),
                                    "' but sarenad's host-side veth is '", live.host_ifname,
                                    "'"));
  }
  // The address.
  std::optional<std::string> want = CanonicalCidr(absl::StrCat(live.ip, "/", live.prefix_len));
  std::vector<std::string> listed;
  for (size_t i = 0; i < prev.ips.size(); ++i) {
    const IpConfig& c = prev.ips[i];
    std::optional<std::string> have = CanonicalCidr(c.address);
    listed.push_back(c.address);
    if (!have || !want || *have != *want) continue;
    if (c.interface && *c.interface != *pod_index) {
      return CheckFailed(absl::StrCat("prevResult.ips[", i, "].interface is ", *c.interface,
                                      " but interface '", live.ifname, "' is entry ",
                                      *pod_index));
    }
    if (!c.gateway.empty() && !live.gateway.empty() && c.gateway != live.gateway) {
      return CheckFailed(absl::StrCat("prevResult.ips[", i, "].gateway is '", c.gateway,
                                      "' but sarenad has '", live.gateway, "'"));
    }
    return absl::OkStatus();
  }
  return CheckFailed(absl::StrCat("prevResult.ips has [", absl::StrJoin(listed, ", "),
                                  "] but sarenad has ", live.ip, "/", live.prefix_len,
                                  " for container '", live.container_id, "' interface '",
                                  live.ifname, "'"));
}

}  // namespace sarena::cni
