// Kubernetes Service semantics: ClusterIP / NodePort / external IP matches, endpoints,
// traffic policies (ServiceStage and the steps it runs in order: MatchService, PolicyBackends,
// ServiceTargets, WalkServiceTargets), and why a Service has no endpoints (NoReadyEndpoints,
// ExplainNoEndpoints).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ------------------------------------------------------------------------------------------
// Services.

absl::StatusOr<std::optional<Next>> Walker::ServiceStage(const Where& w, Vertex v,
                                                         const std::string& iif, const Flight& f,
                                                         const Branch& br, bool originated) {
  const Packet& pkt = f.pkt;
  std::optional<ServiceMatch> m =
      model::MatchService(cluster_, w.ns ? &w.ns->netstack : nullptr, pkt);
  if (!m) return std::nullopt;
  const model::Service& svc = *m->svc;
  Hop h;
  h.kind = HopKind::kService;
  h.id = absl::StrCat(w.node_name, "/svc:", svc.Key());
  h.node = w.node_name;
  h.iif = iif;
  h.action = HopAction::kService;
  h.packet = pkt;
  Vertex s = AddHop(h, Prev{v, m->via == ServiceVia::kNodePort ? "nodePort" : "service address"});
  graph_.hop(v).action = originated ? HopAction::kSend : HopAction::kForward;

  if (svc.headless) {
    Drop(s, "service_no_endpoints", absl::StrCat("Service ", svc.Key(), " is headless"));
    return Done();
  }
  if (!m->port) {
    Drop(s, "service_no_endpoints",
         absl::StrCat("Service ", svc.Key(), " has no port ", pkt.dport, "/",
                      model::ProtoName(pkt.proto), " on ", pkt.dst.to_string(),
                      ": nothing translates this destination"));
    return Done();
  }
  std::vector<model::Backend> all = cluster_.BackendsFor(svc, *m->port);
  std::vector<model::Backend> ready;
  for (const auto& b : all) {
    if (b.ready) ready.push_back(b);
  }
  if (ready.empty()) {
    // Without the endpoints file nothing is known of the backends: no finding about them.
    if (!Need(w, s, SnapshotInput::kEndpointSlices, "the Service's endpoints", Absent::kEnd)) {
      return Done();
    }
    NoReadyEndpoints(w, s, iif, *m, pkt, all.size(), originated);
    return Done();
  }
  std::optional<std::vector<model::Backend>> eligible =
      PolicyBackends(w, s, *m, pkt, ready, originated);
  if (!eligible) return Done();
  std::optional<std::vector<ServiceTarget>> targets =
      ServiceTargets(w, s, iif, *m, pkt, *eligible, ready.size(), originated);
  if (!targets) return Done();
  return WalkServiceTargets(w, s, h, iif, std::move(*targets), f, br, originated);
}

void Walker::NoReadyEndpoints(const Where& w, Vertex s, const std::string& iif,
                              const ServiceMatch& m, const Packet& pkt, size_t not_ready,
                              bool originated) {
  const model::Service& svc = *m.svc;
  std::string why;
  if (svc.selector.empty()) {
    why = "it has no selector and no manual endpoints";
  } else {
    std::vector<std::string> sel;
    for (const auto& [k, val] : svc.selector) sel.push_back(absl::StrCat(k, "=", val));
    model::Cluster::SelectedPods n = cluster_.CountSelectedPods(svc);
    why = absl::StrCat("selector ", absl::StrJoin(sel, ","), " matches ", n.pods,
                       " pod(s) in namespace ", svc.namespace_, ", ", n.ready, " ready");
  }
  Drop(s, "service_no_endpoints",
       absl::StrCat("Service ", svc.Key(), " port ", m.port->port, "/",
                    model::ProtoName(m.port->proto), " has no ready endpoints (", why,
                    not_ready == 0 ? "" : absl::StrCat("; ", not_ready, " not ready"),
                    "): connections to ", Ep(pkt.dst, pkt.dport), " fail"));
  // How it fails (refused vs hang) depends on whether a rule rejects the untranslated packet
  // on this path: kube-proxy's REJECT sat only in filter OUTPUT/INPUT for years
  // (kubernetes/kubernetes#60124), so forwarded pod traffic was not rejected.
  if (w.ns && w.ns->netfilter) ExplainNoEndpoints(w, s, iif, pkt, originated);
}

