// The walk's findings about the snapshot's topology: a destination that several live pods
// share, a veth whose far end a node without link data may hold. The lookups themselves (a
// node's primary interface, the owner of an address, a node's pods, veth ends) are
// model::Topology's (model/topology.h).

#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

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

absl::StatusOr<bool> Walker::VethPeerMayBeUnlisted(const Where& w, Vertex v,
                                                    const Interface& oif) {
  if (oif.kind != "veth" || !oif.link_index || !oif.link_netnsid || w.in_pod() ||
      snap_.nodes_without_links().empty()) {
    return false;
  }
  if (w.ns) {
    SARENA_ASSIGN_OR_RETURN(bool to_pod, topo_.VethPeerIsPod(w, oif));
    if (to_pod) return false;
  }
  for (const std::string& n : snap_.nodes_without_links()) {
    if (n == w.node_name) continue;
    SARENA_ASSIGN_OR_RETURN(Where nw, topo_.NodeRef(n));
    if (nw.ns == nullptr) continue;
    Need(nw, v, SnapshotInput::kLinks, absl::StrCat("the other end of veth ", oif.name),
         Absent::kEnd);
    return true;
  }
  return false;
}

}  // namespace sarena::diag::internal
