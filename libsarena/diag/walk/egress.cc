// Egress: the egress device (EgressDevice), POSTROUTING (Postrouting) and the device MTU
// (Transmit), where the egress device leads (Dispatch), and the underlay (Underlay: to a node
// UnderlayToNode, a cluster address to a router UnderlayClusterAddress, else out of the cluster).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ------------------------------------------------------------------------------------------
// Egress.

absl::StatusOr<Next> Walker::Transmit(TransmitStep& s) {
  // Callers fork a multipath route right after its lookup; this catches any other way in.
  if (std::optional<Next> fork = ForkNexthops(s.w, s.v, s.route, [&] { return Step(s); })) {
    return std::move(*fork);
  }
  const Interface* oif = EgressDevice(s.w, s.v, s.route, s.f);
  if (oif == nullptr) return Done();
  SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop,
                          Postrouting(s.w, s.v, *oif, s.route, s.f, s.br));
  if (stop) return std::move(*stop);
  Hop& h = graph_.hop(s.v);
  h.oif = oif->name;
  h.packet = s.f.pkt;
  if (!s.w.in_pod()) {
    HookPacket hp{s.f.pkt, s.f.reply, &s.br.host_flows};
    PluginAction a = plugin_.OnEgress(pctx_, s.w, oif->name, s.v, hp);
    std::string dummy;
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop,
                            HandlePluginAction(s.w, s.v, a, s.f, s.br, &dummy));
    if (stop) return std::move(*stop);
  }
  if (oif->mtu > 0) {
    // After a mismatch: what PMTU discovery settles on.
    if (!CheckSize(s.v, s.f, oif->mtu, oif->mtu, [&] {
          return DeviceMtuFlag(s.v, *oif, s.f.reply ? "the server's" : "the sender's");
        })) {
      return Done();
    }
  }
  return Then(DeviceStep{DeviceStep::Stage::kDispatch, s.w, s.v, oif, std::move(s.route),
                         std::move(s.f), std::move(s.br)});
}

const Interface* Walker::EgressDevice(const Where& w, Vertex v, const RouteResult& route,
                                      const Flight& f) {
  const Netstack& ns = w.ns->netstack;
  const Interface* oif = ns.FindInterface(route.oif);
  if (oif == nullptr) {
    if (ns.Has(NetstackSource::kLinks)) {
      Drop(v, "link_missing",
           absl::StrCat("route '", route.ToString(), "' uses device '", route.oif,
                        "' which does not exist"));
    } else {
      Need(w, v, SnapshotInput::kLinks, "links");
      Suspect(
          v, Level::kWarning, "snapshot_incomplete",
          absl::StrCat("cannot follow ", Tuple(f.pkt), " out of ", route.oif, ": no link data"));
    }
    return nullptr;
  }
  if (!oif->admin_up || !oif->CanTransmit()) {
    Drop(v, "link_down",
         absl::StrCat("egress device ", oif->name, " is down (",
                      oif->operstate.empty() ? "no carrier" : oif->operstate, "): ", Tuple(f.pkt),
                      " cannot leave"));
    return nullptr;
  }
  return oif;
}

absl::StatusOr<std::optional<Next>> Walker::Postrouting(const Where& w, Vertex v,
                                                        const Interface& oif,
                                                        const RouteResult& route, Flight& f,
                                                        Branch& br) {
  Packet before = f.pkt;
  bool snat_done = false;
  if (!w.in_pod() && f.outer) {
    if (!OuterPostrouting(w, v, oif, route, f)) return Done();
  } else if (!w.in_pod()) {
    if (!NodePostrouting(w, v, oif, route, f, br, &snat_done)) return Done();
  }
  if (f.reply) UnDnat(w, &f.pkt, br);
  if (w.in_pod()) return std::nullopt;
  HookPacket hp{before, f.reply, &br.host_flows};
  PluginAction a = plugin_.AfterPostrouting(pctx_, w, v, hp, &f.pkt, snat_done,
                                            w.ns->netfilter.has_value(), route);
  if (f.pkt.src != before.src && !snat_done && !f.reply) {
    br.ct.AddSnat(w.ns->id, before, f.pkt);
  }
  std::string dummy;
  return HandlePluginAction(w, v, a, f, br, &dummy);
}