std::optional<std::vector<model::Backend>> Walker::PolicyBackends(
    const Where& w, Vertex s, const ServiceMatch& m, const Packet& pkt,
    const std::vector<model::Backend>& ready, bool originated) {
  const model::Service& svc = *m.svc;
  model::PolicyResult p = model::ApplyTrafficPolicy(
      cluster_, m, pkt, w.node_name, w.ns ? &w.ns->netstack : nullptr, ready, originated);
  switch (p.denied) {
    case model::PolicyResult::Denied::kNone:
      return std::move(p.backends);
    case model::PolicyResult::Denied::kSourceRange: {
      std::vector<std::string> rs;
      for (const auto& r : svc.load_balancer_source_ranges) rs.push_back(r.to_string());
      Drop(s, "source_range_denied",
           absl::StrCat("Service ", svc.Key(), " loadBalancerSourceRanges [",
                        absl::StrJoin(rs, ", "), "] do not allow source ", pkt.src.to_string(),
                        ": kube-proxy drops it"));
      return std::nullopt;
    }
    case model::PolicyResult::Denied::kExternalTrafficPolicyLocal:
      Drop(s, "external_traffic_policy_local_drop",
           absl::StrCat("Service ", svc.Key(),
                        " has externalTrafficPolicy Local and no ready "
                        "endpoint on node ",
                        w.node_name, " (", ready.size(),
                        " elsewhere): external traffic arriving here is dropped"));
      return std::nullopt;
    case model::PolicyResult::Denied::kInternalTrafficPolicyLocal:
      Drop(s, "service_no_endpoints",
           absl::StrCat("Service ", svc.Key(),
                        " has internalTrafficPolicy Local and no ready "
                        "endpoint on node ",
                        w.node_name));
      return std::nullopt;
  }
  return std::nullopt;
}

// The translation kube-proxy installed (netfilter), else the endpoints themselves.
std::optional<std::vector<Walker::ServiceTarget>> Walker::ServiceTargets(
    const Where& w, Vertex s, const std::string& iif, const ServiceMatch& m, const Packet& pkt,
    const std::vector<model::Backend>& eligible, size_t ready, bool originated) {
  std::vector<ServiceTarget> targets;
  if (w.ns && w.ns->netfilter) {
    NfPass nf = RunHook(w, s, originated ? NfHook::kOutput : NfHook::kPrerouting, pkt, iif, "",
                        std::nullopt);
    if (nf.dropped) return std::nullopt;
    for (const NfOutcome& o : nf.accepted) {
      if (!o.dnat) continue;
      bool dup = false;
      for (auto& t : targets) {
        if (t.pkt.dst == o.packet.dst && t.pkt.dport == o.packet.dport) {
          t.probability += o.probability;
          dup = true;
        }
      }
      if (!dup) {
        targets.push_back(ServiceTarget{o.packet, o.probability,
                                        o.decided_by ? o.decided_by->ToString() : "netfilter"});
      }
    }
    if (!targets.empty()) {
      CheckTranslation(s, *m.svc, targets, eligible);
      return targets;
    }
    if (!NoTranslation(w, s, *m.svc, pkt, ready)) return std::nullopt;
  } else {
    Need(w, s, SnapshotInput::kIptables,
         "kube-proxy rules (backends taken from the Service's endpoints)");
  }
  for (const auto& b : eligible) {
    Packet p = pkt;
    p.dst = b.ip;
    p.dport = b.port;
    targets.push_back(ServiceTarget{p, 1.0 / eligible.size(), "endpoints"});
  }
  return targets;
}

// kube-proxy's rules translate to a backend Kubernetes does not list as ready: stale rules.
void Walker::CheckTranslation(Vertex s, const model::Service& svc,
                              const std::vector<ServiceTarget>& targets,
                              const std::vector<model::Backend>& eligible) {
  for (const ServiceTarget& t : targets) {
    bool known = false;
    for (const auto& b : eligible) {
      if (b.ip == t.pkt.dst && b.port == t.pkt.dport) known = true;
    }
    if (!known) {
      Suspect(s, Level::kWarning, "service_backend_mismatch",
              absl::StrCat("kube-proxy translates to ", Ep(t.pkt.dst, t.pkt.dport),
                           " which is not a ready endpoint of ", svc.Key(), " (stale rules)"));
    }
  }
}

// Netfilter translated nothing: with kube-proxy's chains present the Service is not programmed
// (FATAL, false); without them another proxy (IPVS, eBPF) is assumed (INFO, true: the
// endpoints are walked).
bool Walker::NoTranslation(const Where& w, Vertex s, const model::Service& svc, const Packet& pkt,
                           size_t ready) {
  bool kube_proxy = false;
  for (const std::string& c : w.ns->netfilter->Chains(model::NfTable::kNat)) {
    if (absl::StartsWith(c, "KUBE-SVC-") || absl::StartsWith(c, "KUBE-SEP-")) kube_proxy = true;
  }
  if (kube_proxy) {
    Drop(s, "service_not_programmed",
         absl::StrCat("kube-proxy's rules on ", w.node_name, " do not translate ",
                      Ep(pkt.dst, pkt.dport), " (", svc.Key(), " has ", ready,
                      " ready endpoint(s)): the packet keeps the Service address"));
    return false;
  }
  InfoOnce(s, absl::StrCat("nokp|", w.node_name), "service_not_programmed",
           absl::StrCat("no kube-proxy iptables rules on ", w.node_name,
                        " (IPVS or an eBPF service proxy?): backends taken from the "
                        "Service's endpoints"));
  return true;
}

