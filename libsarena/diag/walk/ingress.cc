// Ingress of a netns: the link (Receive), PREROUTING and the plugin's ingress hook
// (Ingress), input routing (ProcessInput, ContinueInput, InputRoutingDrops), local delivery
// through INPUT (LocalDelivery) and forwarding through FORWARD (Forward, ForwardRouted).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

absl::StatusOr<Next> Walker::Receive(ReceiveStep& s) {
  Hop h;
  h.kind = s.w.in_pod() ? HopKind::kPod : HopKind::kNode;
  h.id = HopId(s.w, s.f.reply);
  h.node = s.w.node_name;
  h.iif = s.iif;
  h.action = HopAction::kForward;
  h.packet = s.f.pkt;
  h.reply = s.f.reply;
  Vertex v = AddHop(std::move(h), s.prev);
  NoteSharedPodIp(s.w, v, s.f);
  if (++s.br.hops > opts_.max_hops) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("more than ", opts_.max_hops,
                      " hops: the path loops or is longer than any real "
                      "path; stopped"));
    return Done();
  }
  HookPacket hp{s.f.pkt, s.f.reply, &s.br.host_flows};
  if (s.w.in_pod()) {
    plugin_.CheckPod(pctx_, s.w, v, hp);
  } else if (s.w.ns && pctx_.FirstInBranch(absl::StrCat("node|", s.w.node_name))) {
    plugin_.CheckNode(pctx_, s.w, v);
  }
  NoteRouter(s.w, v);
  if (s.w.ns == nullptr) {
    if (s.w.in_pod()) {
      Suspect(v, Level::kInfo, "file_missing",
              absl::StrCat("cannot check inside pod ", s.w.pod->Key(), ": directory nodes/",
                           s.w.node_name, "/pods/", s.w.pod->namespace_, "/", s.w.pod->name,
                           " missing"));
      graph_.hop(v).iif = s.iif.empty() ? "eth0" : s.iif;
      if (s.w.pod->pod_ip && s.f.pkt.dst == *s.w.pod->pod_ip) {
        return Then(LocalStep{LocalStep::Stage::kServe, s.w, v, std::move(s.f), std::move(s.br)});
      }
      Suspect(v, Level::kWarning, "route_mismatch",
              absl::StrCat("packet for ", s.f.pkt.dst.to_string(), " delivered to pod ",
                           s.w.pod->Key(), " which does not own that address"));
      return Done();
    }
    Suspect(v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("node ", s.w.node_name,
                         " has no directory in the snapshot: the path "
                         "beyond it cannot be checked",
                         s.f.peer_expectation.empty()
                             ? std::string()
                             : absl::StrCat("; there, ", s.f.peer_expectation)));
    return Done();
  }
  return Then(
      InputStep{InputStep::Stage::kIngress, s.w, v, s.iif, std::move(s.f), std::move(s.br)});
}

absl::StatusOr<Next> Walker::Ingress(InputStep& s) {
  const Netstack& ns = s.w.ns->netstack;
  s.f.pkt.mark = 0;  // skb->mark does not survive crossing into another netns / the wire
  if (Need(s.w, s.v, SnapshotInput::kLinks, "links")) {
    const Interface* in = ns.FindInterface(s.iif);
    if (in == nullptr) {
      Drop(s.v, "link_missing",
           absl::StrCat("ingress device '", s.iif, "' does not exist in ", s.w.ns->id));
      return Done();
    }
    if (!in->admin_up || !in->CanTransmit()) {
      Drop(s.v, "link_down",
           absl::StrCat("ingress device ", s.iif, " is down (", in->operstate,
                        "): nothing is received on it"));
      return Done();
    }
  }
  const Packet& seen = s.f.outer ? *s.f.outer : s.f.pkt;
  std::string key = absl::StrCat(s.w.ns->id, "|", s.iif, "|", Tuple(seen), "|", s.f.reply);
  if (!s.br.visited.insert(key).second) {
    Drop(s.v, "ttl_exceeded",
         absl::StrCat("routing loop: ", Tuple(seen), " enters ", s.w.ns->id, " on ", s.iif,
                      " again; it circulates until its TTL "
                      "expires"));
    return Done();
  }
  if (!s.f.reply) s.br.ct.SawRequest(s.w.ns->id);
  if (!s.f.outer && !s.w.in_pod()) {
    HookPacket hp{s.f.pkt, s.f.reply, &s.br.host_flows};
    PluginAction a = plugin_.OnIngress(pctx_, s.w, s.iif, s.v, hp);
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop,
                            HandlePluginAction(s.w, s.v, a, s.f, s.br, &s.iif));
    if (stop) return std::move(*stop);
  }
  return Then(
      InputStep{InputStep::Stage::kProcessInput, s.w, s.v, s.iif, std::move(s.f), std::move(s.br)});
}

