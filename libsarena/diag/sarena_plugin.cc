// The sarena plugin: the eBPF datapath of this project (bpf/from_container.bpf.c,
// bpf/from_host.bpf.c, bpf/lib/local_delivery.h) as the walk must model it.
//
//   from_container (TCX ingress of each lxc veth):
//     source not this veth's endpoint (no entry, or entry on another ifindex) -> drop (spoofed);
//     destination a local endpoint, not the reply of a host flow -> local_delivery;
//     anything else -> passed to the kernel: it enters the host stack on the lxc veth (the
//     endpoint route <pod IP>/32 dev lxc makes strict rp_filter accept it); a packet opening a
//     flow toward a non-endpoint is recorded as a host flow (its replies cross the host too).
//   Host stack -> pod: the endpoint route sends it out of the lxc veth (no program involved).
//   from_host (TCX egress of sarena_host; only pod-CIDR addresses without endpoint route):
//     destination a local endpoint -> local_delivery; inside the node pod CIDR without
//     endpoint -> drop; else pass.
//   local_delivery: TTL <= 1 dropped, TTL - 1, destination MAC = the RECORDED pod MAC, redirect
//     to the recorded ifindex. A recorded MAC that is no longer the pod's is discarded by the pod
//     kernel (PACKET_OTHERHOST) — the failure of cilium/cilium#8304 (EBPF-01).
//
// Across nodes (sarena_cluster.h): from_container's tunnel / native branch, to_overlay on
// sarena_vxlan egress, from_overlay on its ingress, from_netdev on the uplink.
//
// Inputs: nodes/<node>/sarena-endpoints.json (`sarena endpoint list -o json`),
// nodes/<node>/sarena-programs.json and nodes/<node>/sarena-cluster.json (docs/diag-snapshot.md).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/sarena_cluster.h"
#include "libsarena/model/proto_json.h"
#include "libsarena/model/sarena_node.pb.h"
#include "libsarena/model/snapshot_layout.h"

namespace sarena::diag {
namespace {

using model::Interface;
using model::SarenaEndpoint;

constexpr absl::string_view kHostDev = "sarena_host";
constexpr absl::string_view kNetDev = "sarena_net";

struct Program {
  std::string ifname;
  int ifindex = 0;
  std::string direction;  // "ingress" | "egress"
  std::string mode;       // "tcx" | "tc"
  std::string prog;
  int64_t id = 0;
};

enum class Attached { kYes, kNo, kUnknown };

struct NodeData {
  const std::vector<SarenaEndpoint>* endpoints = nullptr;  // null: file missing
  std::optional<std::vector<Program>> programs;            // nullopt: file missing
};

// True when `p` goes to the opener of host flow `f` (bpf: sarena_flow_key_dst == key_src).
bool RepliesTo(const Packet& p, const Packet& f) {
  return p.dst == f.src && p.dport == f.sport && p.proto == f.proto;
}

class SarenaPlugin : public Plugin {
 public:
  absl::string_view name() const override { return "sarena"; }
  absl::Status error() const override { return error_; }

