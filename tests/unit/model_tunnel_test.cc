// The tunnel overheads table (libsarena/model/tunnel.h): one row per tunnel kind, and the pod MTUs
// a CNI derives from it on a 1500-byte link (Calico: IPIP 1480, VXLAN 1450, WireGuard 1440).
// The receive side: which device of a netns takes an encapsulated packet
// (Netstack::TunnelReceiver).
#include "gtest/gtest.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/packet.h"
#include "libsarena/model/tunnel.h"

namespace sarena::model {
namespace {

TEST(TunnelOverhead, OneRowPerKind) {
  EXPECT_EQ(TunnelOverheadOf("ipip"), 20u);
  EXPECT_EQ(TunnelOverheadOf("vxlan"), 50u);
  // 20 outer IPv4 + 8 UDP + 32 WireGuard (16 data message header + 16 Poly1305 tag), not 20.
  EXPECT_EQ(TunnelOverheadOf("wireguard"), 60u);
  EXPECT_EQ(TunnelOverheadOf("veth"), std::nullopt);
  EXPECT_EQ(TunnelOverheadOf(""), std::nullopt);
  static_assert(*TunnelOverheadOf("wireguard") == 20 + 8 + 16 + 16);
}

TEST(TunnelOverhead, CalicoPodMtusOnA1500ByteLink) {
  EXPECT_EQ(1500 - *TunnelOverheadOf("ipip"), 1480u);
  EXPECT_EQ(1500 - *TunnelOverheadOf("vxlan"), 1450u);
  EXPECT_EQ(1500 - *TunnelOverheadOf("wireguard"), 1440u);
}

TEST(TunnelOverhead, KindsAreUnique) {
  for (size_t i = 0; i < std::size(kTunnelOverheads); ++i) {
    for (size_t j = i + 1; j < std::size(kTunnelOverheads); ++j) {
      EXPECT_NE(kTunnelOverheads[i].kind, kTunnelOverheads[j].kind);
    }
    EXPECT_FALSE(kTunnelOverheads[i].layout.empty());
  }
}

net::Ipv4 Ip(const char* s) { return net::Ipv4::from_string(s); }

Interface Ipip(const char* name, std::optional<net::Ipv4> local, std::optional<net::Ipv4> remote) {
  Interface i;
  i.name = name;
  i.kind = "ipip";
  i.tunnel = TunnelInfo{.proto = "ipip", .local = local, .remote = remote};
  return i;
}

Packet Outer(uint8_t proto, const char* src, const char* dst, uint16_t dport = 0) {
  Packet p;
  p.proto = proto;
  p.src = Ip(src);
  p.dst = Ip(dst);
  p.dport = dport;
  return p;
}

TEST(TunnelReceiver, IpipPrefersTheSendersDeviceThenTheWildcard) {
  Netstack ns;
  ns.AddInterface(Ipip("tunl0", std::nullopt, std::nullopt));      // remote any
  ns.AddInterface(Ipip("other", Ip("10.0.0.9"), Ip("10.0.0.2")));  // another local address
  ns.AddInterface(Ipip("to-b", Ip("10.0.0.1"), Ip("10.0.0.2")));
  ns.Finalize();
  EXPECT_EQ(ns.TunnelReceiver(Outer(kProtoIpip, "10.0.0.2", "10.0.0.1"), false)->name, "to-b");
  EXPECT_EQ(ns.TunnelReceiver(Outer(kProtoIpip, "10.0.0.3", "10.0.0.1"), false)->name, "tunl0");
}

TEST(TunnelReceiver, VxlanByPortAndLocalWireguardOnlyWhenSentByWireguard) {
  Netstack ns;
  Interface vx;
  vx.name = "vxlan.calico";
  vx.kind = "vxlan";
  vx.vxlan = VxlanInfo{.vni = 4096, .local = Ip("10.0.0.1"), .port = 4789};
  ns.AddInterface(vx);
  Interface wg;
  wg.name = "wireguard.cali";
  wg.kind = "wireguard";
  ns.AddInterface(wg);
  ns.Finalize();
  EXPECT_EQ(ns.TunnelReceiver(Outer(kProtoUdp, "10.0.0.2", "10.0.0.1", 4789), false)->name,
            "vxlan.calico");
  // Another local address, or another port: not the VXLAN device's socket.
  EXPECT_EQ(ns.TunnelReceiver(Outer(kProtoUdp, "10.0.0.2", "10.0.0.7", 4789), false), nullptr);
  EXPECT_EQ(ns.TunnelReceiver(Outer(kProtoUdp, "10.0.0.2", "10.0.0.1", 51820), false), nullptr);
  EXPECT_EQ(ns.TunnelReceiver(Outer(kProtoUdp, "10.0.0.2", "10.0.0.1", 51820), true)->name,
            "wireguard.cali");
  EXPECT_EQ(ns.TunnelReceiver(Outer(kProtoTcp, "10.0.0.2", "10.0.0.1", 4789), true), nullptr);
}

}  // namespace
}  // namespace sarena::model
