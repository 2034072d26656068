#include "libsarena/datapath/abi.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sarena::datapath {

EndpointKey MakeEndpointKey(const net::Ipv4& ip, uint16_t cluster_id) {
  EndpointKey key;
  std::memset(&key, 0, sizeof(key));
  uint32_t be = net::ToBe32(ip);
  std::memcpy(key.addr, &be, sizeof(be));
  key.family = SARENA_FAMILY_IPV4;
  key.cluster_id = cluster_id;
  return key;
}

std::optional<net::Ipv4> EndpointKeyIpv4(const EndpointKey& key) {
  if (key.family != SARENA_FAMILY_IPV4) return std::nullopt;
  uint32_t be;
  std::memcpy(&be, key.addr, sizeof(be));
  return net::FromBe32(be);
}

Endpoint MakeEndpoint(uint32_t ifindex, const net::Mac& pod_mac, const net::Mac& host_mac,
                      uint32_t endpoint_id, uint32_t flags) {
  Endpoint ep;
  std::memset(&ep, 0, sizeof(ep));
  ep.ifindex = ifindex;
  std::memcpy(ep.pod_mac, pod_mac.data(), 6);
  std::memcpy(ep.host_mac, host_mac.data(), 6);
  ep.endpoint_id = endpoint_id;
  ep.flags = flags;
  return ep;
}

TunnelKey MakeTunnelKey(const net::Ipv4Prefix& prefix) {
  TunnelKey key;
  std::memset(&key, 0, sizeof(key));
  key.prefixlen = 32 + prefix.prefix_length();
  key.family = SARENA_FAMILY_IPV4;
  uint32_t be = net::ToBe32(prefix.network());
  std::memcpy(key.addr, &be, sizeof(be));
  return key;
}

TunnelKey MakeTunnelLookupKey(const net::Ipv4& ip) {
  TunnelKey key;
  std::memset(&key, 0, sizeof(key));
  key.prefixlen = 32 + 128;
  key.family = SARENA_FAMILY_IPV4;
  uint32_t be = net::ToBe32(ip);
  std::memcpy(key.addr, &be, sizeof(be));
  return key;
}

std::optional<net::Ipv4Prefix> TunnelKeyIpv4(const TunnelKey& key) {
  if (key.family != SARENA_FAMILY_IPV4 || key.prefixlen < 32 || key.prefixlen > 64)
    return std::nullopt;
  uint32_t be;
  std::memcpy(&be, key.addr, sizeof(be));
  return net::Ipv4Prefix(net::FromBe32(be), static_cast<unsigned short>(key.prefixlen - 32));
}

Tunnel MakeTunnel(const net::Ipv4& underlay, uint32_t node_id, uint8_t mode) {
  Tunnel t;
  std::memset(&t, 0, sizeof(t));
  uint32_t be = net::ToBe32(underlay);
  std::memcpy(t.underlay, &be, sizeof(be));
  t.underlay_family = SARENA_FAMILY_IPV4;
  t.mode = mode;
  t.node_id = node_id;
  return t;
}

std::optional<net::Ipv4> TunnelUnderlayIpv4(const Tunnel& tunnel) {
  if (tunnel.underlay_family != SARENA_FAMILY_IPV4) return std::nullopt;
  uint32_t be;
  std::memcpy(&be, tunnel.underlay, sizeof(be));
  return net::FromBe32(be);
}

PeerKey MakePeerKey(const net::Ipv4& underlay) {
  PeerKey key;
  std::memset(&key, 0, sizeof(key));
  uint32_t be = net::ToBe32(underlay);
  std::memcpy(key.addr, &be, sizeof(be));
  key.family = SARENA_FAMILY_IPV4;
  return key;
}

std::optional<net::Ipv4> PeerKeyIpv4(const PeerKey& key) {
  if (key.family != SARENA_FAMILY_IPV4) return std::nullopt;
  uint32_t be;
  std::memcpy(&be, key.addr, sizeof(be));
  return net::FromBe32(be);
}

std::string RoutingModeName(uint8_t mode) {
  switch (mode) {
    case SARENA_MODE_TUNNEL:
      return "tunnel";
    case SARENA_MODE_NATIVE:
      return "native";
    default:
      return absl::StrCat("mode_", mode);
  }
}

std::string FormatTunnelKey(const TunnelKey& key) {
  if (auto prefix = TunnelKeyIpv4(key)) return prefix->to_string();
  std::string out = absl::StrCat("family ", key.family, " ");
  for (uint8_t b : key.addr) absl::StrAppend(&out, absl::Hex(b, absl::kZeroPad2));
  absl::StrAppend(&out, "/", static_cast<int64_t>(key.prefixlen) - 32);
  return out;
}

std::string FormatTunnel(const Tunnel& tunnel) {
  auto ip = TunnelUnderlayIpv4(tunnel);
  return absl::StrCat("underlay=", ip ? ip->to_string() : absl::StrCat("family ", tunnel.underlay_family),
                      " node_id=", tunnel.node_id, " mode=", RoutingModeName(tunnel.mode),
                      " flags=0x", absl::Hex(tunnel.flags));
}