bool Walker::OuterPostrouting(const Where& w, Vertex v, const Interface& oif,
                              const RouteResult& route, Flight& f) {
  NfPass nf = RunHook(w, v, NfHook::kPostrouting, *f.outer, graph_.hop(v).iif, oif.name,
                      route.gateway ? route.gateway : std::optional<net::Ipv4>(f.outer->dst));
  if (nf.dropped) TunnelPortBlocked(w, v, f, *f.outer, "POSTROUTING");
  if (nf.dropped) return false;
  const NfOutcome& o = nf.accepted.front();
  if (o.packet.src != f.outer->src) {
    Suspect(v, Level::kInfo, "snat",
            absl::StrCat("SNAT of the ", f.encap_kind,
                         " outer header: ", f.outer->src.to_string(), " becomes ",
                         o.packet.src.to_string(), " (the receiver sees that source)"));
  }
  *f.outer = o.packet;
  return true;
}

bool Walker::NodePostrouting(const Where& w, Vertex v, const Interface& oif,
                             const RouteResult& route, Flight& f, Branch& br, bool* snat_done) {
  NfPass nf = RunHook(w, v, NfHook::kPostrouting, f.pkt, graph_.hop(v).iif, oif.name,
                      route.gateway ? route.gateway : std::optional<net::Ipv4>(f.pkt.dst));
  if (nf.dropped) return false;
  ClampMss(w, NfHook::kPostrouting, f.pkt, graph_.hop(v).iif, oif.name, f);
  const NfOutcome& o = nf.accepted.front();
  if (o.snat && !f.reply) {
    *snat_done = true;
    br.ct.AddSnat(w.ns->id, f.pkt, o.packet);
    Suspect(v, Level::kInfo, "snat",
            absl::StrCat("SNAT: source ", Ep(f.pkt.src, f.pkt.sport), " becomes ",
                         Ep(o.packet.src, o.packet.sport), " (", Tuple(f.pkt), ") by ",
                         o.decided_by ? o.decided_by->ToString() : "netfilter"));
  }
  f.pkt = o.packet;
  return true;
}

absl::StatusOr<Next> Walker::Dispatch(DeviceStep& s) {
  // A forwarded tunnel packet is routed by its outer header.
  net::Ipv4 nexthop = s.route.gateway.value_or(s.f.outer ? s.f.outer->dst : s.f.pkt.dst);
  // The node routed the packet: a bridge port it came in by matters no more, except to a frame
  // br_netfilter's bridged DNAT sends back into the same bridge (BridgePort).
  std::string bridge_in = std::move(s.f.bridge_in);
  s.f.bridge_in.clear();
  // The device's kind (veth, bridge, tunnel, physical) decides what carries the packet on:
  // ip-addr.json lists the devices but not their kinds, so without ip-link.json it is unknown.
  if (!s.dev->loopback &&
      !Need(s.w, s.v, SnapshotInput::kLinks,
            absl::StrCat("what kind of device ", s.dev->name, " is (veth, bridge, tunnel)"),
            Absent::kEnd)) {
    return Done();
  }
  const std::string& kind = s.dev->kind;
  if (kind == "ipip" || kind == "vxlan" || kind == "wireguard" ||
      (s.dev->tunnel && s.dev->tunnel->proto == "ipip")) {
    return Then(DeviceStep{DeviceStep::Stage::kEncapsulate, s.w, s.v, s.dev, std::move(s.route),
                           std::move(s.f), std::move(s.br)});
  }
  CheckNeighbor(s.w, s.v, *s.dev, s.route.gateway);
  if (kind == "veth") {
    return Then(LinkStep{LinkStep::Stage::kVethPeer, s.w, s.v, s.dev, nexthop, std::move(s.f),
                         std::move(s.br)});
  }
  if (kind == "bridge") {
    s.f.bridge_in = std::move(bridge_in);
    return Then(LinkStep{LinkStep::Stage::kBridgePort, s.w, s.v, s.dev, nexthop, std::move(s.f),
                         std::move(s.br), ""});
  }
  if (s.dev->loopback) {
    return Then(LocalStep{LocalStep::Stage::kServe, s.w, s.v, std::move(s.f), std::move(s.br)});
  }
  return Then(LinkStep{
      LinkStep::Stage::kUnderlay, s.w, s.v, s.dev, nexthop, std::move(s.f), std::move(s.br),
      absl::StrCat(s.dev->name,
                   s.route.gateway ? absl::StrCat(" via ", nexthop.to_string()) : std::string())});
}

