// Query placement: resolving the destination and placing the source, then the first
// step of the walk (Walker::Start: ResolveDestination, then StartFromPod / StartFromNode /
// StartFromIp, EnterFromOutside for a client outside the cluster).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ------------------------------------------------------------------------------------------
// Start.

absl::StatusOr<Next> Walker::Start() {
  const Query& q = query_;
  SARENA_ASSIGN_OR_RETURN(net::Ipv4 dst, ResolveDestination());
  Flight f;
  f.pkt.dst = dst;
  f.pkt.dport = q.dport;
  f.pkt.sport = q.sport;
  f.pkt.proto = q.proto;
  f.pkt.ttl = q.ttl;
  f.pkt.ct_state = CtState::kNew;
  Branch br;
  switch (q.src.kind) {
    case EndpointSpec::Kind::kPod:
      return StartFromPod(std::move(f), std::move(br));
    case EndpointSpec::Kind::kNode: {
      if (!cluster_.FindNode(q.src.name) && !snap_.HasNodeDir(q.src.name)) {
        return absl::NotFoundError(absl::StrCat("unknown source node ", q.src.name));
      }
      return StartFromNode(q.src.name, std::move(f), std::move(br));
    }
    case EndpointSpec::Kind::kService:
      return absl::InvalidArgumentError("a Service cannot be the source of a trace");
    case EndpointSpec::Kind::kIp:
      return StartFromIp(q.src.ip, std::move(f), std::move(br));
  }
  return Done();
}

absl::StatusOr<net::Ipv4> Walker::ResolveDestination() {
  const Query& q = query_;
  switch (q.dst.kind) {
    case EndpointSpec::Kind::kPod: {
      SARENA_ASSIGN_OR_RETURN(const model::Pod* p, topo_.FindPod(q.dst.namespace_, q.dst.name));
      if (!p) {
        return absl::NotFoundError(absl::StrCat("unknown destination pod ", q.dst.namespace_, "/",
                                                q.dst.name, " (not in cluster/pods.json)"));
      }
      if (!p->pod_ip) {
        return absl::InvalidArgumentError(absl::StrCat(
            "destination pod ", p->Key(), " has no IP (status.podIP empty: not running?)"));
      }
      return *p->pod_ip;
    }
    case EndpointSpec::Kind::kNode:
      return NodeDestination(q.dst.name);
    case EndpointSpec::Kind::kService:
      return ServiceDestination();
    case EndpointSpec::Kind::kIp:
      break;
  }
  return q.dst.ip;
}

// A node's address: its Node object's, else (no Node object) its primary interface's, else its
// first global address.
absl::StatusOr<net::Ipv4> Walker::NodeDestination(const std::string& name) {
  const model::Node* n = cluster_.FindNode(name);
  std::optional<net::Ipv4> ip = n ? n->PrimaryIp() : std::nullopt;
  if (!ip && snap_.HasNodeDir(name)) {
    SARENA_ASSIGN_OR_RETURN(Where w, topo_.NodeRef(name));
    if (const Interface* i = topo_.PrimaryInterface(w); i && i->PrimaryAddress()) {
      ip = i->PrimaryAddress()->local;
    }
    // No Node object and no default route (a live collect of a node whose only address
    // is on a host device, e.g. sarena_host): its first global address.
    for (size_t k = 0; !ip && w.ns && k < w.ns->netstack.interfaces().size(); ++k) {
      const Interface& i = w.ns->netstack.interfaces()[k];
      const auto* a = i.loopback ? nullptr : i.PrimaryAddress();
      if (a && a->scope == model::Scope::kUniverse) ip = a->local;
    }
  }
  if (!ip) {
    return absl::NotFoundError(
        absl::StrCat("unknown destination node ", name, " (no address in cluster/nodes.json)"));
  }
  return *ip;
}

