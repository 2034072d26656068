// Whether a network namespace answers an ARP request (net/ipv4/arp.c arp_process): for one of
// its own addresses under arp_ignore, or for another address by proxy ARP. The walk asks it at
// the far end of a link before a packet can cross (a veth, a cable between nodes).
#ifndef LIBSARENA_MODEL_ARP_H_
#define LIBSARENA_MODEL_ARP_H_

#include <string>

#include "libsarena/model/netstack.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

/// Whether `ns` answers, on its device `dev`, an ARP request for `target` (IPv4, host order as
/// net::Ipv4 holds it) sent by `sender`. Kernel semantics (net/ipv4/arp.c, documented in
/// Documentation/networking/ip-sysctl.rst):
///   - a device with IFF_NOARP drops ARP (arp_rcv);
///   - a local `target` is answered per IN_DEV_ARP_IGNORE = max(conf/all, conf/<dev>)
///     arp_ignore: 0 any local address, 1 only an address configured on `dev`, 2 that and
///     `sender` inside its subnet, 3 and above never;
///   - any other `target` only by proxy ARP (IN_DEV_PROXY_ARP = conf/all OR conf/<dev>
///     proxy_arp), and then only when `ns` would forward a packet from `sender` entering on
///     `dev` to `target` out of another device with a unicast route (arp_fwd_proxy).
/// Sysctls missing from the snapshot count as the kernel default 0. `why`, when not null,
/// gets one sentence saying why the request is not answered (left untouched when it is
/// answered, and for arp_ignore 3 and above, which needs no explanation beyond the value).
bool AnswersArp(const Netstack& ns, const Interface& dev, const net::Ipv4& target,
                const net::Ipv4& sender, std::string* why = nullptr);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_ARP_H_
