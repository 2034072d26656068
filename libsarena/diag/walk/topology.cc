// Topology lookups over the snapshot: a node's primary interface, the owner of an
// address, the pods of a node, a pod by ifindex, the far end of a node-to-node veth.

#include <cerrno>

#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

const Interface* Walker::PrimaryInterface(const Where& node) {
  if (node.ns == nullptr) return nullptr;
  const model::Node* k = cluster_.FindNode(node.node_name);
  if (k) {
    for (const auto& ip : k->internal_ips) {
      if (const Interface* i = node.ns->netstack.InterfaceWithAddress(ip)) return i;
    }
    if (k->calico_ipv4_address) {
      if (const Interface* i =
              node.ns->netstack.InterfaceWithAddress(k->calico_ipv4_address->address())) {
        return i;
      }
    }
  }
  // The device of the default route.
  model::Flow fl;
  fl.dst = net::Ipv4(0x08080808);
  RouteResult r = node.ns->netstack.Lookup(fl);
  if (r.ok()) return node.ns->netstack.FindInterface(r.oif);
  return nullptr;
}

absl::StatusOr<std::optional<Walker::Owner>> Walker::OwnerOf(const net::Ipv4& ip) {
  const model::Node* k = cluster_.FindNodeByIp(ip);
  if (k) {
    SARENA_ASSIGN_OR_RETURN(Where w, NodeWhere(k->name));
    if (w.ns == nullptr) return Owner{w, ""};
    if (const Interface* i = w.ns->netstack.InterfaceWithAddress(ip)) return Owner{w, i->name};
    // Known node, address not configured on it (e.g. a Calico annotation): its primary device.
    const Interface* p = PrimaryInterface(w);
    return Owner{w, p ? p->name : ""};
  }
  if (snap_.node_names().size() <= 64) {
    for (const std::string& n : snap_.node_names()) {
      SARENA_ASSIGN_OR_RETURN(Where w, NodeWhere(n));
      if (w.ns == nullptr) continue;
      if (const Interface* i = w.ns->netstack.InterfaceWithAddress(ip)) return Owner{w, i->name};
    }
  }
  return std::nullopt;
}

const std::vector<const model::Pod*>& Walker::PodsOn(const std::string& node) {
  auto it = pods_on_.find(node);
  if (it != pods_on_.end()) return it->second;
  std::vector<const model::Pod*> pods = cluster_.PodsOnNode(node);
  for (const auto& [ns, name] : snap_.PodDirsOn(node)) {
    if (cluster_.FindPod(ns, name)) continue;
    auto st = snap_.PodNetns(ns, name, node);
    if (!st.ok()) continue;
    model::Pod p;
    p.namespace_ = ns;
    p.name = name;
    p.node_name = node;
    p.phase = "Running";
    p.ready = true;
    for (const Interface& i : (*st)->netstack.interfaces()) {
      if (i.loopback) continue;
      if (const auto* a = i.PrimaryAddress()) {
        p.pod_ip = a->local;
        p.pod_ips.push_back(a->local);
        break;
      }
    }
    synthetic_pods_.push_back(std::move(p));
    pods.push_back(&synthetic_pods_.back());
  }
  return pods_on_.emplace(node, std::move(pods)).first->second;
}

const model::Pod* Walker::FindPodAnywhere(const std::string& ns, const std::string& name) {
  if (const model::Pod* p = cluster_.FindPod(ns, name)) return p;
  for (const std::string& node : snap_.node_names()) {
    for (const model::Pod* p : PodsOn(node)) {
      if (p->namespace_ == ns && p->name == name) return p;
    }
  }
  return nullptr;
}

void Walker::NoteSharedPodIp(const Where& w, Vertex v, const Flight& f) {
  if (!w.in_pod()) return;
  std::vector<const model::Pod*> owners = cluster_.LivePodsSharingIp(f.pkt.dst);
  if (owners.size() < 2) return;
  if (!once_.insert(absl::StrCat("pod_ip_duplicate|", f.pkt.dst.to_string(), "|", f.reply))
           .second) {
    return;
  }
  std::vector<std::string> keys;
  for (const model::Pod* p : owners) {
    keys.push_back(absl::StrCat(p->Key(), " (node ", p->node_name.empty() ? "?" : p->node_name,
                                ", ", p->phase.empty() ? "no phase" : p->phase, ")"));
  }
  // The query named one of the owners and the walk reached another: the packet is not
  // delivered where it was sent.
  const model::Pod* wanted = nullptr;
  const EndpointSpec& named = f.reply ? query_.src : query_.dst;
  if (named.kind == EndpointSpec::Kind::kPod) {
    wanted = cluster_.FindPod(named.namespace_, named.name);
  }
  bool wrong = wanted != nullptr && wanted != w.pod &&
               (wanted->namespace_ != w.pod->namespace_ || wanted->name != w.pod->name);
  Suspect(v, wrong ? Level::kFatal : Level::kWarning, "pod_ip_duplicate",
          absl::StrCat(f.pkt.dst.to_string(), " is the address of ", owners.size(),
                       " live pods: ", absl::StrJoin(keys, ", "),
                       " (IPAM handed one address out twice); the walk followed the routes to ",
                       w.pod->Key(),
                       wrong ? absl::StrCat(", not to ", wanted->Key(), " that the query named")
                             : std::string(", but which pod receives it depends on each node's routes")));
}

