// Start of the walk in a netns: a locally originated packet (Originate) and its output
// routing (OriginateRouted).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ------------------------------------------------------------------------------------------
// Entry points of a netns.

absl::StatusOr<Next> Walker::Originate(OriginateStep& s) {
  const Where& w = s.w;
  Flight& f = s.f;
  Branch& br = s.br;
  const Prev& prev = s.prev;
  Hop h;
  h.kind = w.in_pod() ? HopKind::kPod : HopKind::kNode;
  h.id = HopId(w, f.reply);
  h.node = w.node_name;
  h.action = HopAction::kSend;
  h.packet = f.pkt;
  h.reply = f.reply;
  Vertex v = AddHop(std::move(h), prev);
  ++br.hops;
  HookPacket hp{f.pkt, f.reply, &br.host_flows};
  if (w.in_pod()) {
    plugin_.CheckPod(pctx_, w, v, hp);
  } else if (w.ns && pctx_.FirstInBranch(absl::StrCat("node|", w.node_name))) {
    plugin_.CheckNode(pctx_, w, v);
  }
  if (w.ns == nullptr) {
    if (!w.in_pod()) {
      Suspect(v, Level::kWarning, "snapshot_incomplete",
              absl::StrCat("node ", w.node_name,
                           " has no directory in the snapshot: the path "
                           "from it cannot be checked"));
      return Done();
    }
    // A pod without its netns files: assume the usual default route to the node.
    Suspect(v, Level::kInfo, "file_missing",
            absl::StrCat("cannot check the pod's own routes: directory nodes/", w.node_name,
                         "/pods/", w.pod->namespace_, "/", w.pod->name, " missing"));
    SARENA_ASSIGN_OR_RETURN(Where node, NodeWhere(w.node_name));
    std::string iif;
    if (node.ns) {
      model::Flow fl;
      fl.dst = *w.pod->pod_ip;
      RouteResult r = node.ns->netstack.Lookup(fl);
      if (r.ok()) iif = r.oif;
      if (const Interface* i = node.ns->netstack.FindInterface(iif); i && !i->master.empty()) {
        iif = i->master;
      }
    }
    graph_.hop(v).oif = "eth0";
    br.request_netns.insert(absl::StrCat("pod:", w.pod->Key()));
    return Then(ReceiveStep{node, iif, std::move(f), std::move(br), Prev{v, "veth (assumed)"}});
  }
  if (!f.reply) br.request_netns.insert(w.ns->id);
  SetCtState(w, &f.pkt, f, br);
  return Then(OriginateRoutedStep{w, v, std::move(f), std::move(br), /*service_done=*/false});
}

absl::StatusOr<Next> Walker::OriginateRouted(OriginateRoutedStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  Flight& f = s.f;
  Branch& br = s.br;
  bool service_done = s.service_done;
  const Netstack& ns = w.ns->netstack;
  // Without routes nothing is known of where the packet goes, in a pod as on a node.
  if (!Need(w, v, SnapshotInput::kRoutes, "routing")) {
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("cannot route ", Tuple(f.pkt), " from ",
                         w.in_pod() ? w.ns->id : w.node_name,
                         ": no routes in the snapshot"));
    return Done();
  }
  Need(w, v, SnapshotInput::kRules, kRulesAssumed);
  model::Flow fl;
  fl.dst = f.pkt.dst;
  if (!f.pkt.src.is_unspecified()) fl.src = f.pkt.src;
  fl.mark = f.pkt.mark;
  fl.proto = f.pkt.proto;
  fl.sport = f.pkt.sport;
  fl.dport = f.pkt.dport;
  RouteResult r = ns.RouteOutput(fl);
  if (!r.ok()) {
    if (r.error == EINVAL && fl.src && !ns.IsLocalAddress(*fl.src)) {
      // Only the namespace's addresses tell that the source is not one of them.
      if (!Need(w, v, SnapshotInput::kAddrs, "the source address", Absent::kEnd)) return Done();
      Drop(v, "route_mismatch",
           absl::StrCat("source ", fl.src->to_string(), " is not an address of ", w.ns->id,
                        ": the kernel refuses to send from it"));
      return Done();
    }
    ReportRouteError(v, r, f.pkt, "output route to", &w);
    return Done();
  }
  // A local route on a device the links lack: the kernel removes a device's local routes with
  // its addresses, so the snapshot is inconsistent — reported, not delivered.
  // (A local result's oif is "lo"; the route's own device is its next hop's.)
  if (r.type == RouteType::kLocal && !r.nexthops.empty() && !r.nexthops[0].dev.empty() &&
      ns.Has(NetstackSource::kLinks) && ns.FindInterface(r.nexthops[0].dev) == nullptr) {
    Drop(v, "link_missing",
         absl::StrCat("local route '",
                      r.route != nullptr ? r.route->ToString() : r.ToString(),
                      "' uses device '", r.nexthops[0].dev,
                      "' which does not exist"));
    return Done();
  }
  NotePolicyRoute(v, r);
  if (f.pkt.src.is_unspecified()) {
    if (!r.prefsrc) {
      if (!Need(w, v, SnapshotInput::kAddrs, "source address selection", Absent::kEnd)) {
        return Done();
      }
      Drop(v, "no_route",
           absl::StrCat("no source address for ", f.pkt.dst.to_string(), " via ", r.oif));
      return Done();
    }
    f.pkt.src = *r.prefsrc;
    graph_.hop(v).packet = f.pkt;
  }
  if (!f.reply && (!client_packet_ || client_packet_->src.is_unspecified())) {
    client_packet_ = f.pkt;
  }
  // A multipath route: the socket's MSS, OUTPUT, the MSS clamp and the plugin see each next
  // hop's device.
  if (std::optional<Next> fork = ForkNexthops(w, v, r, [&] {
        return Step(OriginateViaStep{w, v, r, f, br, service_done});
      })) {
    return std::move(*fork);
  }
  return Then(OriginateViaStep{w, v, std::move(r), std::move(f), std::move(br), service_done});
}