absl::StatusOr<Next> Walker::Underlay(LinkStep& s) {
  SARENA_ASSIGN_OR_RETURN(std::optional<Next> to_node,
                          UnderlayToNode(s.w, s.v, *s.oif, s.nexthop, s.f, s.br, s.label));
  if (to_node) return std::move(*to_node);
  const Packet& seen = s.f.outer ? *s.f.outer : s.f.pkt;
  net::Ipv4 target = seen.dst;
  if (!s.f.peer_expectation.empty()) {
    Suspect(s.v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat(target.to_string(), " is not a node of the snapshot: the path beyond ",
                         s.w.node_name, " cannot be checked; there, ", s.f.peer_expectation));
    return Done();
  }
  if (!s.f.outer) {
    SARENA_ASSIGN_OR_RETURN(
        std::optional<Next> cluster,
        UnderlayClusterAddress(s.w, s.v, *s.oif, s.nexthop, s.f, s.br, s.label));
    if (cluster) return std::move(*cluster);
  }
  if (s.f.outer) {
    Drop(s.v, "route_mismatch",
         absl::StrCat("the ", s.f.encap_kind, " outer destination ", target.to_string(),
                      " is not a node of the snapshot"));
    return Done();
  }
  s.br.egress_node = s.w.node_name;
  s.br.egress_iface = s.oif->name;
  if (s.oif->kind == "veth") {
    SARENA_ASSIGN_OR_RETURN(bool exits, NoteVethUplinkExit(s.w, s.v, *s.oif, s.f));
    if (!exits) return Done();
  }
  if (s.f.reply) {
    ExternalReply(target, std::move(s.f), std::move(s.br), Prev{s.v, s.label});
    return Done();
  }
  return Then(ExternalStep{target, std::move(s.f), std::move(s.br), Prev{s.v, s.label}});
}

absl::StatusOr<std::optional<Next>> Walker::UnderlayToNode(const Where& w, Vertex v,
                                                           const Interface& oif,
                                                           const net::Ipv4& nexthop, Flight& f,
                                                           Branch& br, const std::string& label) {
  const Packet& seen = f.outer ? *f.outer : f.pkt;
  net::Ipv4 target = seen.dst;
  // A veth cable to another node: the next hop must resolve at its other end, and the frame
  // must fit the receiving device (CrossVeth).
  if (oif.kind == "veth") {
    SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> peer, topo_.NodeVethPeer(w, oif, nexthop));
    if (peer) {
      const Interface* pif = peer->netns.ns->netstack.FindInterface(peer->ifname);
      if (pif && !CrossVeth(w, v, oif, peer->netns, *pif, nexthop, f)) return Done();
      return Then(ReceiveStep{
          peer->netns, peer->ifname, std::move(f), std::move(br),
          Prev{v, absl::StrCat(label, " -> ", peer->ifname, " (", peer->netns.node_name, ")")}});
    }
  }
  // The next hop is a node?
  SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> o, topo_.OwnerOf(nexthop));
  if (o) {
    return Then(ReceiveStep{o->netns, o->ifname, std::move(f), std::move(br), Prev{v, label}});
  }
  bool via_router = nexthop != target;
  if (via_router) {
    SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> t, topo_.OwnerOf(target));
    if (t) {
      return Then(
          ReceiveStep{t->netns, t->ifname, std::move(f), std::move(br),
                      Prev{v, absl::StrCat(label, " (routed by ", nexthop.to_string(), ")")}});
    }
  }
  SARENA_ASSIGN_OR_RETURN(bool unlisted, VethPeerMayBeUnlisted(w, v, oif));
  if (unlisted) return Done();
  return std::nullopt;
}

