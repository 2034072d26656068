#include "libsarena/collect/cluster_maps.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/datapath/maps.h"
#include "libsarena/model/proto_json.h"
#include "libsarena/model/sarena_node.pb.h"
#include "libsarena/net/ip.h"

namespace sarena::collect {
namespace {

std::string Pin(absl::string_view root, const char* name) { return absl::StrCat(root, "/", name); }

// Address bytes (network byte order) of `family` as text; "" for family 0 / unknown.
std::string AddrText(const uint8_t* addr, uint8_t family) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family == SARENA_FAMILY_IPV4) {
    inet_ntop(AF_INET, addr, buf, sizeof(buf));
  } else if (family == SARENA_FAMILY_IPV6) {
    inet_ntop(AF_INET6, addr, buf, sizeof(buf));
  } else {
    return "";
  }
  return buf;
}

// "ipv4" | "ipv6"; an unknown family as its number, which the reader rejects by name.
std::string FamilyText(uint8_t family) {
  if (family == SARENA_FAMILY_IPV4) return "ipv4";
  if (family == SARENA_FAMILY_IPV6) return "ipv6";
  return absl::StrCat(family);
}

// "tunnel" | "native"; an unknown mode as its number, which the reader rejects by name.
std::string ModeText(uint8_t mode) {
  if (mode == SARENA_MODE_TUNNEL) return "tunnel";
  if (mode == SARENA_MODE_NATIVE) return "native";
  return absl::StrCat(mode);
}

std::string MacText(const uint8_t (&m)[6]) {
  net::Mac mac;
  std::memcpy(mac.data(), m, 6);
  return net::FormatMac(mac);
}

std::string Ipv4Be(uint32_t be) { return net::FromBe32(be).to_string(); }

// The map class `M` (datapath/maps.h) pinned under `root`, opened read-only; nullopt with a note
// when it is not pinned.
template <typename M>
absl::StatusOr<std::optional<M>> OpenIfPinned(absl::string_view root,
                                              std::vector<std::string>* notes) {
  absl::StatusOr<M> m = datapath::OpenPinnedMap<M>(root, bpf::PinAccess::kReadOnly);
  if (absl::IsNotFound(m.status())) {
    notes->push_back(absl::StrCat(Pin(root, M::kPinName), ": not pinned"));
    return std::optional<M>();
  }
  SARENA_RETURN_IF_ERROR(m.status());
  return std::optional<M>(*std::move(m));
}

template <typename M>
absl::StatusOr<std::optional<std::vector<std::pair<typename M::Key, typename M::Value>>>> ReadAll(
    absl::string_view root, std::vector<std::string>* notes) {
  using Entries = std::vector<std::pair<typename M::Key, typename M::Value>>;
  SARENA_ASSIGN_OR_RETURN(std::optional<M> m, OpenIfPinned<M>(root, notes));
  if (!m) return std::optional<Entries>();
  Entries out;
  SARENA_RETURN_IF_ERROR(m->ForEach([&](const typename M::Key& k, const typename M::Value& v) {
    out.emplace_back(k, v);
    return true;
  }));
  return std::optional<Entries>(std::move(out));
}

template <typename M>
absl::StatusOr<std::optional<typename M::Value>> ReadSingleton(absl::string_view root,
                                                              std::vector<std::string>* notes) {
  SARENA_ASSIGN_OR_RETURN(std::optional<M> m, OpenIfPinned<M>(root, notes));
  if (!m) return std::optional<typename M::Value>();
  SARENA_ASSIGN_OR_RETURN(typename M::Value v, m->Read());
  return std::optional<typename M::Value>(v);
}

}  // namespace

