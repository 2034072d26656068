// Routing helpers: a down device behind a failed lookup, policy-routing notes, route
// errors, the gateway's neighbour entry.
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// ------------------------------------------------------------------------------------------
// Routing helpers.

// A device that is down and would carry `dst`: the kernel flushes the routes of a device that
// goes down, so the lookup fails (or falls to a wider route) and the real cause is the link.
const Interface* Walker::DownDeviceFor(const Where& w, const net::Ipv4& dst) {
  if (w.ns == nullptr) return nullptr;
  const Netstack& ns = w.ns->netstack;
  auto down = [](const Interface* i) {
    return i && !i->loopback && (!i->admin_up || !i->CanTransmit());
  };
  for (const Interface& i : ns.interfaces()) {
    if (!down(&i)) continue;
    for (const auto& a : i.addresses) {
      if (a.prefixlen < 32 && net::Contains(a.Subnet(), dst)) return &i;
    }
  }
  // Routes still listed through a down device (no carrier keeps them, flagged linkdown): the
  // most specific one covering dst.
  const Interface* best = nullptr;
  int best_len = -1;
  for (const model::Route& r : ns.routes()) {
    if (r.type != RouteType::kUnicast || !net::Contains(r.dst, dst)) continue;
    for (const model::Nexthop& nh : r.nexthops) {
      const Interface* i = ns.FindInterface(nh.dev);
      if (down(i) && r.dst.prefix_length() > best_len) {
        best = i;
        best_len = r.dst.prefix_length();
      }
    }
  }
  if (best) return best;
  if (w.in_pod()) {
    for (const Interface& i : ns.interfaces()) {
      if (down(&i) && i.kind == "veth") return &i;
    }
    return nullptr;
  }
  const model::Pod* pod = cluster_.FindPodByIp(dst);
  if (pod && !pod->host_network && pod->node_name == w.node_name) {
    auto pn = snap_.PodNetns(pod->namespace_, pod->name, pod->node_name);
    if (pn.ok()) {
      for (const Interface& pi : (*pn)->netstack.interfaces()) {
        if (pi.kind != "veth" || !pi.link_index) continue;
        const Interface* host = ns.FindInterfaceByIndex(*pi.link_index);
        if (down(host)) return host;
        if (down(&pi)) return &pi;  // the pod side is down: no carrier on the host side either
      }
    }
  }
  return nullptr;
}

void Walker::NotePolicyRoute(Vertex v, const RouteResult& r) {
  const model::Rule* rule = r.rule;
  if (rule == nullptr) return;
  bool selector = rule->src || rule->dst || !rule->iif.empty() || !rule->oif.empty() ||
                  rule->fwmark || rule->tos || rule->ipproto || rule->sport_start ||
                  rule->dport_start || rule->invert || rule->l3mdev;
  bool standard_table = rule->table == model::kTableLocal || rule->table == model::kTableMain ||
                        rule->table == model::kTableDefault;
  if (!selector && standard_table) return;
  Suspect(v, Level::kInfo, "policy_route_unexpected",
          absl::StrCat("the route was chosen by policy rule '", rule->ToString(), "' (table ",
                       model::TableName(r.table), "): ", r.ToString()));
}

void Walker::ReportRouteError(Vertex v, const RouteResult& r, const Packet& p,
                              absl::string_view what, const Where* w) {
  // A failed lookup proves that no route exists only with the namespace's own rules: a policy
  // rule the snapshot lacks could route the packet (snapshot_input.h).
  if (w && w->ns && !Need(*w, v, SnapshotInput::kRules, kRulesAssumed, Absent::kEnd)) return;
  if (w) {
    const Interface* d = DownDeviceFor(*w, p.dst);
    if (d == nullptr && !w->in_pod() && !r.route && r.error == ENETUNREACH) {
      // No table routes dst at all and the node's primary (underlay) device is down: its routes
      // (remote pod blocks, the default route) went with it when it went down.
      const Interface* primary = topo_.PrimaryInterface(*w);
      if (primary && !primary->loopback && (!primary->admin_up || !primary->CanTransmit())) {
        d = primary;
      }
    }
    if (d != nullptr) {
      Drop(v, "link_down",
           absl::StrCat(d->name, " is down (", d->operstate.empty() ? "no carrier" : d->operstate,
                        "): the kernel dropped its routes, so ", what, " ", p.dst.to_string(),
                        " fails (", r.ok() ? r.ToString() : std::string("no route"), ")"));
      return;
    }
  }
  std::string how;
  switch (r.type) {
    case RouteType::kBlackhole:
      how = "blackhole";
      break;
    case RouteType::kUnreachable:
      how = "unreachable";
      break;
    case RouteType::kProhibit:
      how = "prohibit";
      break;
    default:
      how = r.error == ENETUNREACH ? "no route" : "route error";
  }
  std::string by;
  if (r.route) {
    by = absl::StrCat(": ", how, " route '", r.route->ToString(), "'");
  } else if (r.rule) {
    by = absl::StrCat(": rule '", r.rule->ToString(), "'");
  } else {
    by = absl::StrCat(": ", how, " (no table has a route for ", p.dst.to_string(), ")");
  }
  Drop(v, "no_route", absl::StrCat(what, " ", p.dst.to_string(), by));
  if (w && w->ns && !w->in_pod()) {
    HookPacket hp{p, graph_.hop(v).reply, nullptr};
    plugin_.OnRouteFailure(pctx_, *w, v, hp, r);
  }
}

void Walker::CheckNeighbor(const Where& w, Vertex v, const Interface& dev,
                           const std::optional<net::Ipv4>& gateway) {
  if (!gateway || dev.noarp || dev.loopback) return;
  if (!Need(w, v, SnapshotInput::kNeighbors, "neighbour entries")) return;
  const model::Neighbor* n = w.ns->netstack.FindNeighbor(*gateway, dev.name);
  if (n == nullptr) {
    if (w.in_pod()) return;  // a pod's gateway is resolved by ARP / proxy ARP on first use
    Suspect(v, Level::kInfo, "neighbor_missing",
            absl::StrCat("no neighbour entry for gateway ", gateway->to_string(), " on ", dev.name,
                         " (not cached: resolved by ARP on first use)"));
    return;
  }
  if (!n->Usable()) {
    Suspect(
        v, Level::kWarning, "neighbor_missing",
        absl::StrCat("neighbour entry for gateway ", gateway->to_string(), " on ", dev.name, " is ",
                     n->StateNames(), ": ARP resolution of the gateway failed"));
  }
}

}  // namespace sarena::diag::internal