// A Service destination is its first cluster IP; the port must be one of its ports.
absl::StatusOr<net::Ipv4> Walker::ServiceDestination() {
  const Query& q = query_;
  const model::Service* s = cluster_.FindService(q.dst.namespace_, q.dst.name);
  if (!s) {
    return absl::NotFoundError(absl::StrCat("unknown Service ", q.dst.namespace_, "/", q.dst.name,
                                            " (not in cluster/services.json)"));
  }
  if (s->headless || s->cluster_ips.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Service ", s->Key(), " is headless (no cluster IP): trace one of its pods instead"));
  }
  if (!s->FindPort(q.dport, q.proto)) {
    std::vector<std::string> ports;
    for (const auto& p : s->ports) {
      ports.push_back(absl::StrCat(p.port, "/", model::ProtoName(p.proto)));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("Service ", s->Key(), " has no port ", q.dport, "/",
                     model::ProtoName(q.proto), " (ports: ", absl::StrJoin(ports, ", "), ")"));
  }
  return s->cluster_ips.front();
}

absl::StatusOr<Next> Walker::StartFromNode(absl::string_view name, Flight f, Branch br) {
  if (!snap_.HasNodeDir(name)) {
    return absl::NotFoundError(absl::StrCat("source node ", name, " has no directory nodes/",
                                            name, " in the snapshot: nothing to trace from"));
  }
  SARENA_ASSIGN_OR_RETURN(Where w, topo_.NodeRef(name));
  client_where_ = w;
  return Then(OriginateStep{w, std::move(f), std::move(br), Prev{}});
}

// A pod source: its podIP from its netns (a hostNetwork pod sends from its node).
absl::StatusOr<Next> Walker::StartFromPod(Flight f, Branch br) {
  const Query& q = query_;
  SARENA_ASSIGN_OR_RETURN(const model::Pod* p, topo_.FindPod(q.src.namespace_, q.src.name));
  if (!p) {
    return absl::NotFoundError(absl::StrCat("unknown source pod ", q.src.namespace_, "/",
                                            q.src.name, " (not in cluster/pods.json)"));
  }
  if (p->node_name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("source pod ", p->Key(), " is not scheduled (spec.nodeName empty)"));
  }
  if (p->host_network) {
    if (p->host_ip) f.pkt.src = *p->host_ip;
    return StartFromNode(p->node_name, std::move(f), std::move(br));
  }
  if (!p->pod_ip) {
    return absl::InvalidArgumentError(
        absl::StrCat("source pod ", p->Key(), " has no IP (status.podIP empty: not running?)"));
  }
  if (!snap_.HasNodeDir(p->node_name)) {
    return absl::NotFoundError(absl::StrCat("node ", p->node_name, " of source pod ", p->Key(),
                                            " has no directory nodes/", p->node_name,
                                            " in the snapshot"));
  }
  f.pkt.src = *p->pod_ip;
  client_packet_ = f.pkt;
  SARENA_ASSIGN_OR_RETURN(Where w, topo_.PodRef(*p));
  client_where_ = w;
  return Then(OriginateStep{w, std::move(f), std::move(br), Prev{}});
}

// An address source: a pod's, a node's (or another namespace of the snapshot that owns it),
// else a client outside the cluster.
absl::StatusOr<Next> Walker::StartFromIp(const net::Ipv4& ip, Flight f, Branch br) {
  if (const model::Pod* p = cluster_.FindPodByIp(ip); p && !p->host_network) {
    if (!snap_.HasNodeDir(p->node_name)) {
      return absl::NotFoundError(absl::StrCat("node ", p->node_name, " of source pod ", p->Key(),
                                              " has no directory in the snapshot"));
    }
    f.pkt.src = ip;
    client_packet_ = f.pkt;
    SARENA_ASSIGN_OR_RETURN(Where w, topo_.PodRef(*p));
    client_where_ = w;
    return Then(OriginateStep{w, std::move(f), std::move(br), Prev{}});
  }
  SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> o, topo_.OwnerOf(ip));
  if (o) {
    if (!o->netns.ns) {
      return absl::NotFoundError(absl::StrCat("source ", ip.to_string(), " is node ",
                                              o->netns.node_name,
                                              " which has no directory in the snapshot"));
    }
    f.pkt.src = ip;
    client_packet_ = f.pkt;
    client_where_ = o->netns;
    return Then(OriginateStep{o->netns, std::move(f), std::move(br), Prev{}});
  }
  return EnterFromOutside(ip, std::move(f), std::move(br));
}

