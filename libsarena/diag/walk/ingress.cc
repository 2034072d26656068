// Ingress of a netns: the link (Receive), PREROUTING and the plugin's ingress hook
// (Ingress), input routing (ProcessInput, ContinueInput, InputRoutingDrops), local delivery
// through INPUT (LocalDelivery) and forwarding through FORWARD (Forward, ForwardRouted).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

absl::StatusOr<Next> Walker::Receive(ReceiveStep& s) {
  const Where& w = s.w;
  const std::string& iif = s.iif;
  Flight& f = s.f;
  Branch& br = s.br;
  const Prev& prev = s.prev;
  Hop h;
  h.kind = w.in_pod() ? HopKind::kPod : HopKind::kNode;
  h.id = HopId(w, f.reply);
  h.node = w.node_name;
  h.iif = iif;
  h.action = HopAction::kForward;
  h.packet = f.pkt;
  h.reply = f.reply;
  Vertex v = AddHop(std::move(h), prev);
  NoteSharedPodIp(w, v, f);
  if (++br.hops > opts_.max_hops) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("more than ", opts_.max_hops,
                      " hops: the path loops or is longer than any real "
                      "path; stopped"));
    return Done();
  }
  HookPacket hp{f.pkt, f.reply, &br.host_flows};
  if (w.in_pod()) {
    plugin_.CheckPod(pctx_, w, v, hp);
  } else if (w.ns && pctx_.FirstInBranch(absl::StrCat("node|", w.node_name))) {
    plugin_.CheckNode(pctx_, w, v);
  }
  NoteRouter(w, v);
  if (w.ns == nullptr) {
    if (w.in_pod()) {
      Suspect(v, Level::kInfo, "file_missing",
              absl::StrCat("cannot check inside pod ", w.pod->Key(), ": directory nodes/",
                           w.node_name, "/pods/", w.pod->namespace_, "/", w.pod->name, " missing"));
      graph_.hop(v).iif = iif.empty() ? "eth0" : iif;
      if (w.pod->pod_ip && f.pkt.dst == *w.pod->pod_ip) {
        return Then(LocalStep{LocalStep::Stage::kServe, w, v, std::move(f), std::move(br)});
      }
      Suspect(v, Level::kWarning, "route_mismatch",
              absl::StrCat("packet for ", f.pkt.dst.to_string(), " delivered to pod ", w.pod->Key(),
                           " which does not own that address"));
      return Done();
    }
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("node ", w.node_name,
                         " has no directory in the snapshot: the path "
                         "beyond it cannot be checked",
                         f.peer_expectation.empty() ? std::string()
                                                    : absl::StrCat("; there, ", f.peer_expectation)));
    return Done();
  }
  return Then(InputStep{InputStep::Stage::kIngress, w, v, iif, std::move(f), std::move(br)});
}

absl::StatusOr<Next> Walker::Ingress(InputStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  std::string& iif = s.iif;
  Flight& f = s.f;
  Branch& br = s.br;
  const Netstack& ns = w.ns->netstack;
  f.pkt.mark = 0;  // skb->mark does not survive crossing into another netns / the wire
  if (Need(w, v, SnapshotInput::kLinks, "links")) {
    const Interface* in = ns.FindInterface(iif);
    if (in == nullptr) {
      Drop(v, "link_missing",
           absl::StrCat("ingress device '", iif, "' does not exist in ", w.ns->id));
      return Done();
    }
    if (!in->admin_up || !in->CanTransmit()) {
      Drop(v, "link_down",
           absl::StrCat("ingress device ", iif, " is down (", in->operstate,
                        "): nothing is received on it"));
      return Done();
    }
  }
  const Packet& seen = f.outer ? *f.outer : f.pkt;
  std::string key = absl::StrCat(w.ns->id, "|", iif, "|", Tuple(seen), "|", f.reply);
  if (!br.visited.insert(key).second) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("routing loop: ", Tuple(seen), " enters ", w.ns->id, " on ", iif,
                      " again; it circulates until its TTL "
                      "expires"));
    return Done();
  }
  if (!f.reply) br.request_netns.insert(w.ns->id);
  if (!f.outer && !w.in_pod()) {
    HookPacket hp{f.pkt, f.reply, &br.host_flows};
    PluginAction a = plugin_.OnIngress(pctx_, w, iif, v, hp);
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop, HandlePluginAction(w, v, a, f, br, &iif));
    if (stop) return std::move(*stop);
  }
  return Then(InputStep{InputStep::Stage::kProcessInput, w, v, iif, std::move(f), std::move(br)});
}