  void CheckNode(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop) override {
    const NodeData& d = Data(ctx, w);
    const model::Netstack& ns = w.node->netstack;
    if (!d.endpoints && !w.node->sarena_cluster && !ns.FindInterface(kHostDev) &&
        !ns.FindInterface(sarena_cluster::kVxlanDev) && ns.Has(model::NetstackSource::kLinks)) {
      // A host of the path that runs no sarena (a router between node subnets, a gateway): only
      // the kernel's path is checked there.
      ctx.Suspect(hop, Level::kInfo, "bpf",
                  absl::StrCat(w.node_name, " runs no sarena datapath (no sarena_host, no "
                               "sarena files): only the kernel's path is checked there"));
      return;
    }
    if (!d.endpoints) {
      ctx.Suspect(hop, Level::kInfo, "file_missing",
                  absl::StrCat("cannot check the endpoint map: file ",
                               model::NodePath(w.node_name, model::kSarenaEndpointsFile),
                               " missing"));
    }
    if (!d.programs) {
      ctx.Suspect(hop, Level::kInfo, "file_missing",
                  absl::StrCat("cannot check attached programs: file ",
                               model::NodePath(w.node_name, model::kSarenaProgramsFile),
                               " missing"));
    }
    if (ns.Has(model::NetstackSource::kLinks)) {
      for (absl::string_view dev : {kHostDev, kNetDev}) {
        const Interface* i = ns.FindInterface(dev);
        if (!i) {
          ctx.Suspect(hop, Level::kWarning, "link_missing",
                      absl::StrCat(dev, " does not exist on ", w.node_name,
                                   ": the sarena host device pair is not set up"));
        } else if (!i->admin_up || !i->CanTransmit()) {
          ctx.Suspect(hop, Level::kWarning, "link_down",
                      absl::StrCat(dev, " is down on ", w.node_name));
        }
      }
    }
    // The node pod CIDR must be routed through sarena_host (checked at an address without an
    // endpoint route).
    const model::Node* k = ctx.cluster->FindNode(w.node_name);
    if (k && ns.Has(model::NetstackSource::kRoutes)) {
      for (const auto& cidr : k->pod_cidrs) {
        model::Flow fl;
        fl.dst = net::Ipv4(cidr.network().to_uint() + 2);
        for (uint32_t i = 2; i < 256 && (Find(d, fl.dst) || ctx.cluster->FindPodByIp(fl.dst)) &&
                             net::Contains(cidr, net::Ipv4(cidr.network().to_uint() + i + 1));
             ++i) {
          fl.dst = net::Ipv4(cidr.network().to_uint() + i + 1);
        }
        model::RouteResult r = ns.Lookup(fl);
        if (!r.ok() || (r.oif != kHostDev && r.type != model::RouteType::kLocal)) {
          ctx.Suspect(hop, Level::kWarning, "route_mismatch",
                      absl::StrCat("pod CIDR ", cidr.to_string(), " of ", w.node_name,
                                   " is not routed via sarena_host (",
                                   r.ok() ? r.ToString() : std::string("no route"), ")"));
        }
      }
    }
    if (d.programs && ns.FindInterface(kHostDev) &&
        IsAttached(d, ns, kHostDev, "egress", "from_host") == Attached::kNo) {
      ctx.Suspect(hop, Level::kWarning, "program_not_attached",
                  absl::StrCat("from_host is not attached to sarena_host egress on ", w.node_name));
    }
    // Every endpoint needs its endpoint route: without it node -> pod falls back to sarena_host
    // and from_host, and the pod's packets entering on the lxc veth fail strict rp_filter.
    if (d.endpoints && ns.Has(model::NetstackSource::kRoutes)) {
      for (const SarenaEndpoint& e : *d.endpoints) {
        if (!e.ip || e.host_ifname.empty() || !ns.FindInterface(e.host_ifname)) continue;
        model::Flow fl;
        fl.dst = *e.ip;
        model::RouteResult r = ns.Lookup(fl);
        if (!r.ok() || r.oif != e.host_ifname) {
          ctx.Suspect(hop, Level::kWarning, "route_mismatch",
                      absl::StrCat("no endpoint route ", e.ip->to_string(), "/32 dev ",
                                   e.host_ifname, " on ", w.node_name, " (",
                                   r.ok() ? r.ToString() : std::string("no route"),
                                   "): host traffic to the pod falls back to sarena_host, and "
                                   "strict rp_filter drops the pod's packets to the host"));
        }
      }
    }
    // The blog seed's bug: strict rp_filter on the lxc veths. Harmless while the endpoint
    // routes exist (the reverse path of a pod IP is its lxc veth); reported for context.
    if (d.endpoints && ns.Has(model::NetstackSource::kSysctls)) {
      std::vector<std::string> strict;
      for (const SarenaEndpoint& e : *d.endpoints) {
        if (e.host_ifname.empty() || !ns.FindInterface(e.host_ifname)) continue;
        if (ns.sysctls().RpFilter(e.host_ifname).value == 1) strict.push_back(e.host_ifname);
      }
      if (!strict.empty()) {
        ctx.Suspect(hop, Level::kInfo, "rp_filter",
                    absl::StrCat("strict rp_filter on ", strict.size(), " lxc veth(s) (e.g. ",
                                 strict.front(),
                                 "): harmless while each pod IP is routed to its own lxc veth "
                                 "(endpoint routes); fatal without them"));
      }
    }
    sarena_cluster::CheckNode(ctx, w, hop, AttachedFn(ctx));
  }

