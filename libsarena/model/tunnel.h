// Tunnel overheads, in one table: the bytes an encapsulation puts in front of an inner IPv4
// packet on an IPv4 underlay, so the largest inner packet a tunnel carries is the underlay MTU
// minus these (Calico on a 1500-byte link: IPIP 1480, VXLAN 1450, WireGuard 1440). The walk
// (libsarena/diag/walk/: tunnel devices, outer packet sizes, veth crossings) and the CNI plugins'
// MTU checks (diag/calico.cc, diag/sarena_cluster.h) read it. The datapath's own VXLAN MTU
// (datapath/overlay.h) is the datapath's, below this layer.
#ifndef LIBSARENA_MODEL_TUNNEL_H_
#define LIBSARENA_MODEL_TUNNEL_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace sarena::model {

struct TunnelOverhead {
  std::string_view kind;    // the tunnel device's kind (ip -d link: linkinfo.info_kind)
  uint32_t bytes;           // added to each inner IPv4 packet
  std::string_view layout;  // where the bytes go
};

inline constexpr TunnelOverhead kTunnelOverheads[] = {
    {"ipip", 20, "outer IPv4 header 20"},
    {"vxlan", 50, "outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14 (RFC 7348)"},
    {"wireguard", 60,
     "outer IPv4 20 + UDP 8 + WireGuard data message header 16 (type, receiver, counter) + "
     "Poly1305 tag 16"},
};

/// The overhead of the tunnel device kind `kind` ("ipip", "vxlan", "wireguard"); nullopt for any
/// other kind.
constexpr std::optional<uint32_t> TunnelOverheadOf(std::string_view kind) {
  for (const TunnelOverhead& t : kTunnelOverheads) {
    if (t.kind == kind) return t.bytes;
  }
  return std::nullopt;
}

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_TUNNEL_H_