absl::StatusOr<Next> Walker::ProcessInput(InputStep& s) {
  Packet& pkt = s.f.outer ? *s.f.outer : s.f.pkt;
  SetCtState(s.w, &pkt, s.f, s.br);
  if (s.f.reply && !s.f.outer) UnSnat(s.w, &pkt, s.br);
  if (!s.f.outer && !s.f.reply && !s.w.in_pod()) {
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> service,
                            ServiceStage(s.w, s.v, s.iif, s.f, s.br, false));
    if (service) return std::move(*service);
  }
  if (!s.w.in_pod()) {
    NfPass nf = RunHook(s.w, s.v, NfHook::kPrerouting, pkt, s.iif, "", std::nullopt);
    if (nf.dropped) return Done();
    const NfOutcome& o = nf.accepted.front();
    if (o.dnat && !s.f.outer) {
      s.br.ct.AddDnat(s.w.ns->id, pkt, o.packet);
      Suspect(s.v, Level::kInfo, "dnat",
              absl::StrCat("DNAT ", Tuple(pkt), " -> ", Ep(o.packet.dst, o.packet.dport), " by ",
                           o.decided_by ? o.decided_by->ToString() : "netfilter"));
    }
    pkt = o.packet;
    graph_.hop(s.v).packet = s.f.pkt;
  }
  return Then(InputStep{InputStep::Stage::kContinueInput, s.w, s.v, s.iif, std::move(s.f),
                        std::move(s.br)});
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
  const Netstack& ns = s.w.ns->netstack;
  Packet& pkt = s.f.outer ? *s.f.outer : s.f.pkt;
  if (!Need(s.w, s.v, SnapshotInput::kRoutes, "routing")) {
    if (s.w.in_pod() && s.w.pod->pod_ip && pkt.dst == *s.w.pod->pod_ip) {
      return Then(LocalStep{LocalStep::Stage::kServe, s.w, s.v, std::move(s.f), std::move(s.br)});
    }
    Suspect(s.v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat("cannot route ", Tuple(pkt), " in ", s.w.ns->id,
                         ": no routes in the snapshot"));
    return Done();
  }
  Need(s.w, s.v, SnapshotInput::kRules, kRulesAssumed);
  bool sysctls = ns.Has(NetstackSource::kSysctls);
  model::InputResult in = ns.RouteInput(InputFlow(pkt, s.iif));
  bool proven = true;
  for (const auto& [input, what] : InputDropRestsOn(in))
    proven = Need(s.w, s.v, input, what) && proven;
  if (!proven) {
    // The check that drops rests on absent data: it is not made, the packet goes on as routed.
    in.decision = in.route.type == RouteType::kLocal ? InputDecision::kLocal
                                                     : InputDecision::kForward;
  }
  if (InputRoutingDrops(s.w, s.v, s.iif, pkt, in, sysctls)) return Done();
  if (std::optional<std::string> why = LocalRouteDeviceMissing(ns, in)) {
    Drop(s.v, "link_missing", *why);
    return Done();
  }
  if (!sysctls) Need(s.w, s.v, SnapshotInput::kSysctls, "rp_filter and forwarding");
  if (in.decision == InputDecision::kLocal || in.decision == InputDecision::kBroadcast) {
    return Then(InputStep{InputStep::Stage::kLocalDelivery, s.w, s.v, s.iif, std::move(s.f),
                          std::move(s.br)});
  }
  return Then(ForwardStep{s.w, s.v, s.iif, std::move(in.route), std::move(s.f), std::move(s.br)});
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
  Packet& pkt = s.f.outer ? *s.f.outer : s.f.pkt;
  NfPass nf = RunHook(s.w, s.v, NfHook::kInput, pkt, s.iif, "", std::nullopt);
  if (nf.dropped && s.f.outer) TunnelPortBlocked(s.w, s.v, s.f, pkt, "INPUT");
  if (nf.dropped) return Done();
  pkt = nf.accepted.front().packet;
  if (s.f.outer) {
    return Then(
        LocalStep{LocalStep::Stage::kDecapsulate, s.w, s.v, std::move(s.f), std::move(s.br)});
  }
  if (s.f.reply) UnDnat(s.w, &s.f.pkt, s.br);
  return Then(LocalStep{LocalStep::Stage::kServe, s.w, s.v, std::move(s.f), std::move(s.br)});
}

absl::StatusOr<Next> Walker::Forward(ForwardStep& s) {
  Packet& pkt = s.f.outer ? *s.f.outer : s.f.pkt;
  NotePolicyRoute(s.v, s.route);
  if (pkt.ttl <= 1) {
    Drop(s.v, "ttl_exceeded",
         absl::StrCat("TTL ", pkt.ttl, " expires at ", s.w.ns->id, " (forwarding decrements it)"));
    return Done();
  }
  --pkt.ttl;
  // A multipath route: FORWARD, the MSS clamp and the plugin see each next hop's device.
  if (std::optional<Next> fork = ForkNexthops(s.w, s.v, s.route, [&] {
        return Step(ForwardRoutedStep{s.w, s.v, s.iif, s.route, pkt, s.f, s.br});
      })) {
    return std::move(*fork);
  }
  // `pkt` refers into `f`: copy it before `f` is moved (argument evaluation order is
  // unspecified).
  Packet routed = pkt;
  return Then(ForwardRoutedStep{s.w, s.v, s.iif, std::move(s.route), std::move(routed),
                                std::move(s.f), std::move(s.br)});
}

absl::StatusOr<Next> Walker::ForwardRouted(ForwardRoutedStep& s) {
  NfPass nf = RunHook(s.w, s.v, NfHook::kForward, s.pkt, s.iif, s.route.oif, s.route.gateway);
  if (nf.dropped && s.f.outer) TunnelPortBlocked(s.w, s.v, s.f, s.pkt, "FORWARD");
  if (nf.dropped) return Done();
  if (!s.f.outer) ClampMss(s.w, NfHook::kForward, s.pkt, s.iif, s.route.oif, s.f);
  s.pkt = nf.accepted.front().packet;
  if (!s.w.in_pod() && !s.f.outer) {
    HookPacket hp{s.f.pkt, s.f.reply, &s.br.host_flows};
    PluginAction a = plugin_.AfterRoute(pctx_, s.w, s.v, hp, s.route);
    std::string dummy;
    SARENA_ASSIGN_OR_RETURN(std::optional<Next> stop,
                            HandlePluginAction(s.w, s.v, a, s.f, s.br, &dummy));
    if (stop) return std::move(*stop);
  }
  return Then(TransmitStep{s.w, s.v, std::move(s.route), std::move(s.f), std::move(s.br)});
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
