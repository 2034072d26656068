// veth crossing: ARP answered by the peer netns (model::AnswersArp), what the receiving device
// accepts (CrossVeth), and the walk to the veth's peer (VethPeer: pod to node VethToNode, node
// to pod or node VethPeerByIfindex, else VethPeerByAddress).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

bool Walker::CrossVeth(const Where& w, Vertex v, const Interface& oif, const Where& peer,
                       const Interface& pif, const net::Ipv4& nexthop, Flight& f) {
  if (peer.ns == nullptr) return true;
  // Neighbour resolution (not for NOARP devices such as sarena_host, nor for a usable cached
  // entry).
  if (!oif.noarp && w.ns) {
    const model::Neighbor* n = w.ns->netstack.FindNeighbor(nexthop, oif.name);
    bool cached = n && n->Usable();
    std::string why;
    // Whether the peer answers rests on its device (state, NOARP), its addresses, its arp /
    // proxy_arp sysctls and, for proxy_arp, its routes (model::AnswersArp): "nobody answers" is
    // concluded only from all four.
    if (!cached &&
        !model::AnswersArp(peer.ns->netstack, pif, nexthop, f.outer ? f.outer->src : f.pkt.src,
                           &why) &&
        Need(peer, v, SnapshotInput::kLinks, "ARP resolution (the peer's device)") &&
        Need(peer, v, SnapshotInput::kAddrs, "ARP resolution (the peer's addresses)") &&
        Need(peer, v, SnapshotInput::kSysctls, "ARP resolution (the peer's arp sysctls)") &&
        Need(peer, v, SnapshotInput::kRoutes, "ARP resolution (proxy_arp: the peer's routes)")) {
      std::string where_to =
          peer.in_pod() ? absl::StrCat("pod ", peer.pod->Key()) : absl::StrCat(peer.node_name);
      Drop(v, "neighbor_missing",
           absl::StrCat("nothing answers ARP for next hop ", nexthop.to_string(), " on ", oif.name,
                        " (the other end is ", pif.name, " in ", where_to, ": ", why, "), so ",
                        Tuple(f.pkt), " is never sent",
                        n ? absl::StrCat(" (neighbour entry ", n->StateNames(), ")")
                          : std::string()));
      return false;
    }
    // A cached entry is used as is: a static one naming a MAC the peer no longer has is
    // dropped there (model/neigh.h); the finding sits on this hop, which holds the entry. Not
    // into a sarena node: its tc ingress programs take frames before ip_rcv checks the MAC.
    bool bpf_ingress = !peer.in_pod() && peer.node && peer.node->sarena_endpoints.has_value();
    if (cached && !bpf_ingress) {
      model::NeighCheck nc = model::CheckNeighborLladdr(
          *n, pif, peer.in_pod() ? absl::StrCat("pod ", peer.pod->Key()) : peer.node_name);
      if (nc.fit == model::NeighFit::kStaleStatic) {
        Drop(v, "neighbor_stale", absl::StrCat(nc.detail, "; ", Tuple(f.pkt), " is lost"));
        return false;
      }
      if (nc.fit == model::NeighFit::kStaleDynamic) {
        Suspect(v, Level::kWarning, "neighbor_stale", nc.detail);
      }
    }
  }
  // veth_xmit -> __dev_forward_skb: is_skb_forwardable() drops a frame longer than the
  // RECEIVING device's MTU + Ethernet header + VLAN_HLEN, silently (no ICMP, no PMTU signal).
  uint32_t overhead =
      f.outer ? model::TunnelOverheadOf(f.encap_kind).value_or(kIpipOverhead) : 0;
  if (pif.mtu > 0 && pif.mtu + 4 > overhead) {
    auto make = [&]() -> SizeFlag {
      return [this, v, overhead, oname = oif.name, pname = pif.name, omtu = oif.mtu,
              pmtu = pif.mtu](uint32_t size, bool forced, const std::string& tcp) {
      std::string what = overhead ? absl::StrCat(size + overhead, "-byte packets (",
                                                 SizeText(size, tcp), " encapsulated)")
                                  : SizeText(size, tcp);
      Suspect(v, forced ? Level::kFatal : Level::kCritical, "mtu_mismatch",
              absl::StrCat(what, " leave ", oname, " (MTU ", omtu, ") but ", pname,
                           " at the other end of the veth has MTU ", pmtu,
                           ": the veth drops them silently (is_skb_forwardable; no "
                           "fragmentation-needed reaches the sender)"));
        return true;
      };
    };
    if (!CheckSize(v, f, pif.mtu + 4 - overhead, f.outer ? 0 : pif.mtu, make)) return false;
  }
  return true;
}

