#include "libsarena/diag/sarena_cluster.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/topology.h"

namespace sarena::diag::sarena_cluster {
namespace {

using model::Interface;
using model::SarenaMode;
using model::SarenaTunnel;

// Snapshots with more nodes than this are not searched node by node (the cost bound of
// model::Topology's scans).
constexpr size_t kMaxNodesSearched = model::Topology::kMaxNodesScanned;

std::string EntryText(const SarenaTunnel& t) {
  return absl::StrCat(t.cidr.to_string(), " -> ", t.underlay.to_string(), " (node id ", t.node_id,
                      ", ", model::ToString(t.mode), ")");
}

const Interface* Uplink(const Where& w) {
  const model::SarenaOverlay* o = OverlayOf(w);
  if (!o || !o->uplink_ifindex) return nullptr;
  return w.node->netstack.FindInterfaceByIndex(static_cast<int>(o->uplink_ifindex));
}

// The snapshot node that owns tunnel entry `t` (by node id, else by pod CIDR), other than `self`.
const model::NodeState* PeerNode(const PluginContext& ctx, const SarenaTunnel& t,
                                 absl::string_view self) {
  if (ctx.snapshot->node_names().size() > kMaxNodesSearched) return nullptr;
  const model::NodeState* by_cidr = nullptr;
  for (const std::string& n : ctx.snapshot->node_names()) {
    if (n == self) continue;
    auto st = ctx.snapshot->Node(n);
    if (!st.ok() || !(*st)->sarena_cluster) continue;
    const model::SarenaCluster& c = *(*st)->sarena_cluster;
    if (c.overlay && c.overlay->enabled() && c.overlay->node_id == t.node_id) return *st;
    if (c.pod_cidr && *c.pod_cidr == t.cidr && !by_cidr) by_cidr = *st;
  }
  return by_cidr;
}

// The snapshot node (other than `self`) with `ip` on one of its interfaces, or null.
const model::NodeState* NodeWithAddress(const PluginContext& ctx, const net::Ipv4& ip,
                                        absl::string_view self) {
  if (ctx.snapshot->node_names().size() > kMaxNodesSearched) return nullptr;
  for (const std::string& n : ctx.snapshot->node_names()) {
    if (n == self) continue;
    auto st = ctx.snapshot->Node(n);
    if (st.ok() && (*st)->netstack.InterfaceWithAddress(ip)) return *st;
  }
  return nullptr;
}

// What the peer must do with `p`, for a path whose far end is not in the snapshot.
std::string Expectation(const Where& w, const SarenaTunnel& t, const Packet& p, bool tunnel) {
  const model::SarenaOverlay* o = OverlayOf(w);
  std::string self = o && o->underlay ? o->underlay->to_string() : std::string("this node's underlay");
  if (tunnel) {
    return absl::StrCat("node id ", t.node_id, " (", t.underlay.to_string(),
                        ") must have ", self, " in its peer map, VNI ", o ? o->vni : 0,
                        ", a tunnel-map entry of node id ", o ? o->node_id : 0, " covering ",
                        p.src.to_string(), ", from_overlay on its sarena_vxlan and the endpoint ",
                        p.dst.to_string());
  }
  return absl::StrCat("node id ", t.node_id, " (", t.underlay.to_string(),
                      ") must route ", p.src.to_string(),
                      " back through its uplink and deliver ", p.dst.to_string(),
                      " (from_netdev with a tunnel-map entry covering the source, or its host "
                      "stack)");
}

// Stale-underlay check of entry `t`: false when the packet is lost (FATAL added).
bool CheckUnderlay(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                   const SarenaTunnel& t) {
  const model::NodeState* peer = PeerNode(ctx, t, w.node_name);
  if (!peer) return true;
  const model::SarenaOverlay* po =
      peer->sarena_cluster && peer->sarena_cluster->overlay ? &*peer->sarena_cluster->overlay
                                                            : nullptr;
  std::optional<net::Ipv4> current = po ? po->underlay : std::nullopt;
  if (!current || *current == t.underlay) return true;
  const model::NodeState* owner = NodeWithAddress(ctx, t.underlay, w.node_name);
  std::string msg = absl::StrCat(
      "tunnel entry ", EntryText(t), " on ", w.node_name, " sends to ", t.underlay.to_string(),
      " but node ", peer->name, " (node id ", po->node_id, ") now has underlay ",
      current->to_string(), ": ",
      owner ? absl::StrCat(t.underlay.to_string(), " belongs to ", owner->name,
                           ", which is not the owner of ", t.cidr.to_string())
            : absl::StrCat("no node has ", t.underlay.to_string(), ", the packets are lost"),
      " (sarenad has not applied the peer's address change)");
  ctx.Suspect(hop, owner ? Level::kWarning : Level::kFatal, "stale_underlay", msg);
  return owner != nullptr;
}

bool InCidr(const std::optional<net::Ipv4Prefix>& c, const net::Ipv4& ip) {
  return c && net::Contains(*c, ip);
}

std::string ExpectedRoute(const Where& w, const SarenaTunnel& t) {
  const model::SarenaCluster* c = ClusterOf(w);
  std::string src = c && c->node_ip ? absl::StrCat(" src ", c->node_ip->to_string()) : "";
  if (t.mode == SarenaMode::kNative) {
    const Interface* up = Uplink(w);
    return absl::StrCat(t.cidr.to_string(), " via ", t.underlay.to_string(), " dev ",
                        up ? up->name : std::string("<uplink>"), src);
  }
  return absl::StrCat(t.cidr.to_string(), " dev ", kVxlanDev, " scope link", src);
}

// A tunnel key toward entry `t`.
PluginAction EncapTo(const Where& w, const SarenaTunnel& t, const Packet& p, absl::string_view label) {
  const model::SarenaOverlay* o = OverlayOf(w);
  PluginAction a;
  a.kind = PluginAction::Kind::kEncapsulate;
  a.tunnel_dev = std::string(kVxlanDev);
  a.tunnel_key = PluginAction::TunnelKey{t.underlay, o ? o->vni : 0, /*dont_fragment=*/false};
  a.label = std::string(label);
  a.peer_expectation = Expectation(w, t, p, /*tunnel=*/true);
  return a;
}

}  // namespace

const model::SarenaCluster* ClusterOf(const Where& w) {
  if (!w.node || !w.node->sarena_cluster) return nullptr;
  return &*w.node->sarena_cluster;
}

const model::SarenaOverlay* OverlayOf(const Where& w) {
  const model::SarenaCluster* c = ClusterOf(w);
  if (!c || !c->overlay || !c->overlay->enabled()) return nullptr;
  return &*c->overlay;
}

Outcome FromContainer(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                      const HookPacket& p, uint32_t pod_mtu) {
  Outcome out;
  const model::SarenaOverlay* o = OverlayOf(w);
  if (!o) return out;
  const model::SarenaCluster& c = *ClusterOf(w);
  const model::Netstack& ns = w.node->netstack;
  const SarenaTunnel* t = c.LookupTunnel(p.packet.dst);
  if (!t) {
    if (InCidr(o->cluster_cidr, p.packet.dst) && !InCidr(c.pod_cidr, p.packet.dst)) {
      ctx.Suspect(hop, Level::kInfo, "bpf",
                  absl::StrCat("from_container: ", p.packet.dst.to_string(),
                               " is in the cluster CIDR but has no tunnel-map entry on ",
                               w.node_name, ": passed to the host stack"));
    }
    return out;
  }
  if (t->mode == SarenaMode::kTunnel) {
    if (!o->tunnel() || o->vxlan_ifindex == 0) {
      ctx.Suspect(hop, Level::kWarning, "remote_cidr_misrouted",
                  absl::StrCat("tunnel entry ", EntryText(*t), " but the overlay config of ",
                               w.node_name,
                               " has no VXLAN device (tunnel flag off): from_container passes "
                               "the packet to the host stack"));
      return out;
    }
    const Interface* vx = ns.FindInterface(kVxlanDev);
    if (ns.Has(model::NetstackSource::kLinks) &&
        (!vx || vx->ifindex != static_cast<int>(o->vxlan_ifindex))) {
      const Interface* target = ns.FindInterfaceByIndex(static_cast<int>(o->vxlan_ifindex));
      if (!target) {
        ctx.Suspect(hop, Level::kFatal, "link_missing",
                    absl::StrCat("the overlay config of ", w.node_name, " names VXLAN ifindex ",
                                 o->vxlan_ifindex, " which does not exist",
                                 vx ? absl::StrCat(" (", kVxlanDev, " is ifindex ", vx->ifindex, ")")
                                    : std::string(),
                                 ": from_container's redirect fails (REDIRECT_FAILED)"));
        out.kind = Outcome::Kind::kAction;
        out.action = PluginAction::Stop();
        return out;
      }
    }
    if (!CheckUnderlay(ctx, w, hop, *t)) {
      out.kind = Outcome::Kind::kAction;
      out.action = PluginAction::Stop();
      return out;
    }
    const Interface* up = Uplink(w);
    if (pod_mtu && up && up->mtu && pod_mtu + kVxlanOverhead > up->mtu) {
      ctx.Suspect(hop, Level::kWarning, "overlay_mtu_too_big",
                  absl::StrCat("pod MTU ", pod_mtu, " + ", kVxlanOverhead, " (VXLAN) = ",
                               pod_mtu + kVxlanOverhead, " exceeds the MTU ", up->mtu, " of the uplink ",
                               up->name, " on ", w.node_name,
                               ": full-size pod packets are fragmented on the underlay (the tunnel "
                               "key sets no DF); in tunnel mode the pod MTU must be <= ",
                               up->mtu - kVxlanOverhead,
                               " (sarenad derives it from the uplink: was the uplink MTU lowered "
                               "after the pod was created?)"));
    }
    // The host stack's route for the CIDR (node -> pod, Service backends, replies through the
    // host) is checked too: from_container does not use it, other traffic does. Without the
    // node's routes the check is not made (absent data is never evidence).
    model::Flow fl;
    fl.dst = p.packet.dst;
    const bool check_route =
        !t->node_address() &&
        ctx.Need(w, hop, SnapshotInput::kRoutes, "the host route to a tunnel peer's pod CIDR");
    model::RouteResult r = check_route ? ns.Lookup(fl) : model::RouteResult{};
    if (check_route && (!r.ok() || r.oif != kVxlanDev)) {
      ctx.Suspect(hop, Level::kWarning, "remote_cidr_misrouted",
                  absl::StrCat(t->cidr.to_string(), " (tunnel peer, node id ", t->node_id,
                               ") is routed ", r.ok() ? absl::StrCat("via ", r.ToString())
                                                      : absl::StrCat("nowhere (", r.ToString(), ")"),
                               " on ", w.node_name,
                               ": pod-to-pod traffic is tunnelled by from_container anyway, but "
                               "traffic the host stack routes (node -> pod, Service backends, "
                               "replies through the host) does not reach the tunnel; sarenad "
                               "installs '", ExpectedRoute(w, *t), "'"));
    }
    out.kind = Outcome::Kind::kAction;
    out.action = EncapTo(w, *t, p.packet,
                         absl::StrCat("from_container: tunnel to node id ", t->node_id));
    out.action.decrement_ttl = true;
    return out;
  }
  if (t->mode != SarenaMode::kNative) return out;
  if (!o->native() || o->uplink_ifindex == 0) {
    ctx.Suspect(hop, Level::kWarning, "remote_cidr_misrouted",
                absl::StrCat("native entry ", EntryText(*t), " but the overlay config of ",
                             w.node_name,
                             " has native routing off: from_container passes the packet to the "
                             "host stack"));
    return out;
  }
  // bpf_fib_lookup decides where the packet goes: without the node's routes the path ends
  // unchecked (snapshot_incomplete), never a guessed fib_lookup_failed.
  if (!ctx.Need(w, hop, SnapshotInput::kRoutes, "bpf_fib_lookup (native routing)",
                Absent::kEnd)) {
    out.kind = Outcome::Kind::kAction;
    out.action = PluginAction::Stop();
    return out;
  }
  const Interface* up = Uplink(w);
  // bpf_fib_lookup with params->ifindex = the uplink (flowi4_iif): the FIB as the uplink sees it.
  model::Flow fl;
  fl.dst = p.packet.dst;
  fl.src = p.packet.src;
  if (up) fl.iif = up->name;
  fl.proto = p.packet.proto;
  fl.sport = p.packet.sport;
  fl.dport = p.packet.dport;
  model::RouteResult r = ns.Lookup(fl);
  if (!r.ok() || r.type == model::RouteType::kLocal) {
    std::string why = r.ok() ? std::string("a local route") : r.ToString();
    ctx.Suspect(hop, Level::kFatal, "fib_lookup_failed",
                absl::StrCat("from_container (native): bpf_fib_lookup for ", p.packet.dst.to_string(),
                             " on ", w.node_name, " finds ", why,
                             ": dropped (FIB_LOOKUP_FAILED)"));
    ctx.Suspect(hop, Level::kFatal, "remote_cidr_misrouted",
                absl::StrCat("native peer CIDR ", t->cidr.to_string(), " has no route on ",
                             w.node_name, " (", r.ToString(),
                             " answers, e.g. the cluster CIDR's unreachable route); sarenad "
                             "installs '", ExpectedRoute(w, *t), "'"));
    out.kind = Outcome::Kind::kAction;
    out.action = PluginAction::Stop();
    return out;
  }
  const Interface* oif = ns.FindInterface(r.oif);
  // BPF_FIB_LKUP_RET_FWD_DISABLED (forwarding off on the uplink): TC_ACT_OK, the host stack
  // routes the packet.
  if (up && ns.Has(model::NetstackSource::kSysctls) &&
      ns.sysctls().Forwarding(up->name).known && ns.sysctls().Forwarding(up->name).value == 0) {
    ctx.Suspect(hop, Level::kInfo, "bpf",
                absl::StrCat("from_container (native): forwarding is off on ", up->name,
                             ", bpf_fib_lookup answers FWD_DISABLED: passed to the host stack"));
    return out;
  }
  // bpf_fib_lookup runs with tot_len 0 (bpf/lib/overlay.h): after a successful lookup (the
  // next hop's neighbour is known) the kernel checks the skb against the egress MTU
  // (is_skb_forwardable) and answers FRAG_NEEDED -> TC_ACT_OK, the host stack; without a
  // neighbour (NO_NEIGH -> bpf_redirect_neigh) nothing checks it before the device.
  if (pod_mtu && oif && oif->mtu && pod_mtu > oif->mtu) {
    const model::Neighbor* n = ns.FindNeighbor(r.gateway.value_or(p.packet.dst), oif->name);
    if (n && n->Usable()) {
      ctx.Suspect(hop, Level::kInfo, "bpf",
                  absl::StrCat("from_container (native): full-size packets (", pod_mtu,
                               " bytes) exceed ", oif->name, "'s MTU ", oif->mtu,
                               ": bpf_fib_lookup answers FRAG_NEEDED, passed to the host stack"));
      return out;
    }
  }
  if (r.oif == kVxlanDev) {
    ctx.Suspect(hop, Level::kWarning, "remote_cidr_misrouted",
                absl::StrCat("native peer CIDR ", t->cidr.to_string(), " is routed onto ", kVxlanDev,
                             " on ", w.node_name, " (", r.ToString(),
                             "): the packets are encapsulated by to_overlay instead of routed "
                             "natively; sarenad installs '",
                             ExpectedRoute(w, *t), "'"));
    if (!CheckUnderlay(ctx, w, hop, *t)) {
      out.kind = Outcome::Kind::kAction;
      out.action = PluginAction::Stop();
      return out;
    }
    out.kind = Outcome::Kind::kAction;
    out.action = EncapTo(w, *t, p.packet,
                         "from_container (native): FIB -> sarena_vxlan, to_overlay sets the key");
    out.action.decrement_ttl = true;
    return out;
  }
  if (up && r.oif != up->name) {
    ctx.Suspect(hop, Level::kWarning, "remote_cidr_misrouted",
                absl::StrCat("native peer CIDR ", t->cidr.to_string(), " is routed via ", r.oif,
                             " on ", w.node_name, " (", r.ToString(), "), not the uplink ",
                             up->name, "; sarenad installs '", ExpectedRoute(w, *t), "'"));
  }
  if (r.gateway && *r.gateway != t->underlay) {
    ctx.Suspect(hop, Level::kWarning, "stale_underlay",
                absl::StrCat("native entry ", EntryText(*t), " but the route on ", w.node_name,
                             " goes via ", r.gateway->to_string(),
                             ": the route and the tunnel map disagree on the peer's address"));
  } else if (!r.gateway) {
    ctx.Suspect(hop, Level::kWarning, "remote_cidr_misrouted",
                absl::StrCat("native peer CIDR ", t->cidr.to_string(), " has an on-link route (",
                             r.ToString(), ") on ", w.node_name,
                             ": the pods' addresses are resolved by ARP on ", r.oif,
                             " instead of going via the peer ", t->underlay.to_string()));
  }
  CheckUnderlay(ctx, w, hop, *t);
  out.kind = Outcome::Kind::kAction;
  out.action.kind = PluginAction::Kind::kRedirect;
  out.action.oif = r.oif;
  out.action.nexthop = r.gateway;
  out.action.decrement_ttl = true;
  out.action.label = absl::StrCat("from_container: native to node id ", t->node_id,
                                  " (bpf_fib_lookup + redirect)");
  out.action.peer_expectation = Expectation(w, *t, p.packet, /*tunnel=*/false);
  return out;
}

Outcome ToOverlay(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                  const HookPacket& p, const AttachedFn& attached) {
  Outcome out;
  out.kind = Outcome::Kind::kAction;
  const model::SarenaOverlay* o = OverlayOf(w);
  if (attached(w, kVxlanDev, "egress", "to_overlay") == Attach::kNo) {
    ctx.Suspect(hop, Level::kFatal, "program_not_attached",
                absl::StrCat("to_overlay is not attached to ", kVxlanDev, " (TCX egress) on ",
                             w.node_name, ": the collect-metadata device gets no tunnel key for ",
                             p.packet.dst.to_string(), " and drops it"));
    out.action = PluginAction::Stop();
    return out;
  }
  if (!o) {
    ctx.Suspect(hop, Level::kFatal, "tunnel_entry_missing",
                absl::StrCat("the host routes ", p.packet.dst.to_string(), " onto ", kVxlanDev,
                             " on ", w.node_name,
                             " but the overlay config is empty (one-node mode): to_overlay "
                             "passes it without a tunnel key and the collect-metadata device "
                             "drops it"));
    out.action = PluginAction::Stop();
    return out;
  }
  const SarenaTunnel* t = ClusterOf(w)->LookupTunnel(p.packet.dst);
  if (!t) {
    ctx.Suspect(hop, Level::kFatal, "tunnel_entry_missing",
                absl::StrCat("the host routes ", p.packet.dst.to_string(), " onto ", kVxlanDev,
                             " on ", w.node_name,
                             " but the tunnel map has no entry for it: to_overlay drops it "
                             "(NO_TUNNEL_ENDPOINT); the route exists without its peer"));
    out.action = PluginAction::Stop();
    return out;
  }
  if (t->mode == SarenaMode::kNative) {
    ctx.Suspect(hop, Level::kWarning, "remote_cidr_misrouted",
                absl::StrCat("native peer CIDR ", t->cidr.to_string(), " is routed onto ",
                             kVxlanDev, " on ", w.node_name,
                             ": to_overlay encapsulates it anyway; sarenad installs '",
                             ExpectedRoute(w, *t), "'"));
  }
  if (!CheckUnderlay(ctx, w, hop, *t)) {
    out.action = PluginAction::Stop();
    return out;
  }
  out.action = EncapTo(w, *t, p.packet, "to_overlay: tunnel key from the tunnel map");
  out.action.check_device_mtu = true;
  return out;
}

Outcome FromOverlay(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                    const HookPacket& p, const AttachedFn& attached) {
  Outcome out;
  if (attached(w, kVxlanDev, "ingress", "from_overlay") == Attach::kNo) {
    ctx.Suspect(hop, Level::kFatal, "program_not_attached",
                absl::StrCat("from_overlay is not attached to ", kVxlanDev, " (TCX ingress) on ",
                             w.node_name,
                             ": the decapsulated frame keeps the sender's inner MAC, the kernel "
                             "classifies it PACKET_OTHERHOST and ip_rcv discards it"));
    out.kind = Outcome::Kind::kAction;
    out.action = PluginAction::Stop();
    return out;
  }
  const model::SarenaOverlay* o = OverlayOf(w);
  if (!o || !p.outer) {
    ctx.Suspect(hop, Level::kInfo, "bpf",
                absl::StrCat("from_overlay on ", w.node_name,
                             ": no overlay config (one-node mode), passed (fail open)"));
    return out;
  }
  const model::SarenaCluster& c = *ClusterOf(w);
  const net::Ipv4 remote = p.outer->src;
  out.kind = Outcome::Kind::kAction;
  const model::SarenaPeer* peer = c.FindPeer(remote);
  if (!peer) {
    std::string hint;
    const model::NodeState* sender = NodeWithAddress(ctx, remote, w.node_name);
    if (sender && sender->sarena_cluster && sender->sarena_cluster->overlay) {
      uint32_t id = sender->sarena_cluster->overlay->node_id;
      for (const model::SarenaPeer& e : c.peers) {
        if (e.node_id == id) {
          hint = absl::StrCat("; the peer map has ", sender->name, " (node id ", id, ") at ",
                              e.underlay.to_string(), ", a stale underlay address");
        }
      }
    }
    ctx.Suspect(hop, Level::kFatal, "unknown_peer",
                absl::StrCat("from_overlay on ", w.node_name, ": VXLAN from ", remote.to_string(),
                             ", which is not in the peer map: dropped (UNKNOWN_PEER)", hint));
    out.action = PluginAction::Stop();
    return out;
  }
  if (p.vni && *p.vni != o->vni) {
    ctx.Suspect(hop, Level::kFatal, "wrong_vni",
                absl::StrCat("from_overlay on ", w.node_name, ": VXLAN from ", remote.to_string(),
                             " carries VNI ", *p.vni, " but this node's is ", o->vni,
                             ": dropped (WRONG_VNI)"));
    out.action = PluginAction::Stop();
    return out;
  }
  if (p.packet.src != remote) {
    const SarenaTunnel* src = c.LookupTunnel(p.packet.src);
    if (!src || src->node_id != peer->node_id) {
      ctx.Suspect(hop, Level::kFatal, "overlay_source_mismatch",
                  absl::StrCat("from_overlay on ", w.node_name, ": inner source ",
                               p.packet.src.to_string(), " from peer ", remote.to_string(),
                               " (node id ", peer->node_id, ") is ",
                               src ? absl::StrCat("in ", src->cidr.to_string(), " of node id ",
                                                  src->node_id)
                                   : std::string("in no tunnel-map CIDR"),
                               ": dropped (OVERLAY_SOURCE_MISMATCH)"));
      out.action = PluginAction::Stop();
      return out;
    }
  }
  out.kind = Outcome::Kind::kAccept;
  return out;
}

Outcome FromNetdev(const PluginContext& ctx, const Where& w, absl::string_view iif,
                   PathGraph::Vertex hop, const HookPacket& p) {
  Outcome out;
  const model::SarenaOverlay* o = OverlayOf(w);
  if (!o || !o->native()) return out;
  const Interface* up = Uplink(w);
  if (!up || up->name != iif) return out;
  if (!ClusterOf(w)->LookupTunnel(p.packet.src)) return out;
  (void)ctx;
  (void)hop;
  out.kind = Outcome::Kind::kAccept;
  return out;
}

void CheckRemoteRoute(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                      const HookPacket& p, const model::RouteResult& route) {
  const model::SarenaOverlay* o = OverlayOf(w);
  if (!o) return;
  const model::SarenaCluster& c = *ClusterOf(w);
  if (InCidr(c.pod_cidr, p.packet.dst)) return;
  const SarenaTunnel* t = c.LookupTunnel(p.packet.dst);
  const Interface* up = Uplink(w);
  if (t && t->node_address()) return;  // a peer's own address: routed on the uplink by design
  if (!t) {
    if (InCidr(o->cluster_cidr, p.packet.dst) && route.oif != kVxlanDev) {
      ctx.Suspect(hop, Level::kWarning, "tunnel_entry_missing",
                  absl::StrCat("the host routes ", p.packet.dst.to_string(), " (cluster CIDR) via ",
                               route.ToString(), " on ", w.node_name,
                               " but the tunnel map has no entry for it: the route exists "
                               "without its peer (pods' packets take the host stack)"));
    }
    return;
  }
  if (t->mode == SarenaMode::kTunnel && route.oif != kVxlanDev) {
    ctx.Suspect(hop, Level::kWarning, "remote_cidr_misrouted",
                absl::StrCat(t->cidr.to_string(), " (tunnel peer, node id ", t->node_id,
                             ") is routed via ", route.ToString(), " on ", w.node_name,
                             ", not onto ", kVxlanDev,
                             ": the host stack sends it unencapsulated; sarenad installs '",
                             ExpectedRoute(w, *t), "'"));
  } else if (t->mode == SarenaMode::kNative && route.oif != kVxlanDev && up &&
             route.oif != up->name) {
    ctx.Suspect(hop, Level::kWarning, "remote_cidr_misrouted",
                absl::StrCat("native peer CIDR ", t->cidr.to_string(), " is routed via ",
                             route.ToString(), " on ", w.node_name, ", not the uplink ", up->name,
                             "; sarenad installs '", ExpectedRoute(w, *t), "'"));
  }
  // native onto sarena_vxlan: reported by ToOverlay.
}

void ExplainRouteFailure(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                         const HookPacket& p, const model::RouteResult& route) {
  const model::SarenaOverlay* o = OverlayOf(w);
  if (!o) return;
  const model::SarenaCluster& c = *ClusterOf(w);
  for (const SarenaTunnel& t : c.tunnels) {
    if (t.underlay != p.packet.dst) continue;
    ctx.Suspect(hop, Level::kFatal, "stale_underlay",
                absl::StrCat("tunnel entry ", EntryText(t), " on ", w.node_name,
                             ": no underlay route reaches ", t.underlay.to_string(), " (",
                             route.ToString(), "): a stale or wrong underlay address"));
    return;
  }
  if (InCidr(c.pod_cidr, p.packet.dst)) return;
  if (const SarenaTunnel* t = c.LookupTunnel(p.packet.dst); t && !t->node_address()) {
    ctx.Suspect(hop, Level::kFatal, "remote_cidr_misrouted",
                absl::StrCat("the tunnel map sends ", EntryText(*t), " but ", w.node_name,
                             " has no route for it (", route.ToString(),
                             " answers: the cluster CIDR's unreachable route or none): traffic "
                             "the host stack routes fails; sarenad installs '",
                             ExpectedRoute(w, *t), "'"));
    return;
  }
  if (!InCidr(o->cluster_cidr, p.packet.dst)) return;
  // Neither an entry nor a route: which node should own it?
  std::string owner;
  if (ctx.snapshot->node_names().size() <= kMaxNodesSearched) {
    for (const std::string& n : ctx.snapshot->node_names()) {
      if (n == w.node_name) continue;
      auto st = ctx.snapshot->Node(n);
      if (st.ok() && (*st)->sarena_cluster && InCidr((*st)->sarena_cluster->pod_cidr, p.packet.dst)) {
        owner = absl::StrCat(" (node ", n, " owns ", (*st)->sarena_cluster->pod_cidr->to_string(),
                             ")");
      }
    }
  }
  ctx.Suspect(hop, owner.empty() ? Level::kWarning : Level::kFatal, "tunnel_entry_missing",
              absl::StrCat(p.packet.dst.to_string(), " is in the cluster CIDR ",
                           o->cluster_cidr->to_string(), owner, " but ", w.node_name,
                           " has neither a tunnel-map entry nor a route for it: the cluster "
                           "CIDR's unreachable route answers (has this node learnt the peer?)"));
}

void CheckNode(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
               const AttachedFn& attached) {
  const model::Netstack& ns = w.node->netstack;
  const Interface* vx = ns.FindInterface(kVxlanDev);
  const model::SarenaCluster* c = ClusterOf(w);
  if (!c) {
    if (vx) {
      ctx.Suspect(hop, Level::kInfo, "file_missing",
                  absl::StrCat("cannot check the cluster datapath: ", kVxlanDev,
                               " exists but file ",
                               model::NodePath(w.node_name, model::kSarenaClusterFile),
                               " is missing"));
    }
    return;
  }
  const model::SarenaOverlay* o = OverlayOf(w);
  if (!o) return;
  const Interface* up = Uplink(w);
  if (ns.Has(model::NetstackSource::kLinks) && !up) {
    ctx.Suspect(hop, Level::kWarning, "link_missing",
                absl::StrCat("the overlay config of ", w.node_name, " names uplink ifindex ",
                             o->uplink_ifindex, " which does not exist"));
  }
  if (o->tunnel() && ns.Has(model::NetstackSource::kLinks)) {
    if (!vx) {
      ctx.Suspect(hop, Level::kWarning, "link_missing",
                  absl::StrCat(kVxlanDev, " does not exist on ", w.node_name,
                               " although the overlay config is in tunnel mode"));
    } else {
      if (!vx->admin_up || !vx->CanTransmit()) {
        ctx.Suspect(hop, Level::kWarning, "link_down",
                    absl::StrCat(kVxlanDev, " is down on ", w.node_name));
      }
      if (up && up->mtu && vx->mtu + kVxlanOverhead > up->mtu) {
        ctx.Suspect(hop, Level::kWarning, "overlay_mtu_too_big",
                    absl::StrCat(kVxlanDev, " MTU ", vx->mtu, " + ", kVxlanOverhead, " exceeds the uplink ",
                                 up->name, " MTU ", up->mtu, " on ", w.node_name,
                                 ": encapsulated full-size packets are fragmented; it should be ",
                                 up->mtu - kVxlanOverhead));
      }
      for (auto [dir, prog] : {std::pair<const char*, const char*>{"ingress", "from_overlay"},
                               {"egress", "to_overlay"}}) {
        if (attached(w, kVxlanDev, dir, prog) == Attach::kNo) {
          ctx.Suspect(hop, Level::kWarning, "program_not_attached",
                      absl::StrCat(prog, " is not attached to ", kVxlanDev, " (TCX ", dir,
                                   ") on ", w.node_name));
        }
      }
    }
  }
  if (o->native() && up && attached(w, up->name, "ingress", "from_netdev") == Attach::kNo) {
    ctx.Suspect(hop, Level::kInfo, "program_not_attached",
                absl::StrCat("from_netdev is not attached to the uplink ", up->name, " on ",
                             w.node_name,
                             ": native traffic from peers takes the host stack (it still "
                             "arrives)"));
  }
}

}  // namespace sarena::diag::sarena_cluster
