// Start of the walk in a netns: a locally originated packet (Originate) and its output
// routing (OriginateRouted).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ------------------------------------------------------------------------------------------
// Entry points of a netns.

absl::StatusOr<Next> Walker::Originate(OriginateStep& s) {
  Hop h;
  h.kind = s.w.in_pod() ? HopKind::kPod : HopKind::kNode;
  h.id = HopId(s.w, s.f.reply);
  h.node = s.w.node_name;
  h.action = HopAction::kSend;
  h.packet = s.f.pkt;
  h.reply = s.f.reply;
  Vertex v = AddHop(std::move(h), s.prev);
  ++s.br.hops;
  HookPacket hp{s.f.pkt, s.f.reply, &s.br.host_flows};
  if (s.w.in_pod()) {
    plugin_.CheckPod(pctx_, s.w, v, hp);
  } else if (s.w.ns && pctx_.FirstInBranch(absl::StrCat("node|", s.w.node_name))) {
    plugin_.CheckNode(pctx_, s.w, v);
  }
  if (s.w.ns == nullptr) {
    if (!s.w.in_pod()) {
      Suspect(v, Level::kWarning, "snapshot_incomplete",
              absl::StrCat("node ", s.w.node_name,
                           " has no directory in the snapshot: the path "
                           "from it cannot be checked"));
      return Done();
    }
    // A pod without its netns files: assume the usual default route to the node.
    Suspect(v, Level::kInfo, "file_missing",
            absl::StrCat("cannot check the pod's own routes: directory nodes/", s.w.node_name,
                         "/pods/", s.w.pod->namespace_, "/", s.w.pod->name, " missing"));
    SARENA_ASSIGN_OR_RETURN(Where node, topo_.NodeRef(s.w.node_name));
    std::string iif;
    if (node.ns) {
      model::Flow fl;
      fl.dst = *s.w.pod->pod_ip;
      RouteResult r = node.ns->netstack.Lookup(fl);
      if (r.ok()) iif = r.oif;
      if (const Interface* i = node.ns->netstack.FindInterface(iif); i && !i->master.empty()) {
        iif = i->master;
      }
    }
    graph_.hop(v).oif = "eth0";
    s.br.ct.SawRequest(absl::StrCat("pod:", s.w.pod->Key()));
    return Then(ReceiveStep{node, iif, std::move(s.f), std::move(s.br), Prev{v, "veth (assumed)"}});
  }
  if (!s.f.reply) s.br.ct.SawRequest(s.w.ns->id);
  SetCtState(s.w, &s.f.pkt, s.f, s.br);
  return Then(OriginateRoutedStep{s.w, v, std::move(s.f), std::move(s.br), /*service_done=*/false});
}

absl::StatusOr<Next> Walker::OriginateRouted(OriginateRoutedStep& s) {
  const Netstack& ns = s.w.ns->netstack;
  // Without routes nothing is known of where the packet goes, in a pod as on a node.
  if (!Need(s.w, s.v, SnapshotInput::kRoutes, "routing")) {
    Suspect(s.v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("cannot route ", Tuple(s.f.pkt), " from ",
                         s.w.in_pod() ? s.w.ns->id : s.w.node_name, ": no routes in the snapshot"));
    return Done();
  }
  Need(s.w, s.v, SnapshotInput::kRules, kRulesAssumed);
  model::Flow fl;
  fl.dst = s.f.pkt.dst;
  if (!s.f.pkt.src.is_unspecified()) fl.src = s.f.pkt.src;
  fl.mark = s.f.pkt.mark;
  fl.proto = s.f.pkt.proto;
  fl.sport = s.f.pkt.sport;
  fl.dport = s.f.pkt.dport;
  RouteResult r = ns.RouteOutput(fl);
  if (!r.ok()) {
    if (r.error == EINVAL && fl.src && !ns.IsLocalAddress(*fl.src)) {
      // Only the namespace's addresses tell that the source is not one of them.
      if (!Need(s.w, s.v, SnapshotInput::kAddrs, "the source address", Absent::kEnd)) return Done();
      Drop(s.v, "route_mismatch",
           absl::StrCat("source ", fl.src->to_string(), " is not an address of ", s.w.ns->id,
                        ": the kernel refuses to send from it"));
      return Done();
    }
    ReportRouteError(s.v, r, s.f.pkt, "output route to", &s.w);
    return Done();
  }
  // A local route on a device the links lack: the kernel removes a device's local routes with
  // its addresses, so the snapshot is inconsistent — reported, not delivered.
  // (A local result's oif is "lo"; the route's own device is its next hop's.)
  if (r.type == RouteType::kLocal && !r.nexthops.empty() && !r.nexthops[0].dev.empty() &&
      ns.Has(NetstackSource::kLinks) && ns.FindInterface(r.nexthops[0].dev) == nullptr) {
    Drop(s.v, "link_missing",
         absl::StrCat("local route '", r.route != nullptr ? r.route->ToString() : r.ToString(),
                      "' uses device '", r.nexthops[0].dev, "' which does not exist"));
    return Done();
  }
  NotePolicyRoute(s.v, r);
  if (s.f.pkt.src.is_unspecified()) {
    if (!r.prefsrc) {
      if (!Need(s.w, s.v, SnapshotInput::kAddrs, "source address selection", Absent::kEnd)) {
        return Done();
      }
      Drop(s.v, "no_route",
           absl::StrCat("no source address for ", s.f.pkt.dst.to_string(), " via ", r.oif));
      return Done();
    }
    s.f.pkt.src = *r.prefsrc;
    graph_.hop(s.v).packet = s.f.pkt;
  }
  if (!s.f.reply && (!client_packet_ || client_packet_->src.is_unspecified())) {
    client_packet_ = s.f.pkt;
  }
  // A multipath route: the socket's MSS, OUTPUT, the MSS clamp and the plugin see each next
  // hop's device.
  if (std::optional<Next> fork = ForkNexthops(s.w, s.v, r, [&] {
        return Step(OriginateViaStep{s.w, s.v, r, s.f, s.br, s.service_done});
      })) {
    return std::move(*fork);
  }
  return Then(
      OriginateViaStep{s.w, s.v, std::move(r), std::move(s.f), std::move(s.br), s.service_done});
}