absl::StatusOr<Next> Walker::VethPeer(LinkStep& s) {
  const Netstack& ns = s.w.ns->netstack;
  // Peer in the same netns (sarena_host <-> sarena_net): printed by name.
  if (!s.oif->link.empty() && !s.oif->link_netnsid) {
    if (const Interface* peer = ns.FindInterface(s.oif->link)) {
      if (!CrossVeth(s.w, s.v, *s.oif, s.w, *peer, s.nexthop, s.f)) return Done();
      return Then(ReceiveStep{s.w, s.oif->link, std::move(s.f), std::move(s.br),
                              Prev{s.v, absl::StrCat("veth ", s.oif->name, " -> ", s.oif->link)}});
    }
  }
  if (s.w.in_pod()) {
    return Then(LinkStep{LinkStep::Stage::kVethToNode, s.w, s.v, s.oif, s.nexthop, std::move(s.f),
                         std::move(s.br)});
  }
  // Node -> pod.
  if (s.oif->link_index) {
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> peer,
                            VethPeerByIfindex(s.w, s.v, *s.oif, s.nexthop, s.f, s.br));
    if (peer) return std::move(*peer);
  }
  return Then(LinkStep{LinkStep::Stage::kVethPeerByAddress, s.w, s.v, s.oif, s.nexthop,
                       std::move(s.f), std::move(s.br)});
}

absl::StatusOr<Next> Walker::VethToNode(LinkStep& s) {
  // Pod -> node: the node-side device is the one with ifindex == our link_index.
  SARENA_ASSIGN_OR_RETURN(Where node, topo_.NodeRef(s.w.node_name));
  std::string iif;
  if (node.ns && s.oif->link_index) {
    if (const Interface* hi = node.ns->netstack.FindInterfaceByIndex(*s.oif->link_index)) {
      iif = hi->name;
      if (hi->master.empty() && !CrossVeth(s.w, s.v, *s.oif, node, *hi, s.nexthop, s.f)) {
        return Done();
      }
      if (!hi->master.empty()) {
        const Interface* br_dev = node.ns->netstack.FindInterface(hi->master);
        if (br_dev && br_dev->kind == "bridge") {
          // Bridged: to the bridge's own address -> L3 on the bridge; to another port's
          // pod -> switched at L2.
          if (!node.ns->netstack.IsLocalAddress(s.nexthop)) {
            return Then(BridgeForwardStep{
                node, hi->name, br_dev, s.nexthop, std::move(s.f), std::move(s.br),
                Prev{s.v, absl::StrCat("veth ", s.oif->name, " -> ", hi->name)}});
          }
        }
        iif = hi->master;
        if (br_dev && br_dev->kind == "bridge") {
          s.f.bridge_in = absl::StrCat(node.ns->id, "|", br_dev->name, "|", hi->name);
          s.f.bridge_in_dst = s.f.pkt.dst;
        }
      }
    }
  }
  if (iif.empty() && node.ns) {
    // No link data: the device the node routes the pod's address through.
    model::Flow fl;
    fl.dst = *s.w.pod->pod_ip;
    RouteResult r = node.ns->netstack.Lookup(fl);
    if (r.ok()) iif = r.oif;
    Suspect(s.v, Level::kInfo, "file_missing",
            absl::StrCat("cannot match ", s.oif->name,
                         " to its node-side peer by ifindex; "
                         "assuming ",
                         iif.empty() ? "?" : iif));
  }
  return Then(ReceiveStep{node, iif, std::move(s.f), std::move(s.br),
                          Prev{s.v, absl::StrCat("veth ", s.oif->name, " -> ", iif)}});
}