// A client outside the cluster: it enters where the destination lives.
absl::StatusOr<Next> Walker::EnterFromOutside(const net::Ipv4& ip, Flight f, Branch br) {
  const net::Ipv4 dst = f.pkt.dst;
  f.pkt.src = ip;
  client_packet_ = f.pkt;
  client_external_ = true;
  SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> entry, topo_.OwnerOf(dst));
  std::string note;
  if (!entry) {
    SARENA_ASSIGN_OR_RETURN(entry, AssumedEntry(dst, f.pkt.dport, &note));
  }
  if (!entry || !entry->netns.ns) {
    return absl::InvalidArgumentError(absl::StrCat("cannot place source ", ip.to_string(),
                                                   ": it is neither a pod nor a node, and the "
                                                   "destination ",
                                                   dst.to_string(), " is not in the cluster"));
  }
  Hop h;
  h.kind = HopKind::kExternal;
  h.id = absl::StrCat("external:", ip.to_string());
  h.action = HopAction::kSend;
  h.packet = f.pkt;
  Vertex v = AddHop(std::move(h), Prev{});
  if (!note.empty()) Suspect(v, Level::kInfo, "external_source", note);
  return Then(ReceiveStep{entry->netns, entry->ifname, f, br, Prev{v, "underlay"}});
}

// Where traffic from outside for `dst` (no namespace of the snapshot owns it) is assumed to
// enter: a pod's node (the network routes pod addresses), or for a Service address a node
// that a load balancer would pick (externalTrafficPolicy Local: one with a ready endpoint).
// `note` says what was assumed. nullopt: nowhere.
absl::StatusOr<std::optional<DeviceRef>> Walker::AssumedEntry(const net::Ipv4& dst,
                                                                  uint16_t dport,
                                                                  std::string* note) {
  std::optional<DeviceRef> entry;
  if (const model::Pod* p = cluster_.FindPodByIp(dst); p && !p->host_network) {
    SARENA_ASSIGN_OR_RETURN(Where w, topo_.NodeRef(p->node_name));
    const Interface* i = topo_.PrimaryInterface(w);
    entry = DeviceRef{w, i ? i->name : ""};
    *note = absl::StrCat("assumed: the network routes pod ", p->Key(), " to its node ",
                         p->node_name);
    return entry;
  }
  const model::Service* svc = cluster_.FindServiceByIp(dst);
  if (!svc) return entry;
  // A load balancer sends to any node, or (externalTrafficPolicy Local) only to nodes
  // whose health check reports a local endpoint.
  std::vector<std::string> candidates;
  if (svc->external_traffic_policy_local) {
    if (const model::ServicePort* sp = svc->FindPort(dport, query_.proto)) {
      for (const auto& b : cluster_.BackendsFor(*svc, *sp)) {
        if (b.ready && !b.node_name.empty()) candidates.push_back(b.node_name);
      }
    }
  }
  for (const std::string& n : snap_.node_names()) candidates.push_back(n);
  for (const std::string& n : candidates) {
    if (!snap_.HasNodeDir(n)) continue;
    SARENA_ASSIGN_OR_RETURN(Where w, topo_.NodeRef(n));
    if (!w.ns) continue;
    const Interface* i = topo_.PrimaryInterface(w);
    entry = DeviceRef{w, i ? i->name : ""};
    *note = absl::StrCat("assumed: traffic for Service address ", dst.to_string(),
                         " arrives on node ", n);
    break;
  }
  bool cluster_ip =
      std::find(svc->cluster_ips.begin(), svc->cluster_ips.end(), dst) != svc->cluster_ips.end();
  if (cluster_ip) {
    absl::StrAppend(note, "; a cluster IP is normally not routed from outside the cluster");
  }
  return entry;
}

}  // namespace sarena::diag::internal
