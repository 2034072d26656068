// The tunnel overheads table (libsarena/model/tunnel.h): one row per tunnel kind, and the pod MTUs
// a CNI derives from it on a 1500-byte link (Calico: IPIP 1480, VXLAN 1450, WireGuard 1440).
#include "libsarena/model/tunnel.h"

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace sarena::model
