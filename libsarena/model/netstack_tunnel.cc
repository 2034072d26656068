// Netstack::TunnelReceiver: which tunnel device of a netns takes in an encapsulated packet
// (the receive side of ipip, vxlan and wireguard; netstack.h says what the kernel does).
#include "libsarena/model/netstack.h"
#include "libsarena/model/packet.h"

namespace sarena::model {

namespace {

bool IsIpip(const Interface& i) {
  return i.tunnel && (i.kind == "ipip" || i.tunnel->proto == "ipip");
}

}  // namespace

const Interface* Netstack::TunnelReceiver(const Packet& outer, bool wireguard) const {
  if (outer.proto == kProtoIpip) {
    // ip_tunnel_lookup: a device for this sender, else the wildcard ("remote any") device.
    const Interface* wildcard = nullptr;
    for (const Interface& i : interfaces_) {
      if (!IsIpip(i)) continue;
      if (i.tunnel->local && *i.tunnel->local != outer.dst) continue;
      if (!i.tunnel->remote) {
        if (!wildcard) wildcard = &i;
      } else if (*i.tunnel->remote == outer.src) {
        return &i;
      }
    }
    return wildcard;
  }
  if (outer.proto != kProtoUdp) return nullptr;
  for (const Interface& i : interfaces_) {
    if (!i.vxlan || i.vxlan->port != outer.dport) continue;
    if (i.vxlan->local && *i.vxlan->local != outer.dst) continue;
    return &i;
  }
  if (!wireguard) return nullptr;
  for (const Interface& i : interfaces_) {
    if (i.kind == "wireguard") return &i;
  }
  return nullptr;
}

}  // namespace sarena::model
