// IPv4 interface addresses (rtnetlink RTM_*ADDR). Operations live on nl::Socket (socket.h).
// Source: rtnetlink(7) "RTM_NEWADDR", <linux/if_addr.h>, ip-address(8).
#ifndef LIBSARENA_NETLINK_ADDR_H_
#define LIBSARENA_NETLINK_ADDR_H_

#include <linux/netlink.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "libsarena/net/ip.h"
#include "libsarena/netlink/types.h"

namespace sarena::nl {

/// One IPv4 address on an interface (`ip -4 addr show`).
struct Address {
  int ifindex = 0;                     // ifa_index
  net::Ipv4Prefix prefix;              // IFA_LOCAL (the address) / ifa_prefixlen, host bits kept:
                                       // 10.0.0.5/24 means address 10.0.0.5 in 10.0.0.0/24
  Scope scope = Scope::kUniverse;      // ifa_scope
  std::optional<net::Ipv4> peer;       // IFA_ADDRESS when it differs from IFA_LOCAL (a
                                       // point-to-point peer, `ip addr add A peer P`)
  std::optional<net::Ipv4> broadcast;  // IFA_BROADCAST
  std::string label;                   // IFA_LABEL (the interface name or "name:alias")
  uint32_t flags = 0;                  // IFA_FLAGS / ifa_flags: IFA_F_* bits (0x80 permanent,
                                       // 0x200 noprefixroute, 0x01 secondary...)
};

/// Extra knobs for Socket::AddAddress.
struct AddressOptions {
  Scope scope = Scope::kUniverse;
  std::optional<net::Ipv4> peer;       // point-to-point peer (IFA_ADDRESS)
  std::optional<net::Ipv4> broadcast;  // IFA_BROADCAST
  bool noprefixroute = false;          // IFA_F_NOPREFIXROUTE: no automatic subnet route
  bool replace = false;                // NLM_F_REPLACE instead of NLM_F_EXCL (no kAlreadyExists)
};

/// Decodes one RTM_NEWADDR message (AF_INET only). Errors: kInvalidArgument when malformed or
/// not IPv4.
absl::StatusOr<Address> ParseAddressMessage(const nlmsghdr& nlh);

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_ADDR_H_