absl::StatusOr<Next> Walker::ProcessInput(InputStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  const std::string& iif = s.iif;
  Flight& f = s.f;
  Branch& br = s.br;
  Packet& pkt = f.outer ? *f.outer : f.pkt;
  SetCtState(w, &pkt, f, br);
  if (f.reply && !f.outer) UnSnat(w, &pkt, br);
  if (!f.outer && !f.reply && !w.in_pod()) {
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> service, ServiceStage(w, v, iif, f, br, false));
    if (service) return std::move(*service);
  }
  if (!w.in_pod()) {
    NfPass nf = RunHook(w, v, NfHook::kPrerouting, pkt, iif, "", std::nullopt);
    if (nf.dropped) return Done();
    const NfOutcome& o = nf.accepted.front();
    if (o.dnat && !f.outer) {
      br.nat.push_back(NatRecord{w.ns->id, pkt, o.packet, true, false});
      Suspect(v, Level::kInfo, "dnat",
              absl::StrCat("DNAT ", Tuple(pkt), " -> ", Ep(o.packet.dst, o.packet.dport), " by ",
                           o.decided_by ? o.decided_by->ToString() : "netfilter"));
    }
    pkt = o.packet;
    graph_.hop(v).packet = f.pkt;
  }
  return Then(InputStep{InputStep::Stage::kContinueInput, w, v, iif, std::move(f), std::move(br)});
}

namespace {

// The flow input routing looks up for `pkt` entering on `iif`.
model::Flow InputFlow(const Packet& pkt, const std::string& iif) {
  model::Flow fl;
  fl.dst = pkt.dst;
  fl.src = pkt.src;
  fl.iif = iif;
  fl.mark = pkt.mark;
  fl.tos = pkt.tos;
  fl.proto = pkt.proto;
  fl.sport = pkt.sport;
  fl.dport = pkt.dport;
  return fl;
}

// A local route on a device the links lack: the kernel removes a device's local routes with its
// addresses, so the snapshot is inconsistent — reported (link_missing), not delivered. A local
// result's oif is "lo"; the route's own device is its next hop's. nullopt when consistent or
// when ip-link.json is absent (Need reports that).
std::optional<std::string> LocalRouteDeviceMissing(const Netstack& ns,
                                                   const model::InputResult& in) {
  if (in.decision != InputDecision::kLocal || in.route.type != RouteType::kLocal ||
      in.route.nexthops.empty() || in.route.nexthops[0].dev.empty() ||
      !ns.Has(NetstackSource::kLinks) || ns.FindInterface(in.route.nexthops[0].dev) != nullptr) {
    return std::nullopt;
  }
  return absl::StrCat("local route '",
                      in.route.route != nullptr ? in.route.route->ToString() : in.route.ToString(),
                      "' uses device '", in.route.nexthops[0].dev, "' which does not exist");
}

}  // namespace