absl::StatusOr<std::optional<Next>> Walker::UnderlayClusterAddress(const Where& w, Vertex v,
                                                                   const Interface& oif,
                                                                   const net::Ipv4& nexthop,
                                                                   Flight& f, Branch& br,
                                                                   const std::string& label) {
  net::Ipv4 target = f.pkt.dst;  // the packet is not encapsulated
  bool via_router = nexthop != target;
  if (const model::Pod* pod = cluster_.FindPodByIp(target); pod && !pod->host_network) {
    // kind / k3d: the uplink veth leads to the container host, which routes its own bridge
    // networks only. A pod address handed to it (kindnet's "<podCIDR> via <node>" route
    // missing, so the default route took it) is not routed back into the cluster: the host
    // drops it (ip_error: no route) or sends it out of its own default route.
    bool uplink = false;
    if (oif.kind == "veth") {
      SARENA_ASSIGN_OR_RETURN(uplink, topo_.IsUplink(w, oif));
    }
    if (uplink) {
      const model::Node* owner = cluster_.FindNode(pod->node_name);
      std::string cidr;
      if (owner && !owner->pod_cidrs.empty()) {
        cidr = absl::StrCat(" podCIDR ", owner->pod_cidrs.front().to_string());
      }
      Drop(v, "no_route",
           absl::StrCat(target.to_string(), " (pod ", pod->Key(), " on ", pod->node_name,
                        ") has no route on ", w.node_name, " to ", pod->node_name, "'s",
                        cidr.empty() ? std::string(" pods") : cidr,
                        " (kindnet's \"<podCIDR> via <node address>\" route) and leaves by "
                        "the uplink veth ", oif.name,
                        via_router ? absl::StrCat(" to ", nexthop.to_string()) : std::string(),
                        ", the container host, which does not route pod addresses"));
      return Done();
    }
    // Pod traffic handed to a router that is not a node: works only if the underlay routes
    // pod addresses (cloud VPC routes, BGP to the fabric).
    Suspect(v, Level::kWarning, "route_mismatch",
            absl::StrCat(
                target.to_string(), " (pod ", pod->Key(), " on ", pod->node_name, ") leaves ",
                w.node_name, " via ", oif.name,
                via_router ? absl::StrCat(" to router ", nexthop.to_string()) : std::string(),
                ", which is not a node: reachable only if the network routes pod "
                "addresses"));
    SARENA_ASSIGN_OR_RETURN(Where pw, topo_.NodeRef(pod->node_name));
    const Interface* in = topo_.PrimaryInterface(pw);
    return Then(ReceiveStep{pw, in ? in->name : "", std::move(f), std::move(br),
                            Prev{v, absl::StrCat(label, " (underlay routes pod addresses)")}});
  }
  if (const model::Service* svc = cluster_.FindServiceByIp(target)) {
    Suspect(v, Level::kFatal, "route_mismatch",
            absl::StrCat("Service address ", Ep(target, f.pkt.dport), " (", svc->Key(),
                         ") was not translated on ", w.node_name, " and leaves via ", oif.name,
                         " to ", nexthop.to_string(), ", where nothing answers for it"));
    Hop h;
    h.kind = HopKind::kExternal;
    h.id = absl::StrCat("external:", nexthop.to_string());
    h.action = HopAction::kDrop;
    h.packet = f.pkt;
    h.reply = f.reply;
    AddHop(std::move(h), Prev{v, label});
    return Done();
  }
  return std::nullopt;
}

// Leaving the cluster through a veth uplink (kind, k3d): say so. A pod address leaving
// without SNAT dies: the container host masquerades only its own bridge network's addresses
// (Docker: "-s <network> ! -o <bridge> -j MASQUERADE") and has no route back to pod addresses,
// so the answer cannot return (kindnet's KIND-MASQ-AGENT MASQUERADE is what makes it work).
absl::StatusOr<bool> Walker::NoteVethUplinkExit(const Where& w, Vertex v, const Interface& oif,
                                                const Flight& f) {
  SARENA_ASSIGN_OR_RETURN(bool uplink, topo_.IsUplink(w, oif));
  if (!uplink) return true;
  const Packet& p = f.pkt;
  InfoOnce(v, absl::StrCat("cluster_exit:", oif.name), "cluster_exit",
           absl::StrCat(Tuple(p), " leaves the cluster through ", w.node_name, "'s uplink ",
                        oif.name, ", a veth whose other end (peer ifindex ",
                        oif.link_index ? absl::StrCat(*oif.link_index) : std::string("?"),
                        ") is in the container host's network, outside the snapshot"));
  if (f.reply || f.outer) return true;
  const model::Pod* pod = cluster_.FindPodByIp(p.src);
  if (pod == nullptr || pod->host_network) return true;
  Suspect(v, Level::kFatal, "nat_outgoing_missing",
          absl::StrCat("pod address ", p.src.to_string(), " (", pod->Key(), ") leaves ",
                       w.node_name, " through its uplink veth ", oif.name,
                       " without SNAT (no MASQUERADE in nat POSTROUTING matched; kindnet's is "
                       "the last rule of KIND-MASQ-AGENT): the container host masquerades only "
                       "its own bridge network's addresses and does not route pod addresses "
                       "back to ",
                       w.node_name, ", so the reply cannot return"));
  return false;
}

}  // namespace sarena::diag::internal
