// Tunnels: decapsulation on the receiving node, encapsulation into ipip / vxlan /
// wireguard and the outer packet's trip (SendOuter), a blocked tunnel port.
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

absl::StatusOr<Next> Walker::Decapsulate(LocalStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  Flight& f = s.f;
  Branch& br = s.br;
  const Netstack& ns = w.ns->netstack;
  const Packet& outer = *f.outer;
  const Interface* tun = nullptr;
  if (outer.proto == model::kProtoIpip) {
    const Interface* fallback = nullptr;
    for (const Interface& i : ns.interfaces()) {
      if (!i.tunnel || (i.kind != "ipip" && i.tunnel->proto != "ipip")) continue;
      if (i.tunnel->local && *i.tunnel->local != outer.dst) continue;
      if (i.tunnel->remote) {
        if (*i.tunnel->remote == outer.src) {
          tun = &i;
          break;
        }
      } else if (!fallback) {
        fallback = &i;
      }
    }
    if (!tun) tun = fallback;
  } else if (outer.proto == model::kProtoUdp) {
    for (const Interface& i : ns.interfaces()) {
      if (!i.vxlan || i.vxlan->port != outer.dport) continue;
      if (i.vxlan->local && *i.vxlan->local != outer.dst) continue;
      tun = &i;
      break;
    }
    if (!tun && f.encap_kind == "wireguard") {
      for (const Interface& i : ns.interfaces()) {
        if (i.kind == "wireguard") {
          tun = &i;
          break;
        }
      }
    }
  }
  if (!tun && !Need(w, v, SnapshotInput::kLinks, "links")) {
    // No link data: the device's absence is unknown, not proven.
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("cannot check which ", f.encap_kind, " device on ", w.ns->id,
                         " accepts ", Tuple(outer),
                         " (no link data): the path beyond cannot be checked"));
    return Done();
  }
  if (!tun) {
    Drop(v, "tunnel_missing",
         absl::StrCat("no ", f.encap_kind, " device on ", w.ns->id, " accepts ", Tuple(outer),
                      ": the encapsulated packet is dropped on arrival"));
    return Done();
  }
  if (!tun->admin_up || !tun->CanTransmit()) {
    Drop(v, "link_down",
         absl::StrCat("tunnel device ", tun->name, " is down: ", f.encap_kind, " packets from ",
                      outer.src.to_string(), " are dropped"));
    return Done();
  }
  Suspect(
      v, Level::kInfo, "decap",
      absl::StrCat(f.encap_kind, " decapsulation on ", tun->name, " (outer ", Tuple(outer), ")"));
  Packet arrived = *f.outer;
  std::optional<uint32_t> vni = f.vni;
  f.outer.reset();
  f.vni.reset();
  f.peer_expectation.clear();
  std::string iif = tun->name;
  graph_.hop(v).iif = iif;
  // The inner packet enters the stack again, on the tunnel device.
  std::string key = absl::StrCat(w.ns->id, "|", iif, "|", Tuple(f.pkt), "|", f.reply);
  if (!br.visited.insert(key).second) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("routing loop: ", Tuple(f.pkt), " decapsulated on ", iif, " again"));
    return Done();
  }
  HookPacket hp{f.pkt, f.reply, &br.host_flows};
  hp.outer = &arrived;
  hp.vni = vni;
  PluginAction a = plugin_.OnIngress(pctx_, w, iif, v, hp);
  SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop, HandlePluginAction(w, v, a, f, br, &iif));
  if (stop) return std::move(*stop);
  return Then(InputStep{InputStep::Stage::kProcessInput, w, v, iif, std::move(f), std::move(br)});
}