absl::StatusOr<Next> Walker::OriginateVia(OriginateViaStep& s) {
  const Netstack& ns = s.w.ns->netstack;
  // The ends' SYNs, from the route the socket uses (before OUTPUT, whose TCPMSS rules may clamp
  // them; a Service's DNAT re-routes the packet, not the socket).
  if (s.f.tcp.active && s.f.reply && !s.f.tcp.self_known) {
    // The server's SYN-ACK: its MSS from its route back to the client; its segments are at most
    // the client's MSS (as received) + 40 (set by StartReply) and its own path MTU.
    s.f.tcp.self = MakeTcpEnd(Who(s.w), s.route, ns.FindInterface(s.route.oif));
    s.f.tcp.self_known = true;
    s.f.tcp.syn = s.f.tcp.self.mss;
    if (s.f.tcp.self.pmtu && s.f.tcp.self.pmtu < s.f.size) s.f.size = s.f.tcp.self.pmtu;
    s.f.tcp.segment = s.f.size;
  } else if (!s.f.tcp.active && s.f.size == 0 && !s.f.reply && query_.size == 0 &&
             s.f.pkt.proto == model::kProtoTcp) {
    // A TCP client: its SYN's MSS; the size of its segments waits for the server's MSS.
    s.f.tcp.active = true;
    s.f.tcp.self = MakeTcpEnd(Who(s.w), s.route, ns.FindInterface(s.route.oif));
    s.f.tcp.self_known = true;
    s.f.tcp.syn = s.f.tcp.self.mss;
    s.f.size = s.f.tcp.self.pmtu;
  }
  // kube-proxy's nat OUTPUT runs for locally generated packets of the node netns.
  if (!s.w.in_pod() && !s.f.reply && !s.service_done) {
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> service,
                            ServiceStage(s.w, s.v, "", s.f, s.br, true));
    if (service) return std::move(*service);
  }
  if (!s.w.in_pod()) {
    NfPass nf = RunHook(s.w, s.v, NfHook::kOutput, s.f.pkt, "", s.route.oif, s.route.gateway);
    if (nf.dropped) return Done();
    ClampMss(s.w, NfHook::kOutput, s.f.pkt, "", s.route.oif, s.f);
    Packet out = nf.accepted.front().packet;
    if (nf.accepted.front().dnat && !(out.dst == s.f.pkt.dst && out.dport == s.f.pkt.dport)) {
      s.br.ct.AddDnat(s.w.ns->id, s.f.pkt, out);
      s.f.pkt = out;
      graph_.hop(s.v).packet = s.f.pkt;
      return Then(OriginateRoutedStep{s.w, s.v, std::move(s.f), std::move(s.br), true});
    }
    s.f.pkt = out;
  }
  if (s.route.type == RouteType::kLocal || s.route.oif == "lo") {
    // Addressed to this netns itself.
    graph_.hop(s.v).oif = "lo";
    if (s.f.reply) UnDnat(s.w, &s.f.pkt, s.br);
    return Then(LocalStep{LocalStep::Stage::kServe, s.w, s.v, std::move(s.f), std::move(s.br)});
  }
  const Interface* out = ns.FindInterface(s.route.oif);
  if (s.f.tcp.active) {
    // Sized above (TCP: the path MTU and the MSS).
  } else if (s.f.size == 0) {
    if (query_.size && !s.f.reply) {
      s.f.size = query_.size;
    } else if (out) {
      s.f.size = out->mtu;
    }
  } else if (s.f.reply && out && out->mtu && s.f.size > out->mtu) {
    s.f.size = out->mtu;  // a TCP server's segments: the client's MSS, capped by its own MTU
  }
  if (!s.f.reply && client_size_ == 0) client_size_ = s.f.size;
  if (!s.w.in_pod()) {
    HookPacket hp{s.f.pkt, s.f.reply, &s.br.host_flows};
    PluginAction a = plugin_.AfterRoute(pctx_, s.w, s.v, hp, s.route);
    std::string dummy;
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop,
                            HandlePluginAction(s.w, s.v, a, s.f, s.br, &dummy));
    if (stop) return std::move(*stop);
  }
  return Then(TransmitStep{s.w, s.v, std::move(s.route), std::move(s.f), std::move(s.br)});
}

}  // namespace sarena::diag::internal
