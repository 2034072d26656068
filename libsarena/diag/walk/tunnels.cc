// Tunnels: decapsulation on the receiving node, encapsulation into ipip / vxlan /
// wireguard and the outer packet's trip (SendOuter), a blocked tunnel port.
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

absl::StatusOr<Next> Walker::Decapsulate(LocalStep& s) {
  const Packet& outer = *s.f.outer;
  const Interface* tun =
      s.w.ns->netstack.TunnelReceiver(outer, /*wireguard=*/s.f.encap_kind == "wireguard");
  if (!tun && !Need(s.w, s.v, SnapshotInput::kLinks, "links")) {
    // No link data: the device's absence is unknown, not proven.
    Suspect(
        s.v, Level::kWarning, "snapshot_incomplete",
        absl::StrCat("cannot check which ", s.f.encap_kind, " device on ", s.w.ns->id, " accepts ",
                     Tuple(outer), " (no link data): the path beyond cannot be checked"));
    return Done();
  }
  if (!tun) {
    Drop(s.v, "tunnel_missing",
         absl::StrCat("no ", s.f.encap_kind, " device on ", s.w.ns->id, " accepts ", Tuple(outer),
                      ": the encapsulated packet is dropped on arrival"));
    return Done();
  }
  if (!tun->admin_up || !tun->CanTransmit()) {
    Drop(s.v, "link_down",
         absl::StrCat("tunnel device ", tun->name, " is down: ", s.f.encap_kind, " packets from ",
                      outer.src.to_string(), " are dropped"));
    return Done();
  }
  Suspect(
      s.v, Level::kInfo, "decap",
      absl::StrCat(s.f.encap_kind, " decapsulation on ", tun->name, " (outer ", Tuple(outer), ")"));
  Packet arrived = *s.f.outer;
  std::optional<uint32_t> vni = s.f.vni;
  s.f.outer.reset();
  s.f.vni.reset();
  s.f.peer_expectation.clear();
  std::string iif = tun->name;
  graph_.hop(s.v).iif = iif;
  // The inner packet enters the stack again, on the tunnel device.
  std::string key = absl::StrCat(s.w.ns->id, "|", iif, "|", Tuple(s.f.pkt), "|", s.f.reply);
  if (!s.br.visited.insert(key).second) {
    Drop(s.v, "ttl_exceeded",
         absl::StrCat("routing loop: ", Tuple(s.f.pkt), " decapsulated on ", iif, " again"));
    return Done();
  }
  HookPacket hp{s.f.pkt, s.f.reply, &s.br.host_flows};
  hp.outer = &arrived;
  hp.vni = vni;
  PluginAction a = plugin_.OnIngress(pctx_, s.w, iif, s.v, hp);
  SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop,
                          HandlePluginAction(s.w, s.v, a, s.f, s.br, &iif));
  if (stop) return std::move(*stop);
  return Then(
      InputStep{InputStep::Stage::kProcessInput, s.w, s.v, iif, std::move(s.f), std::move(s.br)});
}

absl::StatusOr<Next> Walker::Encapsulate(DeviceStep& s) {
  std::optional<EncapPlan> plan;
  if (s.dev->kind == "vxlan" && s.dev->vxlan) {
    plan = VxlanPlan(s.w, s.v, *s.dev, s.route, s.f);
  } else if (s.dev->kind == "wireguard") {
    plan = WireguardPlan(s.v, *s.dev, s.route, s.f);
  } else {
    plan = IpipPlan(s.v, *s.dev, s.route);
  }
  if (!plan) return Done();
  plan->outer.ttl = 64;
  // PMTU discovery vs the tunnel.
  CheckSize(s.v, s.f, s.dev->mtu, s.dev->mtu, [] { return SizeFlag(); });
  if (plan->kind == "vxlan" && s.dev->vxlan) s.f.vni = s.dev->vxlan->vni;
  bool outer_fragments = plan->kind == "vxlan" && s.dev->vxlan && s.dev->vxlan->df == "unset";
  return Then(SendOuterStep{s.w, s.v, s.dev, plan->kind, plan->overhead, plan->outer,
                            plan->outer_src, outer_fragments, std::move(s.f), std::move(s.br),
                            std::move(plan->label)});
}