absl::StatusOr<Next> Walker::ContinueInput(InputStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  const std::string& iif = s.iif;
  Flight& f = s.f;
  Branch& br = s.br;
  const Netstack& ns = w.ns->netstack;
  Packet& pkt = f.outer ? *f.outer : f.pkt;
  if (!Need(w, v, SnapshotInput::kRoutes, "routing")) {
    if (w.in_pod() && w.pod->pod_ip && pkt.dst == *w.pod->pod_ip) {
      return Then(LocalStep{LocalStep::Stage::kServe, w, v, std::move(f), std::move(br)});
    }
    Suspect(
        v, Level::kWarning, "snapshot_incomplete",
        absl::StrCat("cannot route ", Tuple(pkt), " in ", w.ns->id, ": no routes in the snapshot"));
    return Done();
  }
  Need(w, v, SnapshotInput::kRules, kRulesAssumed);
  bool sysctls = ns.Has(NetstackSource::kSysctls);
  model::InputResult in = ns.RouteInput(InputFlow(pkt, iif));
  bool proven = true;
  for (const auto& [input, what] : InputDropRestsOn(in)) proven = Need(w, v, input, what) && proven;
  if (!proven) {
    // The check that drops rests on absent data: it is not made, the packet goes on as routed.
    in.decision = in.route.type == RouteType::kLocal ? InputDecision::kLocal
                                                     : InputDecision::kForward;
  }
  if (InputRoutingDrops(w, v, iif, pkt, in, sysctls)) return Done();
  if (std::optional<std::string> why = LocalRouteDeviceMissing(ns, in)) {
    Drop(v, "link_missing", *why);
    return Done();
  }
  if (!sysctls) Need(w, v, SnapshotInput::kSysctls, "rp_filter and forwarding");
  if (in.decision == InputDecision::kLocal || in.decision == InputDecision::kBroadcast) {
    return Then(
        InputStep{InputStep::Stage::kLocalDelivery, w, v, iif, std::move(f), std::move(br)});
  }
  return Then(ForwardStep{w, v, iif, std::move(in.route), std::move(f), std::move(br)});
}

bool Walker::InputRoutingDrops(const Where& w, Vertex v, const std::string& iif,
                               const Packet& pkt, const model::InputResult& in, bool sysctls) {
  bool forward_unknown =
      in.decision == InputDecision::kDrop && in.drop == InputDrop::kForwardingDisabled && !sysctls;
  if (in.decision != InputDecision::kDrop || forward_unknown) return false;
  switch (in.drop) {
    case InputDrop::kIngressMissing:
      Drop(v, "link_missing", absl::StrCat("ingress device '", iif, "' does not exist"));
      return true;
    case InputDrop::kIngressDown:
      Drop(v, "link_down", absl::StrCat("ingress device ", iif, " is down"));
      return true;
    case InputDrop::kNoRoute:
    case InputDrop::kUnreachable:
    case InputDrop::kBlackhole:
    case InputDrop::kProhibit:
      ReportRouteError(v, in.route, pkt, "no usable route to", &w);
      return true;
    case InputDrop::kForwardingDisabled:
      if (!sysctls) break;  // unknown: reported as "cannot check", walked on
      DropNotForwarded(w, v, iif, pkt, in);
      return true;
    case InputDrop::kRpFilter: {
      // __fib_validate_source: 1 is strict, any other non-zero value loose.
      std::string mode = in.rpf.mode == 1 ? "strict (1)" : absl::StrCat("loose (", in.rpf.mode, ")");
      Drop(v, "rp_filter_drop",
           absl::StrCat("reverse-path filter ", mode, " on ", iif, " (effective max(all, ", iif,
                        ")) drops ", Tuple(pkt), ": ", model::ToString(in.rpf.failure),
                        "; reverse route: ",
                        in.rpf.reverse.ok() ? in.rpf.reverse.ToString() : std::string("none"),
                        in.rpf.detail.empty() ? "" : absl::StrCat(" (", in.rpf.detail, ")")));
      return true;
    }
    case InputDrop::kMartianSource:
      Drop(v, "martian_packet",
           absl::StrCat("martian source: ", Tuple(pkt), " on ", iif, " (", in.detail, ")"));
      return true;
    case InputDrop::kMartianDestination:
      Drop(v, "martian_packet",
           absl::StrCat("martian destination: ", Tuple(pkt), " on ", iif, " (", in.detail, ")"));
      return true;
    case InputDrop::kNone:
      Drop(v, "no_route", absl::StrCat("input routing drops ", Tuple(pkt), ": ", in.detail));
      return true;
  }
  return false;
}

void Walker::DropNotForwarded(const Where& w, Vertex v, const std::string& iif, const Packet& pkt,
                              const model::InputResult& in) {
  if (in.ip_forward_disabled) {
    Drop(v, "ip_forward_disabled",
         absl::StrCat("net.ipv4.ip_forward = 0 on ", w.ns->id, ": ", Tuple(pkt), " entering on ",
                      iif, " is not forwarded to ", in.route.oif));
  } else {
    Drop(v, "iface_forwarding_disabled",
         absl::StrCat("net.ipv4.conf.", iif, ".forwarding = 0: ", Tuple(pkt), " entering on ", iif,
                      " is not forwarded (the kernel checks the INGRESS device) to ",
                      in.route.oif));
  }
}