absl::StatusOr<Next> Walker::OriginateVia(OriginateViaStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  RouteResult& r = s.route;
  Flight& f = s.f;
  Branch& br = s.br;
  bool service_done = s.service_done;
  const Netstack& ns = w.ns->netstack;
  // The ends' SYNs, from the route the socket uses (before OUTPUT, whose TCPMSS rules may clamp
  // them; a Service's DNAT re-routes the packet, not the socket).
  if (f.tcp.active && f.reply && !f.tcp.self_known) {
    // The server's SYN-ACK: its MSS from its route back to the client; its segments are at most
    // the client's MSS (as received) + 40 (set by StartReply) and its own path MTU.
    f.tcp.self = MakeTcpEnd(Who(w), r, ns.FindInterface(r.oif));
    f.tcp.self_known = true;
    f.tcp.syn = f.tcp.self.mss;
    if (f.tcp.self.pmtu && f.tcp.self.pmtu < f.size) f.size = f.tcp.self.pmtu;
    f.tcp.segment = f.size;
  } else if (!f.tcp.active && f.size == 0 && !f.reply && query_.size == 0 &&
             f.pkt.proto == model::kProtoTcp) {
    // A TCP client: its SYN's MSS; the size of its segments waits for the server's MSS.
    f.tcp.active = true;
    f.tcp.self = MakeTcpEnd(Who(w), r, ns.FindInterface(r.oif));
    f.tcp.self_known = true;
    f.tcp.syn = f.tcp.self.mss;
    f.size = f.tcp.self.pmtu;
  }
  // kube-proxy's nat OUTPUT runs for locally generated packets of the node netns.
  if (!w.in_pod() && !f.reply && !service_done) {
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> service, ServiceStage(w, v, "", f, br, true));
    if (service) return std::move(*service);
  }
  if (!w.in_pod()) {
    NfPass nf = RunHook(w, v, NfHook::kOutput, f.pkt, "", r.oif, r.gateway);
    if (nf.dropped) return Done();
    ClampMss(w, NfHook::kOutput, f.pkt, "", r.oif, f);
    Packet out = nf.accepted.front().packet;
    if (nf.accepted.front().dnat && !(out.dst == f.pkt.dst && out.dport == f.pkt.dport)) {
      br.nat.push_back(NatRecord{w.ns->id, f.pkt, out, true, false});
      f.pkt = out;
      graph_.hop(v).packet = f.pkt;
      return Then(OriginateRoutedStep{w, v, std::move(f), std::move(br), true});
    }
    f.pkt = out;
  }
  if (r.type == RouteType::kLocal || r.oif == "lo") {
    // Addressed to this netns itself.
    graph_.hop(v).oif = "lo";
    if (f.reply) UnDnat(w, &f.pkt, br);
    return Then(LocalStep{LocalStep::Stage::kServe, w, v, std::move(f), std::move(br)});
  }
  const Interface* out = ns.FindInterface(r.oif);
  if (f.tcp.active) {
    // Sized above (TCP: the path MTU and the MSS).
  } else if (f.size == 0) {
    if (query_.size && !f.reply) {
      f.size = query_.size;
    } else if (out) {
      f.size = out->mtu;
    }
  } else if (f.reply && out && out->mtu && f.size > out->mtu) {
    f.size = out->mtu;  // a TCP server's segments: the client's MSS, capped by its own MTU
  }
  if (!f.reply && client_size_ == 0) client_size_ = f.size;
  if (!w.in_pod()) {
    HookPacket hp{f.pkt, f.reply, &br.host_flows};
    PluginAction a = plugin_.AfterRoute(pctx_, w, v, hp, r);
    std::string dummy;
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop, HandlePluginAction(w, v, a, f, br, &dummy));
    if (stop) return std::move(*stop);
  }
  return Then(TransmitStep{w, v, std::move(r), std::move(f), std::move(br)});
}

}  // namespace sarena::diag::internal