// VXLAN: the inner next hop's neighbour entry on the device gives the inner MAC, the device's
// fdb entry for that MAC the VTEP (else the device's group / remote); without neighbour data,
// the node owning the next hop.
std::optional<Walker::EncapPlan> Walker::VxlanPlan(const Where& w, Vertex v, const Interface& tun,
                                                   const RouteResult& route, const Flight& f) {
  const Netstack& ns = w.ns->netstack;
  net::Ipv4 nh = route.gateway.value_or(f.pkt.dst);
  std::optional<net::Ipv4> vtep;
  if (Need(w, v, SnapshotInput::kNeighbors, "VXLAN neighbour entries")) {
    const model::Neighbor* n = ns.FindNeighbor(nh, tun.name);
    if (n == nullptr || !n->Usable() || !n->lladdr) {
      Drop(v, "neighbor_missing",
           absl::StrCat("no usable neighbour entry for ", nh.to_string(), " on ", tun.name,
                        n ? absl::StrCat(" (", n->StateNames(), ")") : "",
                        ": the VXLAN device cannot build the inner Ethernet header (the CNI "
                        "programs these entries; ARP does not cross the overlay)"));
      return std::nullopt;
    }
    if (Need(w, v, SnapshotInput::kFdb, "VXLAN forwarding entries (bridge fdb)")) {
      for (const model::FdbEntry* e : ns.FindFdb(tun.name, *n->lladdr)) {
        if (e->dst) {
          vtep = e->dst;
          break;
        }
      }
      if (!vtep && tun.vxlan->group) vtep = tun.vxlan->group;
      if (!vtep) {
        Drop(v, "vxlan_fdb_missing",
             absl::StrCat("no bridge fdb entry on ", tun.name, " for ",
                          net::FormatMac(*n->lladdr), " (", nh.to_string(),
                          "): the VXLAN device does not know which VTEP to send to"));
        return std::nullopt;
      }
    }
  }
  if (!vtep) {
    // No neighbour / fdb data: the node owning the overlay next hop.
    const model::Node* k = cluster_.FindNodeByIp(nh);
    if (k && k->PrimaryIp()) vtep = k->PrimaryIp();
  }
  if (!vtep) {
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("cannot tell which VTEP ", tun.name, " sends ", nh.to_string(), " to"));
    return std::nullopt;
  }
  EncapPlan p;
  p.kind = "vxlan";
  p.overhead = kVxlanOverhead;
  p.outer.dst = *vtep;
  p.outer.proto = model::kProtoUdp;
  p.outer.dport = tun.vxlan->port;
  p.outer.sport = 0;
  p.outer_src = tun.vxlan->local;
  p.label = absl::StrCat("vxlan ", tun.name, " vni ", tun.vxlan->vni);
  return p;
}

// WireGuard: the peer is the node of the destination pod, of the route's gateway, or of the
// podCIDR holding the destination (the peers' endpoints are not in the snapshot).
std::optional<Walker::EncapPlan> Walker::WireguardPlan(Vertex v, const Interface& tun,
                                                       const RouteResult& route,
                                                       const Flight& f) {
  const model::Node* k = nullptr;
  if (const model::Pod* p = cluster_.FindPodByIp(f.pkt.dst)) k = cluster_.FindNode(p->node_name);
  if (!k) k = cluster_.FindNodeByIp(route.gateway.value_or(f.pkt.dst));
  if (!k) k = cluster_.FindNodeByPodCidr(f.pkt.dst);
  if (!k || !k->PrimaryIp()) {
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("cannot tell which WireGuard peer ", tun.name, " sends ",
                         f.pkt.dst.to_string(), " to (peers are not in the snapshot)"));
    return std::nullopt;
  }
  EncapPlan p;
  p.kind = "wireguard";
  p.overhead = kWireguardOverhead;
  p.outer.dst = *k->PrimaryIp();
  p.outer.proto = model::kProtoUdp;
  p.outer.dport = 51820;
  p.label = absl::StrCat("wireguard ", tun.name);
  return p;
}