  PluginAction AfterRoute(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                          const HookPacket& p, const model::RouteResult& route) override {
    // Both read the route the walk found: without the node's routes there is none to judge.
    if (w.node && !w.in_pod() &&
        ctx.Need(w, hop, SnapshotInput::kRoutes, "the route to a remote pod CIDR")) {
      sarena_cluster::CheckRemoteRoute(ctx, w, hop, p, route);
    }
    return PluginAction::Continue();
  }

  void OnRouteFailure(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                      const HookPacket& p, const model::RouteResult& route) override {
    if (w.node && ctx.Need(w, hop, SnapshotInput::kRoutes, "why no route was found")) {
      sarena_cluster::ExplainRouteFailure(ctx, w, hop, p, route);
    }
  }

  PluginAction OnIngress(const PluginContext& ctx, const Where& w, absl::string_view iif,
                         PathGraph::Vertex hop, const HookPacket& p) override {
    if (!w.node) return PluginAction::Continue();
    const NodeData& d = Data(ctx, w);
    const model::Netstack& ns = w.node->netstack;
    const SarenaEndpoint* own = nullptr;
    if (d.endpoints) {
      for (const SarenaEndpoint& e : *d.endpoints) {
        if (e.host_ifname == iif) own = &e;
      }
    }
    bool lxc = own != nullptr || absl::StartsWith(iif, "lxc");
    if (!lxc) {
      // The cluster hooks: from_overlay (sarena_vxlan ingress), from_netdev (the uplink).
      sarena_cluster::Outcome o;
      std::string label;
      if (iif == sarena_cluster::kVxlanDev) {
        o = sarena_cluster::FromOverlay(ctx, w, hop, p, AttachedFn(ctx));
        label = "from_overlay: local_delivery";
      } else {
        o = sarena_cluster::FromNetdev(ctx, w, iif, hop, p);
        label = "from_netdev: local_delivery";
      }
      if (o.kind == sarena_cluster::Outcome::Kind::kAction) return o.action;
      if (o.kind == sarena_cluster::Outcome::Kind::kAccept) {
        const SarenaEndpoint* dst = Find(d, p.packet.dst);
        bool host_flow = false;
        if (p.host_flows && dst) {
          for (const Packet& f : *p.host_flows) host_flow |= RepliesTo(p.packet, f);
        }
        if (dst && !host_flow) return Deliver(ctx, w, *dst, hop, label, /*redirect_peer=*/true);
        ctx.Suspect(hop, Level::kInfo, "bpf",
                    absl::StrCat(label.substr(0, label.find(':')), " on ", iif, ": ",
                                 dst ? "reply of a flow that crossed the host stack"
                                     : "not a local endpoint",
                                 ", passed to the host stack"));
      }
      return PluginAction::Continue();
    }
    Attached att = IsAttached(d, ns, iif, "ingress", "from_container");
    if (att == Attached::kNo) {
      ctx.Suspect(hop, Level::kWarning, "program_not_attached",
                  absl::StrCat("from_container is not attached to ", iif,
                               " (TCX ingress): the pod's packets enter the host stack on ", iif,
                               " without anti-spoofing, and pod-to-pod traffic is routed by "
                               "the kernel"));
      return PluginAction::Continue();
    }
    if (!d.endpoints) {
      // No map in the snapshot: model from_container from the cluster's pods, unchecked.
      const model::Pod* pod = ctx.cluster->FindPodByIp(p.packet.dst);
      if (pod && !pod->host_network && pod->node_name == w.node_name) {
        PluginAction a;
        a.kind = PluginAction::Kind::kDeliverToPod;
        a.pod = pod;
        a.decrement_ttl = true;
        a.label = "from_container: local_delivery (endpoint map not in snapshot)";
        return a;
      }
      PluginAction a;
      if (!p.reply) a.record_host_flow = p.packet;
      return a;
    }
    const Interface* in = ns.FindInterface(iif);
    const SarenaEndpoint* src = Find(d, p.packet.src);
    if (!src) {
      ctx.Suspect(hop, Level::kFatal, "endpoint_map_missing",
                  absl::StrCat("no endpoint-map entry for source ", p.packet.src.to_string(),
                               " on ", w.node_name,
                               ": from_container drops the packet as "
                               "spoofed (SPOOFED_SOURCE)"));
      return PluginAction::Stop();
    }
    if (in && src->host_ifindex != 0 && static_cast<int>(src->host_ifindex) != in->ifindex) {
      ctx.Suspect(hop, Level::kFatal, "endpoint_ifindex_mismatch",
                  absl::StrCat("endpoint-map entry for ", p.packet.src.to_string(),
                               " records ifindex ", src->host_ifindex, " but it arrives on ", iif,
                               " (ifindex ", in->ifindex, "): from_container drops it as spoofed"));
      return PluginAction::Stop();
    }
    const SarenaEndpoint* dst = Find(d, p.packet.dst);
    // Host flows live in each node's own sarena_flows map and record local pods only: a flow
    // can match only when the destination is a local endpoint (the walk's list spans nodes).
    bool host_flow = false;
    if (p.host_flows && dst) {
      for (const Packet& f : *p.host_flows) host_flow |= RepliesTo(p.packet, f);
    }
    if (dst && !host_flow) {
      PluginAction a = Deliver(ctx, w, *dst, hop, "from_container: local_delivery",
                               /*redirect_peer=*/true);
      return a;
    }
    if (!dst && !host_flow) {
      sarena_cluster::Outcome o =
          sarena_cluster::FromContainer(ctx, w, hop, p, PodMtu(ctx, *src));
      if (o.kind == sarena_cluster::Outcome::Kind::kAction) return o.action;
    }
    PluginAction a;
    if (!dst && !p.reply) a.record_host_flow = p.packet;
    ctx.Suspect(hop, Level::kInfo, "bpf",
                absl::StrCat("from_container on ", iif, ": ",
                             host_flow ? "reply of a flow that crossed the host stack"
                                       : "not a local endpoint",
                             ", passed to the host stack on ", iif));
    return a;
  }

