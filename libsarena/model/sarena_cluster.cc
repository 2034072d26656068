#include "libsarena/model/sarena_cluster.h"

#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "absl/container/flat_hash_map.h"
#include "libsarena/model/proto_json.h"
#include "libsarena/model/sarena_node.pb.h"

namespace sarena::model {
namespace {

constexpr uint64_t kMaxPeers = 16384;  // abi.h SARENA_MAX_PEERS

absl::StatusOr<net::Ipv4> RequireIpv4(const std::string& text, absl::string_view file,
                                      absl::string_view path) {
  SARENA_ASSIGN_OR_RETURN(auto ip, Ipv4Field(text, file, path, /*skip_ipv6=*/false));
  if (!ip) return ProtoFieldError(file, path, "missing");
  return *ip;
}

// "ipv4" (or empty) -> true; "ipv6" -> false (skipped until the walk models IPv6); anything else
// (the writer prints an unknown family as its number) is an error naming the field.
absl::StatusOr<bool> IsIpv4Entry(const std::string& family, absl::string_view file,
                                 absl::string_view path) {
  if (family.empty() || family == "ipv4") return true;
  if (family == "ipv6") return false;
  return ProtoFieldError(file, absl::StrCat(path, ".family"),
                         absl::StrCat("'", family, "': expected ipv4 or ipv6"));
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
  const SarenaTunnel* best = nullptr;
  for (const SarenaTunnel& t : tunnels) {
    if (!net::Contains(t.cidr, ip)) continue;
    if (!best || t.cidr.prefix_length() > best->cidr.prefix_length()) best = &t;
  }
  return best;
}

const SarenaPeer* SarenaCluster::FindPeer(const net::Ipv4& underlay) const {
  for (const SarenaPeer& p : peers) {
    if (p.underlay == underlay) return &p;
  }
  return nullptr;
}

absl::StatusOr<SarenaCluster> ParseSarenaCluster(absl::string_view json, absl::string_view file) {
  snapshot::v1::SarenaClusterFile f;
  SARENA_RETURN_IF_ERROR(ParseProtoJson(json, file, &f));
  SarenaCluster c;
  if (f.has_overlay()) {
    const snapshot::v1::OverlayConfig& o = f.overlay();
    SarenaOverlay ov;
    ov.flags = o.flags();
    SARENA_RETURN_IF_ERROR(MaxField(o.vni(), 0xffffff, file, "overlay.vni"));
    ov.vni = o.vni();
    SARENA_RETURN_IF_ERROR(MaxField(o.vxlan_ifindex(), INT32_MAX, file, "overlay.vxlan_ifindex"));
    ov.vxlan_ifindex = o.vxlan_ifindex();
    SARENA_RETURN_IF_ERROR(MaxField(o.uplink_ifindex(), INT32_MAX, file, "overlay.uplink_ifindex"));
    ov.uplink_ifindex = o.uplink_ifindex();
    SARENA_RETURN_IF_ERROR(MaxField(o.node_id(), kMaxPeers - 1, file, "overlay.node_id"));
    ov.node_id = o.node_id();
    SARENA_ASSIGN_OR_RETURN(ov.vxlan_mac, MacField(o.vxlan_mac(), file, "overlay.vxlan_mac"));
    SARENA_ASSIGN_OR_RETURN(ov.uplink_mac, MacField(o.uplink_mac(), file, "overlay.uplink_mac"));
    SARENA_ASSIGN_OR_RETURN(ov.underlay, Ipv4Field(o.underlay(), file, "overlay.underlay", true));
    SARENA_ASSIGN_OR_RETURN(ov.cluster_cidr,
                            Ipv4PrefixField(o.cluster_cidr(), file, "overlay.cluster_cidr"));
    c.overlay = ov;
  }
  if (f.has_config()) {
    SARENA_ASSIGN_OR_RETURN(c.pod_cidr,
                            Ipv4PrefixField(f.config().pod_cidr(), file, "config.pod_cidr"));
    SARENA_ASSIGN_OR_RETURN(c.node_ip, Ipv4Field(f.config().node_ip(), file, "config.node_ip", true));
  }
  // The tunnel map is an LPM trie keyed by the CIDR: one entry per prefix.
  absl::flat_hash_map<std::string, int> tunnel_at;
  for (int i = 0; i < f.tunnels_size(); ++i) {
    const snapshot::v1::TunnelEntry& e = f.tunnels(i);
    const std::string p = absl::StrCat("tunnels[", i, "]");
    SARENA_ASSIGN_OR_RETURN(bool v4, IsIpv4Entry(e.family(), file, p));
    if (!v4) continue;
    SarenaTunnel t;
    SARENA_ASSIGN_OR_RETURN(auto cidr, Ipv4PrefixField(e.cidr(), file, p + ".cidr"));
    if (!cidr) return ProtoFieldError(file, p + ".cidr", "missing");
    t.cidr = *cidr;
    if (auto [it, inserted] = tunnel_at.try_emplace(t.cidr.to_string(), i); !inserted) {
      return ProtoFieldError(file, p + ".cidr",
                             absl::StrCat("duplicate key '", t.cidr.to_string(), "': tunnels[",
                                          it->second, "] has it too (the tunnel map holds one "
                                          "entry per prefix)"));
    }
    SARENA_ASSIGN_OR_RETURN(t.underlay, RequireIpv4(e.underlay(), file, p + ".underlay"));
    if (e.mode().empty()) return ProtoFieldError(file, p + ".mode", "missing");
    if (e.mode() == "tunnel") {
      t.mode = SarenaMode::kTunnel;
    } else if (e.mode() == "native") {
      t.mode = SarenaMode::kNative;
    } else {
      return ProtoFieldError(file, p + ".mode",
                             absl::StrCat("'", e.mode(), "': expected tunnel or native"));
    }
    SARENA_RETURN_IF_ERROR(MaxField(e.node_id(), kMaxPeers - 1, file, p + ".node_id"));
    t.node_id = e.node_id();
    t.flags = e.flags();
    c.tunnels.push_back(t);
  }
  for (int i = 0; i < f.peers_size(); ++i) {
    const snapshot::v1::PeerEntry& e = f.peers(i);
    const std::string p = absl::StrCat("peers[", i, "]");
    SARENA_ASSIGN_OR_RETURN(bool v4, IsIpv4Entry(e.family(), file, p));
    if (!v4) continue;
    SarenaPeer peer;
    SARENA_ASSIGN_OR_RETURN(peer.underlay, RequireIpv4(e.underlay(), file, p + ".underlay"));
    SARENA_RETURN_IF_ERROR(MaxField(e.node_id(), kMaxPeers - 1, file, p + ".node_id"));
    peer.node_id = e.node_id();
    peer.flags = e.flags();
    c.peers.push_back(peer);
  }
  for (int i = 0; i < f.node_counters_size(); ++i) {
    const snapshot::v1::NodeCounters& e = f.node_counters(i);
    const std::string p = absl::StrCat("node_counters[", i, "]");
    SARENA_RETURN_IF_ERROR(MaxField(e.node_id(), kMaxPeers - 1, file, p + ".node_id"));
    c.node_counters.push_back(SarenaNodeCounters{e.node_id(), e.tx_packets(), e.tx_bytes(),
                                                 e.rx_packets(), e.rx_bytes()});
  }
  return c;
}

}  // namespace sarena::model
