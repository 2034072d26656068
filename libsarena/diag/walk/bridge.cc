// Linux bridge: the port behind a next hop, a bridge port, a frame switched between
// two ports (with br_netfilter).
#include "absl/strings/match.h"
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// What a bridge with no port toward a next hop needs: the next hop may be the bridge's own.
constexpr absl::string_view kBridgeOwnsNexthop = "the bridge's own addresses";

absl::StatusOr<std::optional<Walker::PortTarget>> Walker::FindBridgePort(const Where& w,
                                                                         const Interface& bridge,
                                                                         const net::Ipv4& nexthop) {
  const Netstack& ns = w.ns->netstack;
  for (const Interface& port : ns.interfaces()) {
    if (port.master != bridge.name || port.kind != "veth" || !port.link_index) continue;
    SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> o,
                            topo_.PodByIfindex(w, *port.link_index, port.ifindex));
    if (!o || !o->netns.ns) continue;
    if (!o->netns.ns->netstack.IsLocalAddress(nexthop)) continue;
    return PortTarget{&port, o->netns, o->ifname};
  }
  const model::Pod* pod = cluster_.FindPodByIp(nexthop);
  if (pod && !pod->host_network && pod->node_name == w.node_name) {
    SARENA_ASSIGN_OR_RETURN(Where pw, topo_.PodRef(*pod));
    return PortTarget{nullptr, pw, "eth0"};
  }
  return std::nullopt;
}

absl::StatusOr<Next> Walker::BridgePort(LinkStep& s) {
  SARENA_ASSIGN_OR_RETURN(std::optional<PortTarget> t, FindBridgePort(s.w, *s.oif, s.nexthop));
  if (!t) {
    if (!Need(s.w, s.v, SnapshotInput::kAddrs, kBridgeOwnsNexthop, Absent::kEnd)) return Done();
    Drop(s.v, "neighbor_missing",
         absl::StrCat("no port of bridge ", s.oif->name, " leads to ", s.nexthop.to_string(),
                      " (no pod netns on ", s.w.node_name, " owns it)"));
    return Done();
  }
  std::string l = s.label.empty() ? absl::StrCat("bridge ", s.oif->name) : s.label;
  if (t->port) {
    absl::StrAppend(&l, " -> ", t->port->name);
    if (!t->port->admin_up || !t->port->CanTransmit()) {
      Drop(s.v, "link_down",
           absl::StrCat("bridge port ", t->port->name, " towards ", t->where->pod->Key(),
                        " is down"));
      return Done();
    }
  } else {
    absl::StrAppend(&l, " (port found by address)");
  }
  // A frame the node sends into the bridge (br_dev_xmit) is not checked for hairpin or isolation,
  // except the one br_netfilter's bridged DNAT turns around inside the bridge: it entered by a
  // port, PREROUTING changed its destination and the route leads back into the same bridge, so
  // br_nf_pre_routing_finish_bridge hands it to br_forward with the ingress port as its source.
  const Interface* in_port = nullptr;
  const std::string prefix = absl::StrCat(s.w.ns->id, "|", s.oif->name, "|");
  if (absl::StartsWith(s.f.bridge_in, prefix) && s.f.pkt.dst != s.f.bridge_in_dst &&
      BridgeNfOn(s.w, s.v, *s.oif)) {
    in_port = s.w.ns->netstack.FindInterface(s.f.bridge_in.substr(prefix.size()));
  }
  s.f.bridge_in.clear();
  if (t->port && !BridgePortFlagsPass(s.w, s.v, *s.oif, in_port, *t, s.f)) return Done();
  return Then(ReceiveStep{*t->where, t->ifname, std::move(s.f), std::move(s.br), Prev{s.v, l}});
}

