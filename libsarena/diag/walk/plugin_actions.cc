// The plugin's actions (PluginAction): HandlePluginAction, delivery to a pod
// (DeliverToPod), encapsulation with a tunnel key (EncapsulateWithKey), redirect (Redirect).
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag::internal {

// Nullopt when the walk goes on here; else the steps that follow (none: the packet stops; or
// delivered elsewhere).
absl::StatusOr<std::optional<Next>> Walker::HandlePluginAction(const Where& w, Vertex v,
                                                               const PluginAction& a, Flight& f,
                                                               Branch& br, std::string* iif) {
  if (a.record_host_flow) br.host_flows.push_back(*a.record_host_flow);
  // A forwarding action (decrement_ttl) drops the packet when its TTL would reach 0.
  auto ttl_expires = [&]() {
    if (!a.decrement_ttl) return false;
    if (f.pkt.ttl <= 1) {
      Drop(v, "ttl_exceeded",
           absl::StrCat("TTL ", f.pkt.ttl, " expires at ", w.node_name, " (", a.label, ")"));
      return true;
    }
    --f.pkt.ttl;
    return false;
  };
  switch (a.kind) {
    case PluginAction::Kind::kContinue:
      return std::nullopt;
    case PluginAction::Kind::kStop:
      graph_.hop(v).action = HopAction::kDrop;
      return Done();
    case PluginAction::Kind::kReenterHost:
      *iif = a.iif;
      graph_.hop(v).iif = a.iif;
      return std::nullopt;
    case PluginAction::Kind::kEncapsulate:
    case PluginAction::Kind::kRedirect: {
      if (ttl_expires()) return Done();
      graph_.hop(v).packet = f.pkt;
      return Then(ActionStep{a.kind == PluginAction::Kind::kEncapsulate
                                 ? ActionStep::Stage::kEncapsulateWithKey
                                 : ActionStep::Stage::kRedirect,
                             w, v, a, std::move(f), std::move(br)});
    }
    case PluginAction::Kind::kDeliverToPod: {
      if (a.pod == nullptr) {
        // A plugin bug, not a finding about the network: the trace fails (sarena-diag exits 2).
        return absl::InternalError(
            absl::StrCat("plugin ", plugin_.name(), ": action kDeliverToPod",
                         a.label.empty() ? "" : absl::StrCat(" (", a.label, ")"), " at ",
                         w.in_pod() ? absl::StrCat("pod ", w.pod->Key()) : w.node_name,
                         " names no pod to deliver ", Tuple(f.pkt), " to"));
      }
      if (ttl_expires()) return Done();
      graph_.hop(v).packet = f.pkt;
      SARENA_ASSIGN_OR_RETURN(Where pw, topo_.PodRef(*a.pod));
      const Interface* host = nullptr;
      if (pw.ns) {
        // The host-side device for the hop's oif: the veth whose peer is the pod's ifname.
        const Interface* pi = pw.ns->netstack.FindInterface(a.pod_ifname);
        if (pi && pi->link_index && w.ns)
          host = w.ns->netstack.FindInterfaceByIndex(*pi->link_index);
      }
      if (host) graph_.hop(v).oif = host->name;
      return Then(
          DeliverToPodStep{a.pod, a.pod_ifname, std::move(f), std::move(br), Prev{v, a.label}, a});
    }
  }
  return std::nullopt;
}

absl::StatusOr<Next> Walker::DeliverToPod(DeliverToPodStep& s) {
  SARENA_ASSIGN_OR_RETURN(Where pw, topo_.PodRef(*s.pod));
  if (s.action.at_target.empty() && !s.action.drop_at_target) {
    return Then(ReceiveStep{pw, s.ifname, std::move(s.f), std::move(s.br), s.prev});
  }
  Hop h;
  h.kind = HopKind::kPod;
  h.id = HopId(pw, s.f.reply);
  h.node = pw.node_name;
  h.iif = s.ifname;
  h.action = HopAction::kForward;
  h.packet = s.f.pkt;
  h.reply = s.f.reply;
  Vertex v = AddHop(std::move(h), s.prev);
  NoteSharedPodIp(pw, v, s.f);
  for (const Suspicion& s : s.action.at_target) Suspect(v, s.level, s.code, s.message);
  if (s.action.drop_at_target) {
    graph_.hop(v).action = HopAction::kDrop;
    return Done();
  }
  if (pw.ns == nullptr) {
    return Then(LocalStep{LocalStep::Stage::kServe, pw, v, std::move(s.f), std::move(s.br)});
  }
  return Then(
      InputStep{InputStep::Stage::kIngress, pw, v, s.ifname, std::move(s.f), std::move(s.br)});
}

absl::StatusOr<Next> Walker::EncapsulateWithKey(ActionStep& s) {
  const Netstack& ns = s.w.ns->netstack;
  const Interface* tun = ns.FindInterface(s.a.tunnel_dev);
  graph_.hop(s.v).oif = s.a.tunnel_dev;
  if (tun == nullptr && !Need(s.w, s.v, SnapshotInput::kLinks, "links")) {
    // No link data: the device's absence is unknown, not proven.
    Suspect(s.v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat(s.a.label, ": cannot check tunnel device ", s.a.tunnel_dev, " on ",
                         s.w.node_name, " (no link data): the path beyond cannot be checked"));
    return Done();
  }
  if (tun == nullptr) {
    Drop(s.v, "link_missing",
         absl::StrCat(s.a.label, ": tunnel device ", s.a.tunnel_dev, " does not exist on ",
                      s.w.node_name));
    return Done();
  }
  if (!tun->admin_up || !tun->CanTransmit()) {
    Drop(s.v, "link_down",
         absl::StrCat("tunnel device ", tun->name, " is down on ", s.w.node_name, ": ", s.a.label,
                      " cannot send"));
    return Done();
  }
  if (s.a.check_device_mtu &&
      !CheckSize(s.v, s.f, tun->mtu, tun->mtu, [&] { return DeviceMtuFlag(s.v, *tun); })) {
    return Done();
  }
  const PluginAction::TunnelKey& key = *s.a.tunnel_key;
  Packet outer;
  outer.dst = key.remote;
  outer.proto = model::kProtoUdp;
  outer.dport = tun->vxlan ? tun->vxlan->port : 8472;
  outer.sport = 0;
  outer.ttl = 64;
  s.f.vni = key.vni;
  s.f.peer_expectation = s.a.peer_expectation;
  std::string label = absl::StrCat(s.a.label, ": vxlan ", tun->name, " vni ", key.vni);
  return Then(SendOuterStep{s.w, s.v, tun, "vxlan", kVxlanOverhead, outer,
                            tun->vxlan ? tun->vxlan->local : std::nullopt, !key.dont_fragment,
                            std::move(s.f), std::move(s.br), std::move(label)});
}

absl::StatusOr<Next> Walker::Redirect(ActionStep& s) {
  const Netstack& ns = s.w.ns->netstack;
  const Interface* oif = ns.FindInterface(s.a.oif);
  graph_.hop(s.v).oif = s.a.oif;
  if (oif == nullptr && !Need(s.w, s.v, SnapshotInput::kLinks, "links")) {
    Suspect(s.v, Level::kWarning, "snapshot_incomplete",
            absl::StrCat(s.a.label, ": cannot check device ", s.a.oif,
                         " (no link data): the path beyond cannot be checked"));
    return Done();
  }
  if (oif == nullptr) {
    Drop(s.v, "link_missing", absl::StrCat(s.a.label, ": device ", s.a.oif, " does not exist"));
    return Done();
  }
  if (!oif->admin_up || !oif->CanTransmit()) {
    Drop(s.v, "link_down", absl::StrCat(s.a.label, ": ", oif->name, " is down"));
    return Done();
  }
  // bpf_fib_lookup checks the MTU (BPF_FIB_LKUP_RET_FRAG_NEEDED) and the program hands such a
  // packet to the host stack, which sends ICMP fragmentation-needed for DF packets.
  if (!CheckSize(s.v, s.f, oif->mtu, oif->mtu, [&] { return DeviceMtuFlag(s.v, *oif); })) {
    return Done();
  }
  s.f.peer_expectation = s.a.peer_expectation;
  net::Ipv4 nh = s.a.nexthop.value_or(s.f.pkt.dst);
  CheckNeighbor(s.w, s.v, *oif, s.a.nexthop);
  return Then(LinkStep{LinkStep::Stage::kUnderlay, s.w, s.v, oif, nh, std::move(s.f),
                       std::move(s.br),
                       absl::StrCat(s.a.label, ": ", oif->name, " via ", nh.to_string())});
}

}  // namespace sarena::diag::internal
