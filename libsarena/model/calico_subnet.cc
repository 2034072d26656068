#include "libsarena/model/calico_subnet.h"

#include "absl/strings/str_cat.h"

namespace sarena::model {

namespace {

// The interface address of `stack` equal to `ip` (primary or secondary), or nullptr.
const InterfaceAddress* AddressOf(const Netstack* stack, const net::Ipv4& ip,
                                  const Interface** iface) {
  if (stack == nullptr) return nullptr;
  const Interface* i = stack->InterfaceWithAddress(ip);
  if (i == nullptr) return nullptr;
  for (const InterfaceAddress& a : i->addresses) {
    if (a.local == ip && !a.peer) {
      *iface = i;
      return &a;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<CalicoNodeSubnet> CalicoSubnetOf(const Node* node, const Netstack* stack) {
  if (node == nullptr) return std::nullopt;
  std::optional<net::Ipv4> ip;
  if (node->calico_ipv4_address) {
    ip = node->calico_ipv4_address->address();
  } else if (!node->internal_ips.empty()) {
    ip = node->internal_ips.front();
  }
  if (!ip) return std::nullopt;
  CalicoNodeSubnet out;
  const Interface* iface = nullptr;
  if (const InterfaceAddress* a = AddressOf(stack, *ip, &iface)) {
    out.address = net::Ipv4Prefix(*ip, a->prefixlen);
    out.source = absl::StrCat(iface->name, " ", ip->to_string(), "/", a->prefixlen);
    if (node->calico_ipv4_address &&
        node->calico_ipv4_address->prefix_length() != a->prefixlen) {
      out.stale_annotation = node->calico_ipv4_address;
    }
    return out;
  }
  if (node->calico_ipv4_address) {
    out.address = *node->calico_ipv4_address;
    out.source = absl::StrCat("projectcalico.org/IPv4Address ",
                              node->calico_ipv4_address->address().to_string(), "/",
                              node->calico_ipv4_address->prefix_length());
    return out;
  }
  out.address = net::Ipv4Prefix(*ip, 32);
  out.source = absl::StrCat("InternalIP ", ip->to_string(), " (no prefix length known: /32)");
  return out;
}

std::optional<net::Ipv4> CalicoPeerAddress(const Node& peer) {
  if (peer.calico_ipv4_address) return peer.calico_ipv4_address->address();
  return peer.PrimaryIp();
}

bool CalicoSameSubnet(const CalicoNodeSubnet& local, const net::Ipv4& peer) {
  if (local.address.prefix_length() == 32) return false;
  return net::Contains(local.address, peer);
}

}  // namespace sarena::model