bool Walker::BridgeNfOn(const Where& node, Vertex v, const Interface& bridge) {
  const Netstack& ns = node.ns->netstack;
  std::optional<int64_t> call = ns.sysctls().GetInt("net.bridge.bridge-nf-call-iptables");
  if (bridge.bridge && bridge.bridge->nf_call_iptables) return true;
  if (!call && ns.Has(NetstackSource::kSysctls)) {
    InfoOnce(v, absl::StrCat("brnf|", node.ns->id), "bridge_netfilter",
             absl::StrCat("net.bridge.bridge-nf-call-iptables is not in ", node.ns->dir,
                          "/sysctl.txt: assuming 1 (br_netfilter, which kube-proxy requires)"));
  }
  return call ? *call != 0 : true;
}

bool Walker::BridgePortFlagsPass(const Where& node, Vertex v, const Interface& bridge,
                                 const Interface* in_port, const PortTarget& t, const Flight& f) {
  const Interface& out = *t.port;
  const model::BridgePortInfo flags = out.bridge_port.value_or(model::BridgePortInfo{});
  const std::string who = t.where && t.where->pod ? t.where->pod->Key() : t.ifname;
  if (in_port != nullptr && in_port->name == out.name && !flags.hairpin) {
    Drop(v, "bridge_hairpin",
         absl::StrCat(Tuple(f.pkt), " was DNAT'ed back to ", who, " behind ", out.name,
                      ", the bridge port of ", bridge.name,
                      " it came in by; hairpin mode is off on ", out.name,
                      ", so the bridge does not send it back out (br_forward: should_deliver). Fix: "
                      "bridge link set dev ",
                      out.name, " hairpin on (ip link set dev ", out.name,
                      " type bridge_slave hairpin on; the bridge CNI's \"hairpinMode\": true, "
                      "kubelet --hairpin-mode=hairpin-veth)"));
    return false;
  }
  if (in_port != nullptr && in_port->name != out.name) {
    const model::BridgePortInfo in_flags = in_port->bridge_port.value_or(model::BridgePortInfo{});
    if (in_flags.isolated && flags.isolated) {
      Drop(v, "bridge_isolated",
           absl::StrCat("ports ", in_port->name, " and ", out.name, " of bridge ", bridge.name,
                        " are both isolated: the bridge never forwards ", Tuple(f.pkt),
                        " between them (br_skb_isolated). Fix: bridge link set dev ", out.name,
                        " isolated off (or dev ", in_port->name, ")"));
      return false;
    }
  }
  if (!flags.unicast_flood && !flags.learning) {
    const Interface* pif =
        t.where && t.where->ns ? t.where->ns->netstack.FindInterface(t.ifname) : nullptr;
    bool known = false;
    if (pif && pif->mac && node.ns->netstack.Has(NetstackSource::kFdb)) {
      for (const model::FdbEntry* e : node.ns->netstack.FindFdb(out.name, *pif->mac)) {
        if (e->master.empty() || e->master == bridge.name) known = true;
      }
    }
    if (pif && pif->mac && !known) {
      Drop(v, "bridge_flood",
           absl::StrCat("bridge ", bridge.name, " has no fdb entry for ", net::FormatMac(*pif->mac),
                        " (", who, ") on ", out.name, ", and ", out.name,
                        " has learning off (the MAC is never learned) and unicast flooding off: ",
                        "the unknown-unicast frame is flooded to no port (br_flood). Fix: bridge "
                        "link set dev ",
                        out.name, " learning on (or flood on, or bridge fdb add ",
                        net::FormatMac(*pif->mac), " dev ", out.name, " master static)"));
      return false;
    }
  }
  return true;
}