absl::StatusOr<Next> Walker::LocalDelivery(InputStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  const std::string& iif = s.iif;
  Flight& f = s.f;
  Branch& br = s.br;
  Packet& pkt = f.outer ? *f.outer : f.pkt;
  NfPass nf = RunHook(w, v, NfHook::kInput, pkt, iif, "", std::nullopt);
  if (nf.dropped && f.outer) TunnelPortBlocked(w, v, f, pkt, "INPUT");
  if (nf.dropped) return Done();
  pkt = nf.accepted.front().packet;
  if (f.outer) {
    return Then(LocalStep{LocalStep::Stage::kDecapsulate, w, v, std::move(f), std::move(br)});
  }
  if (f.reply) UnDnat(w, &f.pkt, br);
  return Then(LocalStep{LocalStep::Stage::kServe, w, v, std::move(f), std::move(br)});
}

absl::StatusOr<Next> Walker::Forward(ForwardStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  const std::string& iif = s.iif;
  RouteResult& route = s.route;
  Flight& f = s.f;
  Branch& br = s.br;
  Packet& pkt = f.outer ? *f.outer : f.pkt;
  NotePolicyRoute(v, route);
  if (pkt.ttl <= 1) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("TTL ", pkt.ttl, " expires at ", w.ns->id, " (forwarding decrements it)"));
    return Done();
  }
  --pkt.ttl;
  // A multipath route: FORWARD, the MSS clamp and the plugin see each next hop's device.
  if (std::optional<Next> fork = ForkNexthops(w, v, route, [&] {
        return Step(ForwardRoutedStep{w, v, iif, route, pkt, f, br});
      })) {
    return std::move(*fork);
  }
  // `pkt` refers into `f`: copy it before `f` is moved (argument evaluation order is
  // unspecified).
  Packet routed = pkt;
  return Then(ForwardRoutedStep{w, v, iif, std::move(route), std::move(routed), std::move(f),
                                std::move(br)});
}

absl::StatusOr<Next> Walker::ForwardRouted(ForwardRoutedStep& s) {
  const Where& w = s.w;
  Vertex v = s.v;
  const std::string& iif = s.iif;
  RouteResult& route = s.route;
  Packet& pkt = s.pkt;
  Flight& f = s.f;
  Branch& br = s.br;
  NfPass nf = RunHook(w, v, NfHook::kForward, pkt, iif, route.oif, route.gateway);
  if (nf.dropped && f.outer) TunnelPortBlocked(w, v, f, pkt, "FORWARD");
  if (nf.dropped) return Done();
  if (!f.outer) ClampMss(w, NfHook::kForward, pkt, iif, route.oif, f);
  pkt = nf.accepted.front().packet;
  if (!w.in_pod() && !f.outer) {
    HookPacket hp{f.pkt, f.reply, &br.host_flows};
    PluginAction a = plugin_.AfterRoute(pctx_, w, v, hp, route);
    std::string dummy;
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop, HandlePluginAction(w, v, a, f, br, &dummy));
    if (stop) return std::move(*stop);
  }
  return Then(TransmitStep{w, v, std::move(route), std::move(f), std::move(br)});
}

// A namespace of the snapshot that is not a Kubernetes node (nodes.json lists others): a router
// or another host between the nodes, walked with its own routes, sysctls and netfilter both
// ways. Said once per hop, so the report tells it from a node.
void Walker::NoteRouter(const Where& w, Vertex v) {
  if (w.in_pod() || w.ns == nullptr || cluster_.nodes().empty()) return;
  if (cluster_.FindNode(w.node_name) != nullptr) return;
  InfoOnce(v, absl::StrCat("router|", w.node_name), "router",
           absl::StrCat(w.node_name,
                        " is a namespace of the snapshot that is not a Kubernetes node (a router "
                        "between the nodes): walked with its own routes, sysctls and netfilter"));
}

}  // namespace sarena::diag::internal
