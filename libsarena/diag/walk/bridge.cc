// Linux bridge: the port behind a next hop, a bridge port, a frame switched between
// two ports (with br_netfilter).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

std::optional<Walker::PortTarget> Walker::FindBridgePort(const Where& w, const Interface& bridge,
                                                         const net::Ipv4& nexthop) {
  const Netstack& ns = w.ns->netstack;
  for (const Interface& port : ns.interfaces()) {
    if (port.master != bridge.name || port.kind != "veth" || !port.link_index) continue;
    auto o = PodByIfindex(w, *port.link_index, port.ifindex);
    if (!error_.ok()) return std::nullopt;
    if (!o || !o->where.ns) continue;
    if (!o->where.ns->netstack.IsLocalAddress(nexthop)) continue;
    return PortTarget{&port, o->where, o->ifname};
  }
  const model::Pod* pod = cluster_.FindPodByIp(nexthop);
  if (pod && !pod->host_network && pod->node_name == w.node_name) {
    auto pw = PodWhere(*pod);
    if (!pw.ok()) {
      error_ = pw.status();
      return std::nullopt;
    }
    return PortTarget{nullptr, *pw, "eth0"};
  }
  return std::nullopt;
}

void Walker::BridgePort(const Where& w, Vertex v, const Interface& bridge, const net::Ipv4& nexthop,
                        Flight f, Branch br, const std::string& label) {
  std::optional<PortTarget> t = FindBridgePort(w, bridge, nexthop);
  if (!error_.ok()) return;
  if (!t) {
    Drop(v, "neighbor_missing",
         absl::StrCat("no port of bridge ", bridge.name, " leads to ", nexthop.to_string(),
                      " (no pod netns on ", w.node_name, " owns it)"));
    return;
  }
  std::string l = label.empty() ? absl::StrCat("bridge ", bridge.name) : label;
  if (t->port) {
    absl::StrAppend(&l, " -> ", t->port->name);
    if (!t->port->admin_up || !t->port->CanTransmit()) {
      Drop(v, "link_down",
           absl::StrCat("bridge port ", t->port->name, " towards ", t->where->pod->Key(),
                        " is down"));
      return;
    }
  } else {
    absl::StrAppend(&l, " (port found by address)");
  }
  Receive(*t->where, t->ifname, std::move(f), std::move(br), Prev{v, l});
}

// A frame switched between two ports of a Linux bridge (pod to pod on the same bridge). With
// br_netfilter (net.bridge.bridge-nf-call-iptables=1, which kube-proxy requires) it still passes
// iptables and conntrack — that is what reverses a Service DNAT for a reply between two pods of
// one bridge; without it the reply keeps the backend's address.
void Walker::BridgeForward(const Where& node, const std::string& in_port, const Interface& bridge,
                           const net::Ipv4& nexthop, Flight f, Branch br, const Prev& prev) {
  Hop h;
  h.kind = HopKind::kNode;
  h.id = HopId(node, f.reply);
  h.node = node.node_name;
  h.iif = in_port;
  h.action = HopAction::kForward;
  h.packet = f.pkt;
  h.reply = f.reply;
  Vertex v = AddHop(std::move(h), prev);
  if (++br.hops > opts_.max_hops) {
    Drop(v, "ttl_exceeded", "too many hops: the path loops");
    return;
  }
  if (pctx_.FirstInBranch(absl::StrCat("node|", node.node_name))) plugin_.CheckNode(pctx_, node, v);
  std::string key = absl::StrCat(node.ns->id, "|", in_port, "|", Tuple(f.pkt), "|", f.reply);
  if (!br.visited.insert(key).second) {
    Drop(v, "ttl_exceeded",
         absl::StrCat("bridging loop: ", Tuple(f.pkt), " enters ", bridge.name, " on ", in_port,
                      " again"));
    return;
  }
  if (!f.reply) br.request_netns.insert(node.ns->id);
  std::optional<PortTarget> t = FindBridgePort(node, bridge, nexthop);
  if (!error_.ok()) return;
  if (!t) {
    Drop(v, "neighbor_missing",
         absl::StrCat("no port of bridge ", bridge.name, " leads to ", nexthop.to_string(),
                      " (no pod netns on ", node.node_name, " owns it)"));
    return;
  }
  if (t->port) graph_.hop(v).oif = t->port->name;
  const Netstack& ns = node.ns->netstack;
  std::optional<int64_t> call = ns.sysctls().GetInt("net.bridge.bridge-nf-call-iptables");
  bool nf_on = call ? *call != 0 : true;
  if (!call && ns.Has(NetstackSource::kSysctls)) {
    InfoOnce(v, absl::StrCat("brnf|", node.ns->id), "bridge_netfilter",
             absl::StrCat("net.bridge.bridge-nf-call-iptables is not in ", node.ns->dir,
                          "/sysctl.txt: assuming 1 (br_netfilter, which kube-proxy requires)"));
  }
  if (!nf_on) {
    Suspect(v, Level::kInfo, "bridge_netfilter",
            absl::StrCat("net.bridge.bridge-nf-call-iptables = 0: traffic bridged on ", bridge.name,
                         " bypasses iptables and conntrack (no Service NAT "
                         "reversal, no filter rules)"));
  } else if (node.ns->netfilter) {
    SetCtState(node, &f.pkt, f, br);
    if (f.reply) UnSnat(node, &f.pkt, br);
    for (NfHook hook : {NfHook::kPrerouting, NfHook::kForward, NfHook::kPostrouting}) {
      NfPass nf = RunHook(node, v, hook, f.pkt, bridge.name,
                          hook == NfHook::kPrerouting ? "" : bridge.name, std::nullopt);
      if (nf.dropped || !error_.ok()) return;
      f.pkt = nf.accepted.front().packet;
    }
    if (f.reply) UnDnat(node, &f.pkt, br);
  }
  graph_.hop(v).packet = f.pkt;
  std::string l = absl::StrCat("bridged on ", bridge.name);
  if (t->port) {
    absl::StrAppend(&l, " -> ", t->port->name);
    if (!t->port->admin_up || !t->port->CanTransmit()) {
      Drop(v, "link_down",
           absl::StrCat("bridge port ", t->port->name, " towards ", t->where->pod->Key(),
                        " is down"));
      return;
    }
  }
  Receive(*t->where, t->ifname, std::move(f), std::move(br), Prev{v, l});
}

}  // namespace sarena::diag::internal