std::string FormatOverlayConfig(const OverlayConfig& cfg) {
  std::string underlay;
  if (cfg.underlay_family == SARENA_FAMILY_IPV4) {
    uint32_t be;
    std::memcpy(&be, cfg.underlay, sizeof(be));
    underlay = net::FromBe32(be).to_string();
  } else {
    underlay = absl::StrCat("family ", cfg.underlay_family);
  }
  return absl::StrCat("flags=0x", absl::Hex(cfg.flags), " vni=", cfg.vni,
                      " vxlan_ifindex=", cfg.vxlan_ifindex, " uplink_ifindex=", cfg.uplink_ifindex,
                      " node_id=", cfg.node_id, " vxlan_mac=", net::FormatMac(ToMac(cfg.vxlan_mac)),
                      " uplink_mac=", net::FormatMac(ToMac(cfg.uplink_mac)), " underlay=", underlay,
                      " cluster_cidr=", net::FromBe32(cfg.cluster_cidr_be).to_string(), "/",
                      cfg.cluster_cidr_len);
}

NodeCounters SumCounters(absl::Span<const NodeCounters> per_cpu) {
  NodeCounters sum = {};
  for (const auto& c : per_cpu) {
    sum.tx_packets += c.tx_packets;
    sum.tx_bytes += c.tx_bytes;
    sum.rx_packets += c.rx_packets;
    sum.rx_bytes += c.rx_bytes;
  }
  return sum;
}

bool Equal(const TunnelKey& a, const TunnelKey& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }
bool Equal(const Tunnel& a, const Tunnel& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }
bool Equal(const OverlayConfig& a, const OverlayConfig& b) {
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

bool Equal(const EndpointKey& a, const EndpointKey& b) {
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}
bool Equal(const Endpoint& a, const Endpoint& b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

net::Mac ToMac(const uint8_t (&bytes)[6]) {
  net::Mac mac;
  std::memcpy(mac.data(), bytes, 6);
  return mac;
}

std::string FormatEndpointKey(const EndpointKey& key) {
  std::string out;
  if (auto ip = EndpointKeyIpv4(key)) {
    out = ip->to_string();
  } else {
    out = absl::StrCat("family ", key.family, " ");
    for (uint8_t b : key.addr) absl::StrAppend(&out, absl::Hex(b, absl::kZeroPad2));
  }
  if (key.cluster_id != 0) absl::StrAppend(&out, " cluster ", key.cluster_id);
  return out;
}

std::string FormatEndpoint(const Endpoint& ep) {
  return absl::StrCat("ifindex=", ep.ifindex, " pod_mac=", net::FormatMac(ToMac(ep.pod_mac)),
                      " host_mac=", net::FormatMac(ToMac(ep.host_mac)),
                      " endpoint_id=", ep.endpoint_id, " flags=0x", absl::Hex(ep.flags));
}

std::string FormatConfig(const Config& cfg) {
  return absl::StrCat(
      "node_ip=", net::FromBe32(cfg.node_ip_be).to_string(), " host_ifindex=", cfg.host_ifindex,
      " net_ifindex=", cfg.net_ifindex, " host_mac=", net::FormatMac(ToMac(cfg.host_mac)),
      " net_mac=", net::FormatMac(ToMac(cfg.net_mac)),
      " pod_cidr=", net::FromBe32(cfg.pod_cidr_be).to_string(), "/", cfg.pod_cidr_len,
      " flags=0x", absl::Hex(cfg.flags));
}

std::string FormatFlowKey(const FlowKey& key) {
  return absl::StrCat(net::FromBe32(key.addr_be).to_string(), ":", ntohs(key.port_be), " proto ",
                      key.proto);
}

EndpointCounters SumCounters(absl::Span<const EndpointCounters> per_cpu) {
  EndpointCounters sum = {};
  for (const auto& c : per_cpu) {
    sum.rx_packets += c.rx_packets;
    sum.rx_bytes += c.rx_bytes;
    sum.tx_packets += c.tx_packets;
    sum.tx_bytes += c.tx_bytes;
  }
  return sum;
}

DropCounter SumCounters(absl::Span<const DropCounter> per_cpu) {
  DropCounter sum = {};
  for (const auto& c : per_cpu) {
    sum.packets += c.packets;
    sum.bytes += c.bytes;
  }
  return sum;
}

// The list is contiguous from 0 and SARENA_DROP_REASON_MAX (the drop map's size) counts it.
#define SARENA_DROP_COUNT_(suffix, value, name, why) +1
static_assert(SARENA_DROP_REASON_MAX == 0 SARENA_DROP_REASONS(SARENA_DROP_COUNT_),
              "SARENA_DROP_REASON_MAX must equal the number of SARENA_DROP_REASONS");
#undef SARENA_DROP_COUNT_
#define SARENA_DROP_CONTIGUOUS_(suffix, value, name, why) \
  static_assert(SARENA_DROP_##suffix < SARENA_DROP_REASON_MAX, #suffix " out of range");
SARENA_DROP_REASONS(SARENA_DROP_CONTIGUOUS_)
#undef SARENA_DROP_CONTIGUOUS_

std::string DropReasonName(uint32_t reason) {
  switch (reason) {
#define SARENA_DROP_NAME_CASE_(suffix, value, name, why) \
  case SARENA_DROP_##suffix:                             \
    return name;
    SARENA_DROP_REASONS(SARENA_DROP_NAME_CASE_)
#undef SARENA_DROP_NAME_CASE_
    default:
      return absl::StrCat("reason_", reason);
  }
}

std::string DropReasonDescription(uint32_t reason) {
  switch (reason) {
#define SARENA_DROP_WHY_CASE_(suffix, value, name, why) \
  case SARENA_DROP_##suffix:                            \
    return why;
    SARENA_DROP_REASONS(SARENA_DROP_WHY_CASE_)
#undef SARENA_DROP_WHY_CASE_
    default:
      return "unknown drop reason";
  }
}

}  // namespace sarena::datapath