// IPIP: the device's remote, else the route's gateway (Calico's tunl0 is "remote any").
std::optional<Walker::EncapPlan> Walker::IpipPlan(Vertex v, const Interface& tun,
                                                  const RouteResult& route) {
  EncapPlan p;
  p.kind = "ipip";
  p.overhead = kIpipOverhead;
  if (tun.tunnel && tun.tunnel->remote) {
    p.outer.dst = *tun.tunnel->remote;
  } else if (route.gateway) {
    p.outer.dst = *route.gateway;
  } else {
    Drop(v, "tunnel_missing",
         absl::StrCat(tun.name, " has no remote and route '",
                      route.route ? route.route->ToString() : route.ToString(),
                      "' has no gateway: the ipip outer destination is unknown"));
    return std::nullopt;
  }
  p.outer.proto = model::kProtoIpip;
  if (tun.tunnel) p.outer_src = tun.tunnel->local;
  p.label = absl::StrCat("ipip ", tun.name);
  return p;
}

absl::StatusOr<Next> Walker::SendOuter(SendOuterStep& s) {
  const Netstack& ns = s.w.ns->netstack;
  RouteResult r;
  if (s.via) {
    r = *s.via;
  } else {
    // Without the node's routes the outer packet's way is unknown (never "no route").
    if (!Need(s.w, s.v, SnapshotInput::kRoutes, "the outer packet's route", Absent::kEnd)) {
      return Done();
    }
    model::Flow fl;
    fl.dst = s.outer.dst;
    if (s.outer_src) fl.src = s.outer_src;
    fl.proto = s.outer.proto;
    fl.dport = s.outer.dport;
    r = ns.RouteOutput(fl);
    if (!r.ok()) {
      // EINVAL: the tunnel's local address is not one of the node's, which only ip-addr.json
      // tells.
      if (r.error == EINVAL && s.outer_src &&
          !Need(s.w, s.v, SnapshotInput::kAddrs, "the tunnel's local address", Absent::kEnd)) {
        return Done();
      }
      ReportRouteError(s.v, r, s.outer, absl::StrCat(s.kind, " outer route to"), &s.w);
      return Done();
    }
    // A multipath underlay route (e.g. two uplinks): the outer packet of each flow takes one.
    // Each branch's step is this one with `via` its next hop (SetRoute).
    if (std::optional<Next> fork = ForkNexthops(s.w, s.v, r, [&] { return Step(s); })) {
      return std::move(*fork);
    }
  }
  // No local address on the tunnel and no prefsrc on the route: the kernel picks the outer
  // source from the node's addresses, which only ip-addr.json tells (never 0.0.0.0 by absence).
  if (!s.outer_src && !r.prefsrc &&
      !Need(s.w, s.v, SnapshotInput::kAddrs, "the outer packet's source address",
            Absent::kEnd)) {
    return Done();
  }
  s.outer.src = s.outer_src.value_or(r.prefsrc.value_or(net::Ipv4()));
  const Interface* under = ns.FindInterface(r.oif);
  if (under == nullptr && !Need(s.w, s.v, SnapshotInput::kLinks, "links")) {
    Suspect(s.v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("cannot check the ", s.kind, " outer route's device '", r.oif,
                         "' (no link data): the path beyond cannot be checked"));
    return Done();
  }
  if (under == nullptr) {
    Drop(s.v, "link_missing",
         absl::StrCat("the ", s.kind, " outer route uses device '", r.oif,
                      "' which does not exist"));
    return Done();
  }
  if (under->kind == "ipip" || under->kind == "vxlan" || under->kind == "wireguard") {
    Drop(s.v, "route_mismatch",
         absl::StrCat("the ", s.kind, " outer packet to ", s.outer.dst.to_string(),
                      " is routed into tunnel ", under->name, " again (recursive encapsulation)"));
    return Done();
  }
  if (!under->admin_up || !under->CanTransmit()) {
    Drop(s.v, "link_down",
         absl::StrCat("underlay device ", under->name, " of ", s.tun->name, " is down"));
    return Done();
  }
  // The tunnel device sends the outer packet with ip_local_out: OUTPUT and POSTROUTING see it.
  if (!s.w.in_pod() && !OuterNetfilter(s.w, s.v, *under, r, s.f, &s.outer)) return Done();
  if (under->mtu > s.overhead) {
    auto make = [&]() -> SizeFlag {
      return UnderlayMtuFlag(s.v, s.kind, s.overhead, s.outer_fragments, *s.tun, *under);
    };
    if (!CheckSize(s.v, s.f, under->mtu - s.overhead, 0, make)) return Done();
  }
  CheckNeighbor(s.w, s.v, *under, r.gateway);
  s.outer.ttl = 64;
  s.f.outer = s.outer;
  s.f.encap_kind = s.kind;
  absl::StrAppend(&s.label, ": ", Tuple(s.outer), " via ", under->name);
  return Then(LinkStep{LinkStep::Stage::kUnderlay, s.w, s.v, under, r.gateway.value_or(s.outer.dst),
                       std::move(s.f), std::move(s.br), s.label});
}