  PluginAction OnEgress(const PluginContext& ctx, const Where& w, absl::string_view oif,
                        PathGraph::Vertex hop, const HookPacket& p) override {
    if (w.node && oif == sarena_cluster::kVxlanDev && !w.in_pod()) {
      return sarena_cluster::ToOverlay(ctx, w, hop, p, AttachedFn(ctx)).action;
    }
    if (!w.node || oif != kHostDev) return PluginAction::Continue();
    const NodeData& d = Data(ctx, w);
    const model::Netstack& ns = w.node->netstack;
    Attached att = IsAttached(d, ns, kHostDev, "egress", "from_host");
    if (att == Attached::kNo) {
      ctx.Suspect(hop, Level::kFatal, "program_not_attached",
                  absl::StrCat("from_host is not attached to sarena_host (TCX egress) on ",
                               w.node_name, ": ", p.packet.dst.to_string(),
                               " goes into sarena_net and back into the host instead of to the "
                               "pod"));
      return PluginAction::Stop();
    }
    if (!d.endpoints) {
      // Without the map: deliver to the pod owning the address, unchecked.
      const model::Pod* pod = ctx.cluster->FindPodByIp(p.packet.dst);
      if (pod && !pod->host_network && pod->node_name == w.node_name) {
        PluginAction a;
        a.kind = PluginAction::Kind::kDeliverToPod;
        a.pod = pod;
        a.decrement_ttl = true;
        a.label = "from_host: local_delivery (endpoint map not in snapshot)";
        return a;
      }
      return PluginAction::Continue();
    }
    const SarenaEndpoint* dst = Find(d, p.packet.dst);
    if (dst) {
      return Deliver(ctx, w, *dst, hop, "from_host: local_delivery", /*redirect_peer=*/false);
    }
    const model::Node* k = ctx.cluster->FindNode(w.node_name);
    bool in_cidr = false;
    if (k) {
      for (const auto& c : k->pod_cidrs) in_cidr |= net::Contains(c, p.packet.dst);
    } else {
      // No Node object (e.g. a live `collect` without kubectl output): the kernel routed the
      // packet to sarena_host, and sarenad routes only the node's pod CIDR there.
      in_cidr = true;
    }
    const model::Pod* pod = ctx.cluster->FindPodByIp(p.packet.dst);
    if (in_cidr || (pod && pod->node_name == w.node_name && !pod->host_network)) {
      ctx.Suspect(
          hop, Level::kFatal, "endpoint_map_missing",
          absl::StrCat("no endpoint-map entry for ", p.packet.dst.to_string(),
                       pod ? absl::StrCat(" (pod ", pod->Key(), ")") : std::string(), " on ",
                       w.node_name, ": from_host drops it (NO_ENDPOINT) instead of delivering it"));
      return PluginAction::Stop();
    }
    return PluginAction::Continue();
  }