absl::StatusOr<std::optional<Next>> Walker::VethPeerByIfindex(const Where& w, Vertex v,
                                                              const Interface& oif,
                                                              const net::Ipv4& nexthop, Flight& f,
                                                              Branch& br) {
  // Fast path: the pod owning the address, when its eth0 is this veth's peer.
  for (const net::Ipv4& ip : {nexthop, f.pkt.dst}) {
    const model::Pod* p = cluster_.FindPodByIp(ip);
    if (!p || p->host_network || p->node_name != w.node_name) continue;
    auto pn = snap_.PodNetns(p->namespace_, p->name, p->node_name);
    if (!pn.ok()) continue;
    const Interface* pi = (*pn)->netstack.FindInterfaceByIndex(*oif.link_index);
    if (!pi || pi->kind != "veth" || (pi->link_index && *pi->link_index != oif.ifindex)) {
      continue;
    }
    SARENA_ASSIGN_OR_RETURN(Where pw, topo_.PodRef(*p));
    if (!CrossVeth(w, v, oif, pw, *pi, nexthop, f)) return Done();
    return Then(ReceiveStep{pw, pi->name, std::move(f), std::move(br),
                            Prev{v, absl::StrCat("veth ", oif.name, " -> ", pi->name)}});
  }
  SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> o, topo_.PodByIfindex(w, *oif.link_index, oif.ifindex));
  if (o) {
    if (const Interface* pi = o->netns.ns->netstack.FindInterface(o->ifname)) {
      if (!CrossVeth(w, v, oif, o->netns, *pi, nexthop, f)) return Done();
    }
    return Then(ReceiveStep{o->netns, o->ifname, std::move(f), std::move(br),
                            Prev{v, absl::StrCat("veth ", oif.name, " -> ", o->ifname)}});
  }
  // A veth cable to another node (nodes simulated as namespaces joined by veths); the next
  // hop must resolve there (CrossVeth).
  SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> peer, topo_.NodeVethPeer(w, oif, nexthop));
  if (!peer) return std::nullopt;
  const Interface* pif = peer->netns.ns->netstack.FindInterface(peer->ifname);
  if (pif && !CrossVeth(w, v, oif, peer->netns, *pif, nexthop, f)) return Done();
  return Then(ReceiveStep{peer->netns, peer->ifname, std::move(f), std::move(br),
                          Prev{v, absl::StrCat("veth ", oif.name, " -> ", peer->ifname, " (",
                                               peer->netns.node_name, ")")}});
}

absl::StatusOr<Next> Walker::VethPeerByAddress(LinkStep& s) {
  const model::Pod* pod = cluster_.FindPodByIp(s.nexthop);
  if (!pod) pod = cluster_.FindPodByIp(s.f.pkt.dst);
  if (pod && !pod->host_network && pod->node_name == s.w.node_name) {
    SARENA_ASSIGN_OR_RETURN(Where pw, topo_.PodRef(*pod));
    return Then(ReceiveStep{pw, "eth0", std::move(s.f), std::move(s.br),
                            Prev{s.v, absl::StrCat("veth ", s.oif->name, " (peer by address)")}});
  }
  // The peer netns is not in the snapshot, but the next hop (or, for a tunnel's outer packet,
  // its destination) is a host of the snapshot: the veth is a cable into an L2 segment the
  // snapshot does not hold (e.g. an underlay bridge namespace); follow the address.
  {
    SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> by_nexthop, topo_.OwnerOf(s.nexthop));
    bool known = by_nexthop.has_value();
    if (!known && s.f.outer) {
      SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> by_outer, topo_.OwnerOf(s.f.outer->dst));
      known = by_outer.has_value();
    }
    if (known) {
      std::string label = absl::StrCat(s.oif->name, " (underlay segment not in the snapshot)");
      return Then(LinkStep{LinkStep::Stage::kUnderlay, s.w, s.v, s.oif, s.nexthop, std::move(s.f),
                           std::move(s.br), label});
    }
  }
  // A kind / k3d node's uplink: eth0 is a veth into the Docker host's bridge network, which is
  // outside the cluster. Leaving through it is leaving the cluster (Underlay -> External).
  SARENA_ASSIGN_OR_RETURN(bool uplink, topo_.IsUplink(s.w, *s.oif));
  if (uplink) {
    // Bound before f is moved into the call (argument evaluation order is unspecified).
    std::string label = absl::StrCat(
        s.oif->name, " (uplink veth)",
        s.nexthop != s.f.pkt.dst ? absl::StrCat(" via ", s.nexthop.to_string()) : std::string());
    return Then(LinkStep{LinkStep::Stage::kUnderlay, s.w, s.v, s.oif, s.nexthop, std::move(s.f),
                         std::move(s.br), label});
  }
  // A veth's peer always exists (the pair dies together): what is missing is its netns in the
  // snapshot.
  Suspect(s.v, Level::kWarning, "snapshot_incomplete",
          absl::StrCat("veth ", s.oif->name,
                       " leads to a network namespace the snapshot does not "
                       "hold (peer ifindex ",
                       s.oif->link_index ? absl::StrCat(*s.oif->link_index) : std::string("?"),
                       "), and ", s.f.pkt.dst.to_string(), " is not a known pod on ", s.w.node_name,
                       ": the path beyond cannot be checked"));
  return Done();
}

}  // namespace sarena::diag::internal
