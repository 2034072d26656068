// Whether a cached neighbour entry still names the device that receives the frame: a static or
// permanent entry (`ip neigh replace IP lladdr MAC nud permanent`, Felix's VXLAN entries, a CNI's
// gateway entry) is never re-resolved, so once the owner of the address gets another MAC (a pod
// recreated behind the same address, a node's NIC replaced) every frame goes to a MAC nobody on
// the link has. The receiving device's eth_type_trans() marks it PACKET_OTHERHOST and ip_rcv()
// drops it (SKB_DROP_REASON_OTHERHOST), silently: no ICMP, no ARP, nothing heals it.
#ifndef LIBSARENA_MODEL_NEIGH_H_
#define LIBSARENA_MODEL_NEIGH_H_

#include <string>

#include "libsarena/model/netstack.h"

namespace sarena::model {

/// How the kernel treats a frame sent through a neighbour entry.
enum class NeighFit : uint8_t {
  kUnknown,        // no lladdr in the entry, no MAC known for the receiver, or the receiver is a
                   // bridge port (the bridge forwards by its fdb, not by the port's own MAC)
  kMatches,        // the entry's lladdr is the receiver's MAC
  kStaleStatic,    // PERMANENT / NOARP entry with another MAC: dropped until someone edits it
  kStaleDynamic,   // learnt entry with another MAC: dropped until the kernel re-resolves it
                   // (REACHABLE ages to STALE after base_reachable_time/2..3/2, 15-45 s by
                   // default; STALE / DELAY / PROBE probe by unicast, fail, then broadcast ARP)
};

/// Whether neighbour entry `n` (state and lladdr as `ip -j neigh` prints them) delivers frames
/// to `receiver`, the device at the other end of the link (a veth's peer, the NIC on the same
/// cable). `detail` is one sentence for a report when the fit is not kMatches / kUnknown:
/// "permanent neighbour entry 10.0.0.5 lladdr 02:..:01 on eth0, but eth0 of pod x has
/// 02:..:02: ...".
struct NeighCheck {
  NeighFit fit = NeighFit::kUnknown;
  std::string detail;
};
NeighCheck CheckNeighborLladdr(const Neighbor& n, const Interface& receiver,
                               absl::string_view receiver_where);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_NEIGH_H_
