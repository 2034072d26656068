#include "libsarena/model/topology.h"

#include <utility>

#include "libsarena/base/status_macros.h"

namespace sarena::model {

absl::StatusOr<NetnsRef> Topology::NodeRef(absl::string_view node) const {
  NetnsRef w;
  w.node_name = std::string(node);
  auto st = snap_.Node(node);
  if (st.ok()) {
    w.node = *st;
    w.ns = *st;
    return w;
  }
  if (absl::IsNotFound(st.status())) return w;  // ns == nullptr: not in the snapshot
  return st.status();
}

absl::StatusOr<NetnsRef> Topology::PodRef(const Pod& pod) const {
  NetnsRef w;
  SARENA_ASSIGN_OR_RETURN(NetnsRef node, NodeRef(pod.node_name));
  w.node = node.node;
  w.node_name = pod.node_name;
  w.pod = &pod;
  if (pod.host_network) {
    w.pod = nullptr;
    w.ns = node.node;
    return w;
  }
  auto st = snap_.PodNetns(pod.namespace_, pod.name, pod.node_name);
  if (st.ok()) {
    w.ns = *st;
  } else if (!absl::IsNotFound(st.status())) {
    return st.status();
  }
  return w;
}

const Interface* Topology::PrimaryInterface(const NetnsRef& node) const {
  if (node.ns == nullptr) return nullptr;
  if (const Node* k = cluster_.FindNode(node.node_name)) {
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
  Flow fl;
  fl.dst = net::Ipv4(0x08080808);
  RouteResult r = node.ns->netstack.Lookup(fl);
  if (r.ok()) return node.ns->netstack.FindInterface(r.oif);
  return nullptr;
}

absl::StatusOr<std::optional<DeviceRef>> Topology::OwnerOf(const net::Ipv4& ip) const {
  if (const Node* k = cluster_.FindNodeByIp(ip)) {
    SARENA_ASSIGN_OR_RETURN(NetnsRef w, NodeRef(k->name));
    if (w.ns == nullptr) return DeviceRef{w, ""};
    if (const Interface* i = w.ns->netstack.InterfaceWithAddress(ip)) return DeviceRef{w, i->name};
    // Known node, address not configured on it (e.g. a Calico annotation): its primary device.
    const Interface* p = PrimaryInterface(w);
    return DeviceRef{w, p ? p->name : ""};
  }
  if (snap_.node_names().size() <= kMaxNodesScanned) {
    for (const std::string& n : snap_.node_names()) {
      SARENA_ASSIGN_OR_RETURN(NetnsRef w, NodeRef(n));
      if (w.ns == nullptr) continue;
      if (const Interface* i = w.ns->netstack.InterfaceWithAddress(ip)) {
        return DeviceRef{w, i->name};
      }
    }
  }
  return std::nullopt;
}

absl::StatusOr<const std::vector<const Pod*>*> Topology::PodsOn(const std::string& node) {
  auto it = pods_on_.find(node);
  if (it != pods_on_.end()) return &it->second;
  std::vector<const Pod*> pods = cluster_.PodsOnNode(node);
  for (const auto& [ns, name] : snap_.PodDirsOn(node)) {
    if (cluster_.FindPod(ns, name)) continue;
    auto st = snap_.PodNetns(ns, name, node);
    if (absl::IsNotFound(st.status())) continue;  // a directory without a netns file
    if (!st.ok()) return st.status();
    Pod p;
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
  return &pods_on_.emplace(node, std::move(pods)).first->second;
}

absl::StatusOr<const Pod*> Topology::FindPod(const std::string& ns, const std::string& name) {
  if (const Pod* p = cluster_.FindPod(ns, name)) return p;
  for (const std::string& node : snap_.node_names()) {
    SARENA_ASSIGN_OR_RETURN(const std::vector<const Pod*>* pods, PodsOn(node));
    for (const Pod* p : *pods) {
      if (p->namespace_ == ns && p->name == name) return p;
    }
  }
  return nullptr;
}

absl::StatusOr<std::optional<DeviceRef>> Topology::PodByIfindex(const NetnsRef& node, int ifindex,
                                                                int peer_ifindex) {
  SARENA_ASSIGN_OR_RETURN(const std::vector<const Pod*>* pods, PodsOn(node.node_name));
  for (const Pod* pod : *pods) {
    if (pod->host_network) continue;
    auto st = snap_.PodNetns(pod->namespace_, pod->name, pod->node_name);
    if (!st.ok()) {
      if (!absl::IsNotFound(st.status())) return st.status();
      continue;
    }
    const Interface* i = (*st)->netstack.FindInterfaceByIndex(ifindex);
    if (i == nullptr || i->kind != "veth") continue;
    if (i->link_index && *i->link_index != peer_ifindex) continue;
    NetnsRef w;
    w.ns = *st;
    w.node = node.node;
    w.pod = pod;
    w.node_name = node.node_name;
    return DeviceRef{w, i->name};
  }
  return std::nullopt;
}

bool Topology::RoutesAPodOver(const NetnsRef& node, const Interface& dev) const {
  if (node.ns == nullptr) return false;
  for (const Route& r : node.ns->netstack.routes()) {
    if (r.table != kTableMain || r.dst.prefix_length() != 32 || r.nexthops.size() != 1 ||
        r.nexthops.front().dev != dev.name) {
      continue;
    }
    const Pod* p = cluster_.FindPodByIp(r.dst.address());
    if (p != nullptr && !p->host_network) return true;
  }
  return false;
}

absl::StatusOr<bool> Topology::VethPeerIsPod(const NetnsRef& node, const Interface& veth) {
  if (node.ns == nullptr || veth.kind != "veth") return false;
  auto leads_to_pod = [&](const Interface& i) -> absl::StatusOr<bool> {
    if (!i.link_index) return false;
    SARENA_ASSIGN_OR_RETURN(std::optional<DeviceRef> o,
                            PodByIfindex(node, *i.link_index, i.ifindex));
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

absl::StatusOr<std::optional<DeviceRef>> Topology::NodeVethPeer(const NetnsRef& w,
                                                                const Interface& oif,
                                                                const net::Ipv4& nexthop) {
  if (!oif.link_index || !oif.link_netnsid || snap_.node_names().size() > kMaxNodesScanned) {
    return std::nullopt;
  }
  // Our own end: a link-netnsid shared with a pod's veth names that pod's netns, not a node.
  if (w.ns && !w.in_pod()) {
    SARENA_ASSIGN_OR_RETURN(bool to_pod, VethPeerIsPod(w, oif));
    if (to_pod || RoutesAPodOver(w, oif)) return std::nullopt;
  }
  // ifindexes are per netns: the candidates are the other nodes' veths with ifindex ==
  // link_index whose own peer is ours; several are told apart by the next hop's address, then
  // by a shared subnet.
  std::vector<DeviceRef> cands;
  for (const std::string& n : snap_.node_names()) {
    if (n == w.node_name) continue;
    SARENA_ASSIGN_OR_RETURN(NetnsRef nw, NodeRef(n));
    if (nw.ns == nullptr) continue;
    const Interface* i = nw.ns->netstack.FindInterfaceByIndex(*oif.link_index);
    if (!i || i->kind != "veth" || !i->link_netnsid) continue;
    if (i->link_index && *i->link_index != oif.ifindex) continue;
    // The pair can still collide: the candidate may be a pod's veth whose peer has our
    // ifindex in the pod's netns (kind: node eth0 ifindex 2 <-> Docker's 4, and another
    // node's 4th device is a pod veth whose peer is that pod's eth0, ifindex 2).
    SARENA_ASSIGN_OR_RETURN(bool to_pod, VethPeerIsPod(nw, *i));
    if (to_pod || RoutesAPodOver(nw, *i)) continue;
    cands.push_back(DeviceRef{nw, i->name});
  }
  if (cands.size() == 1) return cands.front();
  for (const DeviceRef& c : cands) {
    if (c.netns.ns->netstack.IsLocalAddress(nexthop)) return c;
  }
  for (const DeviceRef& c : cands) {
    const Interface* i = c.netns.ns->netstack.FindInterface(c.ifname);
    for (const auto& a : oif.addresses) {
      for (const auto& b : i->addresses) {
        if (a.prefixlen < 32 && net::Contains(a.Subnet(), b.local)) return c;
      }
    }
  }
  return std::nullopt;
}

absl::StatusOr<bool> Topology::IsUplink(const NetnsRef& w, const Interface& oif) {
  if (w.ns == nullptr || w.in_pod() || w.node == nullptr || oif.kind != "veth") return false;
  SARENA_ASSIGN_OR_RETURN(bool to_pod, VethPeerIsPod(w, oif));
  if (to_pod) return false;
  if (const Interface* p = PrimaryInterface(w); p && p->name == oif.name) return true;
  Flow fl;
  fl.dst = net::Ipv4(0x08080808);
  RouteResult r = w.ns->netstack.Lookup(fl);
  return r.ok() && r.oif == oif.name;
}

}  // namespace sarena::model