absl::StatusOr<Next> Walker::Encapsulate(DeviceStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  const Interface& tun = *s.dev;
  const RouteResult& route = s.route;
  Flight& f = s.f;
  Branch& br = s.br;
  std::optional<EncapPlan> plan;
  if (tun.kind == "vxlan" && tun.vxlan) {
    plan = VxlanPlan(w, v, tun, route, f);
  } else if (tun.kind == "wireguard") {
    plan = WireguardPlan(v, tun, route, f);
  } else {
    plan = IpipPlan(v, tun, route);
  }
  if (!plan) return Done();
  plan->outer.ttl = 64;
  CheckSize(v, f, tun.mtu, tun.mtu, [] { return SizeFlag(); });  // PMTU discovery vs the tunnel
  if (plan->kind == "vxlan" && tun.vxlan) f.vni = tun.vxlan->vni;
  bool outer_fragments = plan->kind == "vxlan" && tun.vxlan && tun.vxlan->df == "unset";
  return Then(SendOuterStep{w, v, &tun, plan->kind, plan->overhead, plan->outer, plan->outer_src,
                            outer_fragments, std::move(f), std::move(br), std::move(plan->label)});
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
                        n ? absl::StrCat(" (", absl::StrJoin(n->state, ","), ")") : "",
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
  const Where& w = s.w;
  Vertex v = s.v;
  const Interface& tun = *s.tun;
  const std::string& kind = s.kind;
  uint32_t overhead = s.overhead;
  Packet& outer = s.outer;
  std::optional<net::Ipv4>& outer_src = s.outer_src;
  bool outer_fragments = s.outer_fragments;
  Flight& f = s.f;
  Branch& br = s.br;
  std::string& label = s.label;
  const RouteResult* via = s.via ? &*s.via : nullptr;
  const Netstack& ns = w.ns->netstack;
  RouteResult r;
  if (via) {
    r = *via;
  } else {
    model::Flow fl;
    fl.dst = outer.dst;
    if (outer_src) fl.src = outer_src;
    fl.proto = outer.proto;
    fl.dport = outer.dport;
    r = ns.RouteOutput(fl);
    if (!r.ok()) {
      // EINVAL: the tunnel's local address is not one of the node's, which only ip-addr.json
      // tells.
      if (r.error == EINVAL && outer_src &&
          !Need(w, v, SnapshotInput::kAddrs, "the tunnel's local address", Absent::kEnd)) {
        return Done();
      }
      ReportRouteError(v, r, outer, absl::StrCat(kind, " outer route to"), &w);
      return Done();
    }
    // A multipath underlay route (e.g. two uplinks): the outer packet of each flow takes one.
    if (std::optional<Next> fork = ForkNexthops(w, v, r, [&] {
          return Step(SendOuterStep{w, v, &tun, kind, overhead, outer, outer_src, outer_fragments,
                                    f, br, label, r});
        })) {
      return std::move(*fork);
    }
  }
  outer.src = outer_src.value_or(r.prefsrc.value_or(net::Ipv4()));
  const Interface* under = ns.FindInterface(r.oif);
  if (under == nullptr && !Need(w, v, SnapshotInput::kLinks, "links")) {
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("cannot check the ", kind, " outer route's device '", r.oif,
                         "' (no link data): the path beyond cannot be checked"));
    return Done();
  }
  if (under == nullptr) {
    Drop(v, "link_missing",
         absl::StrCat("the ", kind, " outer route uses device '", r.oif, "' which does not exist"));
    return Done();
  }
  if (under->kind == "ipip" || under->kind == "vxlan" || under->kind == "wireguard") {
    Drop(v, "route_mismatch",
         absl::StrCat("the ", kind, " outer packet to ", outer.dst.to_string(),
                      " is routed into tunnel ", under->name, " again (recursive encapsulation)"));
    return Done();
  }
  if (!under->admin_up || !under->CanTransmit()) {
    Drop(v, "link_down",
         absl::StrCat("underlay device ", under->name, " of ", tun.name, " is down"));
    return Done();
  }
  // The tunnel device sends the outer packet with ip_local_out: OUTPUT and POSTROUTING see it.
  if (!w.in_pod() && !OuterNetfilter(w, v, *under, r, f, &outer)) return Done();
  if (under->mtu > overhead) {
    auto make = [&]() -> SizeFlag {
      return UnderlayMtuFlag(v, kind, overhead, outer_fragments, tun, *under);
    };
    if (!CheckSize(v, f, under->mtu - overhead, 0, make)) return Done();
  }
  CheckNeighbor(w, v, *under, r.gateway);
  outer.ttl = 64;
  f.outer = outer;
  f.encap_kind = kind;
  absl::StrAppend(&label, ": ", Tuple(outer), " via ", under->name);
  return Then(LinkStep{LinkStep::Stage::kUnderlay, w, v, under, r.gateway.value_or(outer.dst),
                       std::move(f), std::move(br), label});
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
