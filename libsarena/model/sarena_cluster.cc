#include "libsarena/model/sarena_cluster.h"

#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/model/json.h"

namespace sarena::model {
namespace {

constexpr int64_t kMaxPeers = 16384;  // abi.h SARENA_MAX_PEERS

absl::StatusOr<std::optional<net::Ipv4Prefix>> GetPrefix(const JsonValue& o, absl::string_view key,
                                                          absl::string_view file,
                                                          absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(o, key, file, path));
  if (!s || s->empty()) return std::optional<net::Ipv4Prefix>();
  auto p = net::ParseIpv4Prefix(*s, key);
  if (!p.ok()) {
    return JsonFieldError(file, absl::StrCat(path, ".", key),
                          absl::StrCat("invalid IPv4 CIDR '", *s, "'"));
  }
  return std::optional<net::Ipv4Prefix>(p->canonical());
}

absl::StatusOr<std::optional<net::Mac>> GetMac(const JsonValue& o, absl::string_view key,
                                               absl::string_view file, absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto s, JsonGetString(o, key, file, path));
  if (!s || s->empty()) return std::optional<net::Mac>();
  auto m = net::ParseMac(*s, key);
  if (!m.ok()) {
    return JsonFieldError(file, absl::StrCat(path, ".", key), absl::StrCat("invalid MAC '", *s, "'"));
  }
  return std::optional<net::Mac>(*m);
}

absl::StatusOr<uint64_t> GetU(const JsonValue& o, absl::string_view key, absl::string_view file,
                              absl::string_view path, int64_t max) {
  SARENA_ASSIGN_OR_RETURN(auto v, JsonGetInt(o, key, file, path, 0, max, /*allow_string=*/true));
  return static_cast<uint64_t>(v.value_or(0));
}

absl::StatusOr<net::Ipv4> RequireIpv4(const JsonValue& o, absl::string_view key,
                                      absl::string_view file, absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto ip, JsonGetIpv4(o, key, file, path, /*skip_ipv6=*/false));
  if (!ip) return JsonFieldError(file, absl::StrCat(path, ".", key), "missing");
  return *ip;
}

// "family": "ipv4" (or absent) -> true; "ipv6" -> false (skipped until the walk models IPv6);
// anything else is an error naming the field.
absl::StatusOr<bool> IsIpv4Entry(const JsonValue& o, absl::string_view file, absl::string_view path) {
  const JsonValue* f = o.Find("family");
  if (f == nullptr) return true;
  if (f->is_string() && f->str() == "ipv4") return true;
  if (f->is_string() && f->str() == "ipv6") return false;
  return JsonFieldError(file, absl::StrCat(path, ".family"),
                        absl::StrCat("'", f->str(), "': expected ipv4 or ipv6"));
}

absl::StatusOr<const JsonValue*> List(const JsonValue& root, absl::string_view key,
                                      absl::string_view file) {
  const JsonValue* l = root.Find(key);
  if (l == nullptr) return nullptr;
  if (!l->is_array()) return JsonFieldError(file, key, "expected an array");
  return l;
}

}  // namespace

absl::string_view ToString(SarenaMode mode) {
  switch (mode) {
    case SarenaMode::kTunnel:
      return "tunnel";
    case SarenaMode::kNative:
      return "native";
    case SarenaMode::kUnknown:
      break;
  }
  return "unknown";
}

const SarenaTunnel* SarenaCluster::LookupTunnel(const net::Ipv4& ip) const {
  if (!tunnels) return nullptr;
  const SarenaTunnel* best = nullptr;
  for (const SarenaTunnel& t : *tunnels) {
    if (!net::Contains(t.cidr, ip)) continue;
    if (!best || t.cidr.prefix_length() > best->cidr.prefix_length()) best = &t;
  }
  return best;
}

const SarenaPeer* SarenaCluster::FindPeer(const net::Ipv4& underlay) const {
  if (!peers) return nullptr;
  for (const SarenaPeer& p : *peers) {
    if (p.underlay == underlay) return &p;
  }
  return nullptr;
}