// OUTPUT then POSTROUTING of the node for the outer packet (rewritten in place); false when
// netfilter drops it (the tunnel port is named).
bool Walker::OuterNetfilter(const Where& w, Vertex v, const Interface& under, const RouteResult& r,
                            Flight& f, Packet* outer) {
  for (NfHook hook : {NfHook::kOutput, NfHook::kPostrouting}) {
    NfPass nf = RunHook(w, v, hook, *outer, "", under.name, r.gateway);
    if (nf.dropped) {
      f.outer = *outer;
      TunnelPortBlocked(w, v, f, *outer, hook == NfHook::kOutput ? "OUTPUT" : "POSTROUTING");
    }
    if (nf.dropped) return false;
    *outer = nf.accepted.front().packet;
  }
  return true;
}

// The outer packet of a `size`-byte inner packet exceeds the underlay device's MTU: with a
// VXLAN device's df unset (the kernel default) the outer packet is fragmented and arrives
// (WARNING; vxlan_xmit_one's skb_tunnel_check_pmtu only lowers the inner route's PMTU for
// later DF packets); otherwise it is dropped after encapsulation with no PMTU signal to the
// sender (CRITICAL, FATAL for a forced --size).
SizeFlag Walker::UnderlayMtuFlag(Vertex v, const std::string& kind, uint32_t overhead,
                                 bool outer_fragments, const Interface& tun,
                                 const Interface& under) {
  return [this, v, kind, overhead, outer_fragments, tname = tun.name, tmtu = tun.mtu,
          uname = under.name, umtu = under.mtu](uint32_t size, bool forced,
                                                const std::string& tcp) {
    std::string what = tcp.empty() ? absl::StrCat("a ", size, "-byte packet")
                                   : absl::StrCat("a ", size, "-byte TCP segment (", tcp, ")");
    std::string head = absl::StrCat(kind, " on ", tname, " (MTU ", tmtu, "): ", what,
                                    " becomes ", size + overhead, " bytes (+", overhead,
                                    ") but ", uname, " has MTU ", umtu);
    if (outer_fragments) {
      Suspect(v, Level::kWarning, "mtu_mismatch",
              absl::StrCat(head,
                           ": the outer packet is fragmented (no DF) and the inner path MTU "
                           "drops to ",
                           umtu - overhead, " for later packets; ", tname, " MTU should be <= ",
                           umtu - overhead));
      return false;
    }
    Suspect(v, forced ? Level::kFatal : Level::kCritical, "mtu_mismatch",
            absl::StrCat(head,
                         ": full-size packets are dropped after encapsulation (no PMTU signal "
                         "reaches the sender); ",
                         tname, " MTU should be <= ", umtu - overhead));
    return true;
  };
}

void Walker::TunnelPortBlocked(const Where& w, Vertex v, const Flight& f, const Packet& outer,
                               absl::string_view hook) {
  if (outer.proto != model::kProtoUdp) return;
  Suspect(v, Level::kFatal, "tunnel_port_blocked",
          absl::StrCat("netfilter ", hook, " on ", w.node_name, " drops the ",
                       f.encap_kind.empty() ? "tunnel" : f.encap_kind, " packets (UDP ",
                       outer.src.to_string(), " -> ", outer.dst.to_string(), ":", outer.dport,
                       ") that carry ", Tuple(f.pkt), ": the tunnel port ", outer.dport,
                       " must be open on every node and router between the nodes"));
}

}  // namespace sarena::diag::internal
