// IPv4 neighbour (ARP) entries (rtnetlink RTM_*NEIGH). Operations live on nl::Socket.
// Source: rtnetlink(7) "RTM_NEWNEIGH", <linux/neighbour.h>, ip-neighbour(8).
#ifndef LIBSARENA_NETLINK_NEIGH_H_
#define LIBSARENA_NETLINK_NEIGH_H_

#include <linux/netlink.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/types.h"

namespace sarena::nl {

/// One IPv4 neighbour entry (`ip -4 neigh show`).
struct Neighbor {
  int ifindex = 0;                       // ndm_ifindex
  net::Ipv4 ip;                          // NDA_DST
  std::optional<net::Mac> mac;           // NDA_LLADDR (absent for INCOMPLETE/FAILED entries)
  NeighState state = NeighState::kNone;  // ndm_state
  uint8_t flags = 0;                     // ndm_flags: NTF_* (0x08 proxy, 0x80 router, ...)
};

/// Options for Socket::AddNeighbor.
struct NeighborOptions {
  NeighState state = NeighState::kPermanent;
  /// false: NLM_F_EXCL, kAlreadyExists when an entry exists (`ip neigh add`);
  /// true: NLM_F_REPLACE, create or overwrite (`ip neigh replace`).
  bool replace = false;
};

/// Decodes one RTM_NEWNEIGH message (AF_INET only). Errors: kInvalidArgument when malformed
/// or not IPv4.
absl::StatusOr<Neighbor> ParseNeighborMessage(const nlmsghdr& nlh);

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_NEIGH_H_