// A frame switched between two ports of a Linux bridge (pod to pod on the same bridge). With
// br_netfilter (net.bridge.bridge-nf-call-iptables=1, which kube-proxy requires) it still passes
// iptables and conntrack — that is what reverses a Service DNAT for a reply between two pods of
// one bridge; without it the reply keeps the backend's address.
absl::StatusOr<Next> Walker::BridgeForward(BridgeForwardStep& s) {
  Hop h;
  h.kind = HopKind::kNode;
  h.id = HopId(s.node, s.f.reply);
  h.node = s.node.node_name;
  h.iif = s.in_port;
  h.action = HopAction::kForward;
  h.packet = s.f.pkt;
  h.reply = s.f.reply;
  Vertex v = AddHop(std::move(h), s.prev);
  if (++s.br.hops > opts_.max_hops) {
    Drop(v, "ttl_exceeded", "too many hops: the path loops");
    return Done();
  }
  if (pctx_.FirstInBranch(absl::StrCat("node|", s.node.node_name)))
    plugin_.CheckNode(pctx_, s.node, v);
  std::string key =
      absl::StrCat(s.node.ns->id, "|", s.in_port, "|", Tuple(s.f.pkt), "|", s.f.reply);
  if (!s.br.visited.insert(key).second) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("bridging loop: ", Tuple(s.f.pkt), " enters ", s.bridge->name, " on ",
                      s.in_port, " again"));
    return Done();
  }
  if (!s.f.reply) s.br.ct.SawRequest(s.node.ns->id);
  SARENA_ASSIGN_OR_RETURN(std::optional<PortTarget> t,
                          FindBridgePort(s.node, *s.bridge, s.nexthop));
  if (!t) {
    if (!Need(s.node, v, SnapshotInput::kAddrs, kBridgeOwnsNexthop, Absent::kEnd)) return Done();
    Drop(v, "neighbor_missing",
         absl::StrCat("no port of bridge ", s.bridge->name, " leads to ", s.nexthop.to_string(),
                      " (no pod netns on ", s.node.node_name, " owns it)"));
    return Done();
  }
  if (t->port) graph_.hop(v).oif = t->port->name;
  bool nf_on = BridgeNfOn(s.node, v, *s.bridge);
  if (!nf_on) {
    Suspect(
        v, Level::kInfo, "bridge_netfilter",
        absl::StrCat("net.bridge.bridge-nf-call-iptables = 0: traffic bridged on ", s.bridge->name,
                     " bypasses iptables and conntrack (no Service NAT "
                     "reversal, no filter rules)"));
  } else if (s.node.ns->netfilter) {
    SetCtState(s.node, &s.f.pkt, s.f, s.br);
    if (s.f.reply) UnSnat(s.node, &s.f.pkt, s.br);
    for (NfHook hook : {NfHook::kPrerouting, NfHook::kForward, NfHook::kPostrouting}) {
      NfPass nf = RunHook(s.node, v, hook, s.f.pkt, s.bridge->name,
                          hook == NfHook::kPrerouting ? "" : s.bridge->name, std::nullopt);
      if (nf.dropped) return Done();
      s.f.pkt = nf.accepted.front().packet;
    }
    if (s.f.reply) UnDnat(s.node, &s.f.pkt, s.br);
  } else {
    // No rules to evaluate, but conntrack still reverses the NAT this walk applied on the node
    // (a Service's DNAT taken from its endpoints).
    Need(s.node, v, SnapshotInput::kIptables, "netfilter (iptables)");
    if (s.f.reply) UnSnat(s.node, &s.f.pkt, s.br);
    if (s.f.reply) UnDnat(s.node, &s.f.pkt, s.br);
  }
  graph_.hop(v).packet = s.f.pkt;
  std::string l = absl::StrCat("bridged on ", s.bridge->name);
  if (t->port) {
    absl::StrAppend(&l, " -> ", t->port->name);
    if (!t->port->admin_up || !t->port->CanTransmit()) {
      Drop(v, "link_down",
           absl::StrCat("bridge port ", t->port->name, " towards ", t->where->pod->Key(),
                        " is down"));
      return Done();
    }
    s.f.bridge_in.clear();
    if (!BridgePortFlagsPass(s.node, v, *s.bridge, s.node.ns->netstack.FindInterface(s.in_port), *t,
                             s.f)) {
      return Done();
    }
  }
  return Then(ReceiveStep{*t->where, t->ifname, std::move(s.f), std::move(s.br), Prev{v, l}});
}

}  // namespace sarena::diag::internal
