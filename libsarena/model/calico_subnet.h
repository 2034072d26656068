// Calico's CrossSubnet decision (ipipMode / vxlanMode CrossSubnet): whether a peer node is in
// "this node's subnet", decided as Felix and BIRD decide it, from the node addresses' real
// prefix lengths.
//
// Felix (calc/l3_route_resolver.go, the route's SameSubnet flag) and BIRD's export filter
// (calico/node's bird.cfg template: krt_tunnel unless the next hop is in the node's subnet)
// both test whether the local node's IPv4 address *with its prefix length* contains the peer
// node's address. calico-node writes that address (Node spec.bgp.ipv4Address and the Kubernetes
// annotation projectcalico.org/IPv4Address) from the interface it autodetects, prefix length
// included — so a node whose address is a /32 (clouds that hand out /32 leases, routed
// underlays) has no other node in its subnet: every peer is "another subnet" and is
// encapsulated, whatever the operator thinks the subnet is.
#ifndef LIBSARENA_MODEL_CALICO_SUBNET_H_
#define LIBSARENA_MODEL_CALICO_SUBNET_H_

#include <optional>
#include <string>

#include "libsarena/model/k8s.h"
#include "libsarena/model/netstack.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

/// The subnet a node's CrossSubnet test uses, and where it came from.
struct CalicoNodeSubnet {
  /// The node's address with the prefix length that decides (not canonical: address() is the
  /// node's own address, prefix_length() the mask).
  net::Ipv4Prefix address;
  /// Human-readable origin: "projectcalico.org/IPv4Address 192.168.93.1/24" or
  /// "eth0 192.168.93.1/32".
  std::string source;
  /// Set when the annotation and the interface holding the same address disagree on the prefix
  /// length: the annotation as written (the interface's real prefix length is in `address`).
  std::optional<net::Ipv4Prefix> stale_annotation;
};

/// The subnet `node` (its Kubernetes Node object; may be null) tests peers against, on the
/// netstack `stack` of that node (may be null: snapshot without the node's namespace).
///
/// Order: the interface address that holds the node's Calico address (or, without the
/// annotation, its first InternalIP) with that address's real prefix length from `ip -j addr`
/// — calico-node rewrites the annotation from the interface on every start, and a /32 there
/// makes every peer another subnet; else the annotation's own prefix length; else the
/// InternalIP alone as a /32. nullopt when the node has no address at all.
std::optional<CalicoNodeSubnet> CalicoSubnetOf(const Node* node, const Netstack* stack);

/// The address a peer node is known by for the CrossSubnet test: its Calico IPv4Address, else
/// its first InternalIP / ExternalIP (Node::PrimaryIp). nullopt without either.
std::optional<net::Ipv4> CalicoPeerAddress(const Node& peer);

/// Whether `peer` lies in `local`'s subnet (net::Contains on the prefix with its length; a /32
/// contains only the node itself, so no peer is ever in it).
bool CalicoSameSubnet(const CalicoNodeSubnet& local, const net::Ipv4& peer);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_CALICO_SUBNET_H_