absl::StatusOr<SarenaCluster> ParseSarenaCluster(absl::string_view json, absl::string_view file) {
  SARENA_ASSIGN_OR_RETURN(JsonDoc doc, JsonDoc::ParseBorrowed(json, file));
  const JsonValue& root = doc.root();
  if (!root.is_object()) return JsonFieldError(file, "(root)", "expected an object");
  SarenaCluster c;
  if (const JsonValue* o = root.Find("overlay")) {
    if (!o->is_object()) return JsonFieldError(file, "overlay", "expected an object");
    SarenaOverlay ov;
    const std::string p = "overlay";
    SARENA_ASSIGN_OR_RETURN(uint64_t flags, GetU(*o, "flags", file, p, UINT32_MAX));
    ov.flags = static_cast<uint32_t>(flags);
    SARENA_ASSIGN_OR_RETURN(uint64_t vni, GetU(*o, "vni", file, p, 0xffffff));
    ov.vni = static_cast<uint32_t>(vni);
    SARENA_ASSIGN_OR_RETURN(uint64_t vx, GetU(*o, "vxlan_ifindex", file, p, INT32_MAX));
    ov.vxlan_ifindex = static_cast<uint32_t>(vx);
    SARENA_ASSIGN_OR_RETURN(uint64_t up, GetU(*o, "uplink_ifindex", file, p, INT32_MAX));
    ov.uplink_ifindex = static_cast<uint32_t>(up);
    SARENA_ASSIGN_OR_RETURN(uint64_t id, GetU(*o, "node_id", file, p, kMaxPeers - 1));
    ov.node_id = static_cast<uint32_t>(id);
    SARENA_ASSIGN_OR_RETURN(ov.vxlan_mac, GetMac(*o, "vxlan_mac", file, p));
    SARENA_ASSIGN_OR_RETURN(ov.uplink_mac, GetMac(*o, "uplink_mac", file, p));
    SARENA_ASSIGN_OR_RETURN(ov.underlay, JsonGetIpv4(*o, "underlay", file, p));
    SARENA_ASSIGN_OR_RETURN(ov.cluster_cidr, GetPrefix(*o, "cluster_cidr", file, p));
    c.overlay = ov;
  }
  if (const JsonValue* o = root.Find("config")) {
    if (!o->is_object()) return JsonFieldError(file, "config", "expected an object");
    SARENA_ASSIGN_OR_RETURN(c.pod_cidr, GetPrefix(*o, "pod_cidr", file, "config"));
    SARENA_ASSIGN_OR_RETURN(c.node_ip, JsonGetIpv4(*o, "node_ip", file, "config"));
  }
  SARENA_ASSIGN_OR_RETURN(const JsonValue* tunnels, List(root, "tunnels", file));
  if (tunnels) {
    c.tunnels.emplace();
    for (size_t i = 0; i < tunnels->size(); ++i) {
      const JsonValue& e = (*tunnels)[i];
      std::string p = JsonIndexPath("tunnels", i);
      if (!e.is_object()) return JsonFieldError(file, p, "expected an object");
      SARENA_ASSIGN_OR_RETURN(bool v4, IsIpv4Entry(e, file, p));
      if (!v4) continue;
      SarenaTunnel t;
      SARENA_ASSIGN_OR_RETURN(auto cidr, GetPrefix(e, "cidr", file, p));
      if (!cidr) return JsonFieldError(file, p + ".cidr", "missing");
      t.cidr = *cidr;
      SARENA_ASSIGN_OR_RETURN(t.underlay, RequireIpv4(e, "underlay", file, p));
      SARENA_ASSIGN_OR_RETURN(auto mode, JsonGetString(e, "mode", file, p));
      if (!mode) return JsonFieldError(file, p + ".mode", "missing");
      if (*mode == "tunnel") {
        t.mode = SarenaMode::kTunnel;
      } else if (*mode == "native") {
        t.mode = SarenaMode::kNative;
      } else {
        return JsonFieldError(file, p + ".mode",
                              absl::StrCat("'", *mode, "': expected tunnel or native"));
      }
      SARENA_ASSIGN_OR_RETURN(uint64_t id, GetU(e, "node_id", file, p, kMaxPeers - 1));
      t.node_id = static_cast<uint32_t>(id);
      SARENA_ASSIGN_OR_RETURN(uint64_t fl, GetU(e, "flags", file, p, UINT32_MAX));
      t.flags = static_cast<uint32_t>(fl);
      c.tunnels->push_back(t);
    }
  }
  SARENA_ASSIGN_OR_RETURN(const JsonValue* peers, List(root, "peers", file));
  if (peers) {
    c.peers.emplace();
    for (size_t i = 0; i < peers->size(); ++i) {
      const JsonValue& e = (*peers)[i];
      std::string p = JsonIndexPath("peers", i);
      if (!e.is_object()) return JsonFieldError(file, p, "expected an object");
      SARENA_ASSIGN_OR_RETURN(bool v4, IsIpv4Entry(e, file, p));
      if (!v4) continue;
      SarenaPeer peer;
      SARENA_ASSIGN_OR_RETURN(peer.underlay, RequireIpv4(e, "underlay", file, p));
      SARENA_ASSIGN_OR_RETURN(uint64_t id, GetU(e, "node_id", file, p, kMaxPeers - 1));
      peer.node_id = static_cast<uint32_t>(id);
      SARENA_ASSIGN_OR_RETURN(uint64_t fl, GetU(e, "flags", file, p, UINT32_MAX));
      peer.flags = static_cast<uint32_t>(fl);
      c.peers->push_back(peer);
    }
  }
  SARENA_ASSIGN_OR_RETURN(const JsonValue* ctr, List(root, "node_counters", file));
  for (size_t i = 0; ctr && i < ctr->size(); ++i) {
    const JsonValue& e = (*ctr)[i];
    std::string p = JsonIndexPath("node_counters", i);
    if (!e.is_object()) return JsonFieldError(file, p, "expected an object");
    SarenaNodeCounters n;
    SARENA_ASSIGN_OR_RETURN(uint64_t id, GetU(e, "node_id", file, p, kMaxPeers - 1));
    n.node_id = static_cast<uint32_t>(id);
    SARENA_ASSIGN_OR_RETURN(n.tx_packets, GetU(e, "tx_packets", file, p, INT64_MAX));
    SARENA_ASSIGN_OR_RETURN(n.tx_bytes, GetU(e, "tx_bytes", file, p, INT64_MAX));
    SARENA_ASSIGN_OR_RETURN(n.rx_packets, GetU(e, "rx_packets", file, p, INT64_MAX));
    SARENA_ASSIGN_OR_RETURN(n.rx_bytes, GetU(e, "rx_bytes", file, p, INT64_MAX));
    c.node_counters.push_back(n);
  }
  return c;
}

}  // namespace sarena::model
