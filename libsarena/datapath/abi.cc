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