 private:
  // IsAttached for the cluster hooks.
  sarena_cluster::AttachedFn AttachedFn(const PluginContext& ctx) {
    return [this, &ctx](const Where& w, absl::string_view ifname, absl::string_view direction,
                        absl::string_view prog) {
      const NodeData& d = Data(ctx, w);
      switch (IsAttached(d, w.node->netstack, ifname, direction, prog)) {
        case Attached::kYes:
          return sarena_cluster::Attach::kYes;
        case Attached::kNo:
          return sarena_cluster::Attach::kNo;
        case Attached::kUnknown:
          break;
      }
      return sarena_cluster::Attach::kUnknown;
    };
  }

  // The MTU of endpoint `e`'s pod interface: the live one from its netns, else the recorded one.
  uint32_t PodMtu(const PluginContext& ctx, const SarenaEndpoint& e) {
    if (!e.pod_namespace.empty()) {
      auto ns = ctx.snapshot->PodNetns(e.pod_namespace, e.pod_name);
      if (ns.ok()) {
        if (const Interface* i = (*ns)->netstack.FindInterface(e.ifname.empty() ? "eth0" : e.ifname)) {
          if (i->mtu) return i->mtu;
        }
      }
    }
    return e.mtu;
  }

  const NodeData& Data(const PluginContext& ctx, const Where& w) {
    auto it = cache_.find(w.node_name);
    if (it != cache_.end()) return it->second;
    NodeData d;
    if (w.node && w.node->sarena_endpoints) d.endpoints = &*w.node->sarena_endpoints;
    std::string rel = model::NodePath(w.node_name, model::kSarenaProgramsFile);
    auto text = ctx.snapshot->ReadFile(rel);
    if (text.ok()) {
      auto progs = ParsePrograms(*text, rel);
      if (progs.ok()) {
        d.programs = std::move(*progs);
      } else if (error_.ok()) {
        error_ = progs.status();
      }
    } else if (!absl::IsNotFound(text.status()) && error_.ok()) {
      error_ = text.status();
    }
    return cache_.emplace(w.node_name, std::move(d)).first->second;
  }