absl::StatusOr<ClusterMaps> ReadClusterMaps(absl::string_view pin_root,
                                            std::vector<std::string>* notes) {
  ClusterMaps maps;
  SARENA_ASSIGN_OR_RETURN(maps.overlay, ReadSingleton<datapath::OverlayConfigMap>(pin_root, notes));
  SARENA_ASSIGN_OR_RETURN(maps.config, ReadSingleton<datapath::ConfigMap>(pin_root, notes));
  // The tunnel map is an LPM trie: GET_NEXT_KEY walks it like a hash.
  SARENA_ASSIGN_OR_RETURN(maps.tunnels, ReadAll<datapath::TunnelMap>(pin_root, notes));
  SARENA_ASSIGN_OR_RETURN(maps.peers, ReadAll<datapath::PeerMap>(pin_root, notes));
  SARENA_ASSIGN_OR_RETURN(std::optional<datapath::NodeCounterMap> ctr,
                          OpenIfPinned<datapath::NodeCounterMap>(pin_root, notes));
  if (ctr) {
    SARENA_ASSIGN_OR_RETURN(auto rows, ctr->LookupBatch());
    for (const auto& [id, per_cpu] : rows) {
      const sarena_node_counters sum = datapath::SumCounters(per_cpu);
      if (sum.tx_packets || sum.tx_bytes || sum.rx_packets || sum.rx_bytes) {
        maps.node_counters.emplace_back(id, sum);
      }
    }
    std::sort(maps.node_counters.begin(), maps.node_counters.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  return maps;
}

std::string FormatClusterMaps(const ClusterMaps& maps) {
  snapshot::v1::SarenaClusterFile file;
  if (maps.overlay) {
    const sarena_overlay_config& o = *maps.overlay;
    snapshot::v1::OverlayConfig* ov = file.mutable_overlay();
    ov->set_flags(o.flags);
    ov->set_vni(o.vni);
    ov->set_vxlan_ifindex(o.vxlan_ifindex);
    ov->set_uplink_ifindex(o.uplink_ifindex);
    ov->set_node_id(o.node_id);
    ov->set_vxlan_mac(MacText(o.vxlan_mac));
    ov->set_uplink_mac(MacText(o.uplink_mac));
    ov->set_underlay(AddrText(o.underlay, o.underlay_family));
    if (o.cluster_cidr_len > 0 && o.cluster_cidr_len <= 32) {
      ov->set_cluster_cidr(absl::StrCat(Ipv4Be(o.cluster_cidr_be), "/", o.cluster_cidr_len));
    }
  }
  if (maps.config) {
    snapshot::v1::NodeConfig* c = file.mutable_config();
    if (maps.config->pod_cidr_len > 0 && maps.config->pod_cidr_len <= 32) {
      c->set_pod_cidr(
          absl::StrCat(Ipv4Be(maps.config->pod_cidr_be), "/", maps.config->pod_cidr_len));
    }
    if (maps.config->node_ip_be != 0) c->set_node_ip(Ipv4Be(maps.config->node_ip_be));
  }
  if (maps.tunnels) {
    auto rows = *maps.tunnels;
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      int c = std::memcmp(a.first.addr, b.first.addr, 16);
      return c != 0 ? c < 0 : a.first.prefixlen < b.first.prefixlen;
    });
    for (const auto& [k, v] : rows) {
      // prefixlen counts family + pad (32 bits) before the address.
      uint32_t len = k.prefixlen >= 32 ? k.prefixlen - 32 : 0;
      snapshot::v1::TunnelEntry* t = file.add_tunnels();
      t->set_family(FamilyText(k.family));
      t->set_cidr(absl::StrCat(AddrText(k.addr, k.family), "/", len));
      t->set_underlay(AddrText(v.underlay, v.underlay_family));
      t->set_mode(ModeText(v.mode));
      t->set_node_id(v.node_id);
      t->set_flags(v.flags);
    }
  }
  if (maps.peers) {
    auto rows = *maps.peers;
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return std::memcmp(a.first.addr, b.first.addr, 16) < 0;
    });
    for (const auto& [k, v] : rows) {
      snapshot::v1::PeerEntry* p = file.add_peers();
      p->set_family(FamilyText(k.family));
      p->set_underlay(AddrText(k.addr, k.family));
      p->set_node_id(v.node_id);
      p->set_flags(v.flags);
    }
  }
  for (const auto& [id, c] : maps.node_counters) {
    snapshot::v1::NodeCounters* n = file.add_node_counters();
    n->set_node_id(id);
    n->set_tx_packets(c.tx_packets);
    n->set_tx_bytes(c.tx_bytes);
    n->set_rx_packets(c.rx_packets);
    n->set_rx_bytes(c.rx_bytes);
  }
  return model::PrintProtoJson(file);
}

}  // namespace sarena::collect