absl::StatusOr<std::optional<Walker::Owner>> Walker::PodByIfindex(const Where& node, int ifindex,
                                                                  int peer_ifindex) {
  for (const model::Pod* pod : PodsOn(node.node_name)) {
    if (pod->host_network) continue;
    auto st = snap_.PodNetns(pod->namespace_, pod->name, pod->node_name);
    if (!st.ok()) {
      if (!absl::IsNotFound(st.status())) return st.status();
      continue;
    }
    const Interface* i = (*st)->netstack.FindInterfaceByIndex(ifindex);
    if (i == nullptr || i->kind != "veth") continue;
    if (i->link_index && *i->link_index != peer_ifindex) continue;
    Where w;
    w.ns = *st;
    w.node = node.node;
    w.pod = pod;
    w.node_name = node.node_name;
    return Owner{w, i->name};
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<Walker::Owner>> Walker::NodeVethPeer(const Where& w,
                                                                  const Interface& oif,
                                                                  const net::Ipv4& nexthop) {
  if (!oif.link_index || !oif.link_netnsid || snap_.node_names().size() > 64) return std::nullopt;
  // Our own end: a link-netnsid shared with a pod's veth names that pod's netns, not a node.
  if (w.ns && !w.in_pod()) {
    SARENA_ASSIGN_OR_RETURN(bool to_pod, VethPeerIsPod(w, oif));
    if (to_pod) return std::nullopt;
  }
  // ifindexes are per netns: the candidates are the other nodes' veths with ifindex ==
  // link_index whose own peer is ours; several are told apart by the next hop's address, then
  // by a shared subnet.
  std::vector<Owner> cands;
  for (const std::string& n : snap_.node_names()) {
    if (n == w.node_name) continue;
    SARENA_ASSIGN_OR_RETURN(Where nw, NodeWhere(n));
    if (nw.ns == nullptr) continue;
    const Interface* i = nw.ns->netstack.FindInterfaceByIndex(*oif.link_index);
    if (!i || i->kind != "veth" || !i->link_netnsid) continue;
    if (i->link_index && *i->link_index != oif.ifindex) continue;
    // The pair can still collide: the candidate may be a pod's veth whose peer has our
    // ifindex in the pod's netns (kind: node eth0 ifindex 2 <-> Docker's 4, and another
    // node's 4th device is a pod veth whose peer is that pod's eth0, ifindex 2).
    SARENA_ASSIGN_OR_RETURN(bool to_pod, VethPeerIsPod(nw, *i));
    if (to_pod) continue;
    cands.push_back(Owner{nw, i->name});
  }
  if (cands.size() == 1) return cands.front();
  for (const Owner& c : cands) {
    if (c.where.ns->netstack.IsLocalAddress(nexthop)) return c;
  }
  for (const Owner& c : cands) {
    const Interface* i = c.where.ns->netstack.FindInterface(c.ifname);
    for (const auto& a : oif.addresses) {
      for (const auto& b : i->addresses) {
        if (a.prefixlen < 32 && net::Contains(a.Subnet(), b.local)) return c;
      }
    }
  }
  return std::nullopt;
}

absl::StatusOr<bool> Walker::VethPeerIsPod(const Where& node, const Interface& veth) {
  if (node.ns == nullptr || veth.kind != "veth") return false;
  auto leads_to_pod = [&](const Interface& i) -> absl::StatusOr<bool> {
    if (!i.link_index) return false;
    SARENA_ASSIGN_OR_RETURN(std::optional<Owner> o, PodByIfindex(node, *i.link_index, i.ifindex));
    return o.has_value();
  };
  SARENA_ASSIGN_OR_RETURN(bool own, leads_to_pod(veth));
  if (own) return true;
  if (!veth.link_netnsid) return false;
  for (const Interface& i : node.ns->netstack.interfaces()) {
    if (i.ifindex == veth.ifindex || i.kind != "veth" || i.link_netnsid != veth.link_netnsid) {
      continue;
    }
    SARENA_ASSIGN_OR_RETURN(bool other, leads_to_pod(i));
    if (other) return true;
  }
  return false;
}

absl::StatusOr<bool> Walker::VethPeerMayBeUnlisted(const Where& w, Vertex v,
                                                    const Interface& oif) {
  if (oif.kind != "veth" || !oif.link_index || !oif.link_netnsid || w.in_pod() ||
      snap_.nodes_without_links().empty()) {
    return false;
  }
  if (w.ns) {
    SARENA_ASSIGN_OR_RETURN(bool to_pod, VethPeerIsPod(w, oif));
    if (to_pod) return false;
  }
  for (const std::string& n : snap_.nodes_without_links()) {
    if (n == w.node_name) continue;
    SARENA_ASSIGN_OR_RETURN(Where nw, NodeWhere(n));
    if (nw.ns == nullptr) continue;
    Need(nw, v, SnapshotInput::kLinks, absl::StrCat("the other end of veth ", oif.name),
         Absent::kEnd);
    return true;
  }
  return false;
}

absl::StatusOr<bool> Walker::IsUplink(const Where& w, const Interface& oif) {
  if (w.ns == nullptr || w.in_pod() || w.node == nullptr || oif.kind != "veth") return false;
  SARENA_ASSIGN_OR_RETURN(bool to_pod, VethPeerIsPod(w, oif));
  if (to_pod) return false;
  if (const Interface* p = PrimaryInterface(w); p && p->name == oif.name) return true;
  model::Flow fl;
  fl.dst = net::Ipv4(0x08080808);
  RouteResult r = w.ns->netstack.Lookup(fl);
  return r.ok() && r.oif == oif.name;
}

}  // namespace sarena::diag::internal