  // sarena-programs.json: sarena.snapshot.v1.SarenaProgramsFile (model/proto/sarena_node.proto).
  static absl::StatusOr<std::vector<Program>> ParsePrograms(absl::string_view text,
                                                            absl::string_view file) {
    snapshot::v1::SarenaProgramsFile f;
    // Legacy: a bare array of programs.
    absl::Status st = model::ParseProtoJson(text, file, &f, {.root_list_field = "programs"});
    if (!st.ok()) return st;
    std::vector<Program> out;
    out.reserve(f.programs_size());
    for (int i = 0; i < f.programs_size(); ++i) {
      const snapshot::v1::AttachedProgram& e = f.programs(i);
      const std::string path = absl::StrCat("programs[", i, "]");
      if (e.ifname().empty()) return model::ProtoFieldError(file, path + ".ifname", "missing");
      Program p;
      p.ifname = e.ifname();
      p.direction = e.direction().empty() ? "ingress" : e.direction();
      if (p.direction != "ingress" && p.direction != "egress") {
        return model::ProtoFieldError(
            file, path + ".direction",
            absl::StrCat("'", p.direction, "': expected ingress or egress"));
      }
      p.mode = e.mode();
      p.prog = e.prog().empty() ? e.name() : e.prog();  // "name": the legacy key
      st = model::MaxField(e.ifindex(), INT32_MAX, file, path + ".ifindex");
      if (!st.ok()) return st;
      p.ifindex = static_cast<int>(e.ifindex());
      p.id = e.id();
      out.push_back(std::move(p));
    }
    return out;
  }

  static Attached IsAttached(const NodeData& d, const model::Netstack& ns, absl::string_view ifname,
                             absl::string_view direction, absl::string_view prog) {
    if (!d.programs) return Attached::kUnknown;
    const Interface* i = ns.FindInterface(ifname);
    for (const Program& p : *d.programs) {
      if (p.ifname != ifname || p.direction != direction) continue;
      if (!p.prog.empty() && p.prog != prog) continue;
      if (i && p.ifindex && p.ifindex != i->ifindex) continue;  // a stale record
      return Attached::kYes;
    }
    return Attached::kNo;
  }

  static const SarenaEndpoint* Find(const NodeData& d, const net::Ipv4& ip) {
    if (!d.endpoints) return nullptr;
    for (const SarenaEndpoint& e : *d.endpoints) {
      if (e.ip && *e.ip == ip) return &e;
    }
    return nullptr;
  }