// One branch per backend (at most opts_.max_backends), each DNAT'ed and walked on.
Next Walker::WalkServiceTargets(const Where& w, Vertex s, const Hop& h, const std::string& iif,
                                std::vector<ServiceTarget> targets, const Flight& f,
                                const Branch& br, bool originated) {
  const Packet pkt = f.pkt;
  if (targets.size() > opts_.max_backends) {
    Suspect(s, Level::kInfo, "service_backends",
            absl::StrCat(targets.size(), " backends; walking the first ", opts_.max_backends));
    targets.resize(opts_.max_backends);
  }
  std::vector<Step> branches;
  bool many = targets.size() > 1;
  for (const ServiceTarget& t : targets) {
    // Many backends: a hop per backend after the Service's; one: the Service's hop itself.
    ServiceBranchStep b{.at = s, .pkt = t.pkt};
    if (many) {
      b.clone = h;
      b.clone->id = absl::StrCat(h.id, "@", Ep(t.pkt.dst, t.pkt.dport));
      b.clone->packet = t.pkt;
      b.label = absl::StrFormat("DNAT -> %s (p=%.2f)", Ep(t.pkt.dst, t.pkt.dport), t.probability);
    }
    b.dnat = absl::StrCat("DNAT ", Ep(pkt.dst, pkt.dport), " -> ", Ep(t.pkt.dst, t.pkt.dport),
                          " by ", t.by);
    Branch cb = br;
    cb.ct.AddDnat(w.ns ? w.ns->id : "", pkt, t.pkt);
    Flight cf = f;
    cf.pkt = t.pkt;
    // The branch's hop (`v`) is set when the branch starts (BranchHop).
    b.cont = std::make_shared<Step>(
        originated ? Step(OriginateRoutedStep{w, s, std::move(cf), std::move(cb), true})
                   : Step(InputStep{InputStep::Stage::kContinueInput, w, s, iif, std::move(cf),
                                    std::move(cb)}));
    branches.push_back(std::move(b));
  }
  return Fan(std::move(branches), walk_width_);
}

void Walker::ExplainNoEndpoints(const Where& w, Vertex s, const std::string& iif, const Packet& pkt,
                                bool originated) {
  const model::Netfilter& nf = *w.ns->netfilter;
  model::NfContext ctx;
  ctx.netstack = &w.ns->netstack;
  ctx.iif = iif;
  std::vector<NfOutcome> outs =
      nf.EvaluateHook(originated ? NfHook::kOutput : NfHook::kPrerouting, pkt, ctx);
  const NfOutcome* stop = nullptr;
  for (const NfOutcome& o : outs) {
    if (o.verdict == NfVerdict::kDrop || o.verdict == NfVerdict::kReject) stop = &o;
  }
  std::string route_text;
  if (!stop && !originated) {
    model::Flow fl;
    fl.dst = pkt.dst;
    fl.src = pkt.src;
    fl.iif = iif;
    model::InputResult in = w.ns->netstack.RouteInput(fl);
    if (in.decision == InputDecision::kForward) {
      route_text = in.route.ToString();
      ctx.oif = in.route.oif;
      for (const NfOutcome& o : nf.EvaluateHook(NfHook::kForward, pkt, ctx)) {
        if (o.verdict == NfVerdict::kDrop || o.verdict == NfVerdict::kReject) stop = &o;
      }
    }
  }
  if (stop) {
    Suspect(s, Level::kInfo, "netfilter_drop",
            absl::StrCat("the untranslated packet is ",
                         stop->verdict == NfVerdict::kReject ? "rejected (the client sees "
                                                               "'connection refused')"
                                                             : "dropped (the client hangs)",
                         " by ", stop->decided_by ? stop->decided_by->ToString() : "policy"));
  } else if (!route_text.empty()) {
    Suspect(s, Level::kInfo, "netfilter_drop",
            absl::StrCat("no rule on the ", originated ? "OUTPUT" : "FORWARD",
                         " path rejects the untranslated packet: it follows '", route_text,
                         "' and is lost, so the client hangs instead of being refused"));
  }
}

}  // namespace sarena::diag::internal