  // local_delivery to endpoint `e`: the redirect target must exist, and the pod must accept
  // the recorded MAC.
  //
  // `redirect_peer`: from_container (TC ingress) hands the frame to the pod with
  // bpf_redirect_peer (sarenad's default --redirect-peer=true): the frame is not classified
  // again in the pod, so a wrong destination MAC passes (found by the differential suite: a
  // stale recorded MAC did not stop pod-to-pod traffic). from_host (TC egress) uses
  // bpf_redirect through the veth: the pod's eth_type_trans sees the MAC and drops a foreign one.
  PluginAction Deliver(const PluginContext& ctx, const Where& w, const SarenaEndpoint& e,
                       PathGraph::Vertex hop, absl::string_view label, bool redirect_peer) {
    const model::Netstack& ns = w.node->netstack;
    const model::Pod* pod = nullptr;
    if (!e.pod_namespace.empty()) {
      // A pod directory that does not parse fails the trace where the walk reaches that pod;
      // here it only means the endpoint is matched by address below.
      pod = ctx.cluster->FindPod(e.pod_namespace, e.pod_name);
      if (!pod && ctx.topology) pod = ctx.topology->FindPod(e.pod_namespace, e.pod_name).value_or(nullptr);
    }
    if (!pod && e.ip) pod = ctx.cluster->FindPodByIp(*e.ip);
    const Interface* lxc = e.host_ifname.empty() ? nullptr : ns.FindInterface(e.host_ifname);
    const Interface* target = e.host_ifindex ? ns.FindInterfaceByIndex(e.host_ifindex) : lxc;
    std::string ip = e.ip ? e.ip->to_string() : std::string("?");
    if (ns.Has(model::NetstackSource::kLinks)) {
      if (!target) {
        ctx.Suspect(hop, Level::kFatal, "endpoint_ifindex_mismatch",
                    absl::StrCat("endpoint-map entry for ", ip, " redirects to ifindex ",
                                 e.host_ifindex, " which does not exist on ", w.node_name,
                                 e.host_ifname.empty()
                                     ? std::string()
                                     : absl::StrCat(" (", e.host_ifname,
                                                    lxc ? absl::StrCat(" is ifindex ", lxc->ifindex)
                                                        : std::string(" is gone"),
                                                    ")")));
        return PluginAction::Stop();
      }
      if (lxc && target != lxc) {
        ctx.Suspect(hop, Level::kFatal, "endpoint_ifindex_mismatch",
                    absl::StrCat("endpoint-map entry for ", ip, " redirects to ifindex ",
                                 e.host_ifindex, " (", target->name, ") but the pod's veth is ",
                                 lxc->name, " (ifindex ", lxc->ifindex, ")"));
        return PluginAction::Stop();
      }
      if (!target->admin_up || !target->CanTransmit()) {
        ctx.Suspect(hop, Level::kFatal, "link_down",
                    absl::StrCat(target->name, " (endpoint ", ip,
                                 ") is down: the redirect "
                                 "fails"));
        return PluginAction::Stop();
      }
    }
    if (!pod) {
      ctx.Suspect(hop, Level::kWarning, "endpoint_map_missing",
                  absl::StrCat("endpoint-map entry for ", ip, " names no known pod (",
                               e.pod_namespace, "/", e.pod_name, "): stale entry?"));
      return PluginAction::Continue();
    }
    PluginAction a;
    a.kind = PluginAction::Kind::kDeliverToPod;
    a.pod = pod;
    a.pod_ifname = e.ifname.empty() ? "eth0" : e.ifname;
    a.decrement_ttl = true;
    a.label = std::string(label);
    // Recorded MACs against the live ones.
    auto pod_ns = ctx.snapshot->PodNetns(pod->namespace_, pod->name, pod->node_name);
    if (pod_ns.ok()) {
      const Interface* eth = (*pod_ns)->netstack.FindInterface(a.pod_ifname);
      if (eth && eth->mac && e.pod_mac && *eth->mac != *e.pod_mac && redirect_peer) {
        ctx.Suspect(
            hop, Level::kInfo, "endpoint_mac_mismatch",
            absl::StrCat("the recorded pod MAC ", net::FormatMac(*e.pod_mac), " of ", pod->Key(),
                         " is not its ", a.pod_ifname, "'s (", net::FormatMac(*eth->mac),
                         "): harmless here (bpf_redirect_peer: the pod does not check "
                         "the destination MAC again), fatal for from_host deliveries "
                         "(bpf_redirect) and with sarenad --redirect-peer=false"));
      } else if (eth && eth->mac && e.pod_mac && *eth->mac != *e.pod_mac) {
        a.at_target.push_back(Suspicion{
            Level::kFatal, "endpoint_mac_mismatch", "",
            absl::StrCat("local_delivery rewrites the destination MAC to the recorded pod MAC ",
                         net::FormatMac(*e.pod_mac), " but ", pod->Key(), " ", a.pod_ifname,
                         " has ", net::FormatMac(*eth->mac),
                         ": the pod's kernel discards the frame as not for this host "
                         "(PACKET_OTHERHOST; the MAC changed after the endpoint was recorded)")});
        a.drop_at_target = true;
      }
    } else if (absl::IsNotFound(pod_ns.status())) {
      ctx.Suspect(hop, Level::kInfo, "file_missing",
                  absl::StrCat("cannot compare the recorded MAC of ", pod->Key(),
                               " with its live eth0: pod directory missing"));
    } else if (error_.ok()) {
      error_ = pod_ns.status();
    }
    if (lxc && lxc->mac && e.host_mac && *lxc->mac != *e.host_mac) {
      ctx.Suspect(hop, Level::kInfo, "endpoint_mac_mismatch",
                  absl::StrCat("recorded host-side MAC ", net::FormatMac(*e.host_mac), " of ",
                               lxc->name, " differs from its live MAC ", net::FormatMac(*lxc->mac),
                               " (used only as the frame's source MAC)"));
    }
    return a;
  }

  absl::flat_hash_map<std::string, NodeData> cache_;
  absl::Status error_;
};

}  // namespace

std::unique_ptr<Plugin> NewSarenaPlugin() { return std::make_unique<SarenaPlugin>(); }

}  // namespace sarena::diag
