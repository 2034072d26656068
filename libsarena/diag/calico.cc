// The Calico plugin: what Felix, BIRD and the Calico CNI plugin install on a node, checked on top
// of the kernel's own decisions (the generic walk).
//
//   * IP pools: the pool of a pod address decides its encapsulation towards another node —
//     vxlanMode, else ipipMode: Always, CrossSubnet (only towards nodes outside this node's own
//     subnet: its address with the real prefix length, model/calico_subnet.h), Never (BGP).
//   * Routes: a local pod is reached through its workload veth "cali" + sha1("<ns>.<name>")[:11]
//     with scope link; a remote pod's block through tunl0 "proto bird" via the node's address
//     (IPIP), through vxlan.calico via the node's projectcalico.org/IPv4VXLANTunnelAddr (VXLAN),
//     or through the host interface via the node's address (BGP).
//   * Node addresses: without projectcalico.org/IPv4Address a node has no BGP session and no
//     tunnel next hop (calico-node autodetection failed); VXLAN also needs IPv4VXLANTunnelAddr.
//   * natOutgoing: traffic from a pool with natOutgoing to a destination outside every pool and
//     not a node is masqueraded when it leaves the node; to an address inside a pool that no pod
//     or node has, it is not, and leaves the cluster with the pod address (FATAL: the pool's
//     natOutgoing says nothing routes pod addresses back).
//   * MTUs: a workload's MTU must leave room for the encapsulation (IPIP 20, VXLAN 50,
//     WireGuard 60 bytes below the host interface: 1480 / 1450 / 1440 on a 1500 underlay).
#include <algorithm>
#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/model/calico_subnet.h"
#include "libsarena/model/tunnel.h"

namespace sarena::diag {
namespace {

using model::EncapMode;
using model::Interface;
using model::IpPool;

enum class Mode { kBgp, kIpip, kVxlan };

absl::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kBgp:
      return "BGP (no encapsulation)";
    case Mode::kIpip:
      return "IPIP";
    case Mode::kVxlan:
      return "VXLAN";
  }
  return "";
}

constexpr absl::string_view kTunl = "tunl0";
constexpr absl::string_view kVxlanDev = "vxlan.calico";
constexpr absl::string_view kWgDev = "wireguard.cali";

// The checks that read cluster/ippools.json (SnapshotInput::kIpPools). Without it they are not
// made: the kernel's routes and tunnels, which the walk follows, are in the node files.
constexpr absl::string_view kPoolChecks =
    "the Calico IP pool checks (pool membership, encapsulation mode, natOutgoing)";

bool IsCalicoDevice(absl::string_view n) {
  return absl::StartsWith(n, "cali") || n == kTunl || n == kVxlanDev || n == kWgDev;
}

class CalicoPlugin : public Plugin {
 public:
  absl::string_view name() const override { return "calico"; }

  void CheckNode(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop) override {
    const model::Node* node = ctx.cluster->FindNode(w.node_name);
    if (node && !node->calico_ipv4_address) {
      ctx.Suspect(hop, Level::kWarning, "node_address_missing",
                  absl::StrCat("node ", w.node_name,
                               " has no projectcalico.org/IPv4Address annotation: calico-node "
                               "could not autodetect its address, so it has no BGP sessions and "
                               "other nodes have no route or tunnel towards its pods"));
    }
  }

  void CheckPod(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                const HookPacket& p) override {
    if (!w.pod || !w.pod->pod_ip || !w.ns || !w.node) return;
    if (!ctx.Need(w, hop, SnapshotInput::kIpPools, kPoolChecks)) return;
    const IpPool* pool = ctx.cluster->FindIpPool(*w.pod->pod_ip);
    if (!pool) {
      if (ctx.cluster->has_ip_pools()) {
        ctx.Suspect(hop, Level::kWarning, "ippool_not_found",
                    absl::StrCat("pod ", w.pod->Key(), " address ", w.pod->pod_ip->to_string(),
                                 " is in no Calico IP pool: no pool decides its routing, "
                                 "encapsulation or natOutgoing"));
      }
      return;
    }
    if (!ctx.FirstInBranch(absl::StrCat("calico-pod|", w.pod->Key()))) return;
    CheckGatewayArp(ctx, w, hop);
    const Interface* eth = w.ns->netstack.FindInterface("eth0");
    const Interface* host = HostInterface(ctx, w.node_name, *w.node);
    if (!eth || !host || host->mtu == 0) return;
    uint32_t overhead = 0;
    std::string why;
    if (pool->vxlan_mode != EncapMode::kNever) {
      overhead = *model::TunnelOverheadOf("vxlan");
      why = "VXLAN";
    } else if (pool->ipip_mode != EncapMode::kNever) {
      overhead = *model::TunnelOverheadOf("ipip");
      why = "IPIP";
    }
    if (w.node->netstack.FindInterface(kWgDev)) {
      overhead = std::max<uint32_t>(overhead, *model::TunnelOverheadOf("wireguard"));
      why = "WireGuard";
    }
    if (eth->mtu + overhead > host->mtu) {
      ctx.Suspect(hop, Level::kWarning, "mtu_mismatch",
                  absl::StrCat("pod ", w.pod->Key(), " eth0 MTU ", eth->mtu, " leaves no room for ",
                               why.empty() ? std::string("") : absl::StrCat(why, " ("), overhead,
                               why.empty() ? " bytes" : " bytes)", " on ", host->name, " (MTU ",
                               host->mtu, "): expected <= ", host->mtu - overhead));
    }
  }

  PluginAction AfterRoute(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                          const HookPacket& p, const model::RouteResult& route) override {
    if (!w.node) return PluginAction::Continue();
    // A route on a device the snapshot's links lack (an inconsistent snapshot: the kernel
    // deletes a device's routes with it) is not Calico's to judge unless the device is one of
    // Calico's own (its tunnels and workload veths, checked below: tunnel_missing /
    // link_missing): the walk's egress check reports it as link_missing, naming the route and
    // the device.
    if (!route.oif.empty() && !IsCalicoDevice(route.oif) &&
        w.node->netstack.Has(model::NetstackSource::kLinks) &&
        w.node->netstack.FindInterface(route.oif) == nullptr) {
      return PluginAction::Continue();
    }
    const model::Cluster& c = *ctx.cluster;
    const net::Ipv4& dst = p.packet.dst;
    const IpPool* pool = c.FindIpPool(dst);
    if (!pool) {
      if (c.has_ip_pools() && !c.ip_pools().empty()) {
        if (const model::Pod* pod = c.FindPodByIp(dst); pod && !pod->host_network) {
          ctx.Suspect(hop, Level::kWarning, "ippool_not_found",
                      absl::StrCat("destination pod ", pod->Key(), " address ", dst.to_string(),
                                   " is in no Calico IP pool"));
        }
      }
      return PluginAction::Continue();
    }
    const model::Pod* pod = c.FindPodByIp(dst);
    if (!pod || pod->host_network) {
      if (c.FindNodeByIp(dst)) return PluginAction::Continue();  // a node's tunnel address
      ctx.Suspect(hop, Level::kInfo, "ippool",
                  absl::StrCat(dst.to_string(), " is in pool ", pool->name, " (",
                               pool->cidr.to_string(), ") but no pod has it"));
      return PluginAction::Continue();
    }
    const model::Netstack& ns = w.node->netstack;
    if (route.rule && route.rule->table != model::kTableMain &&
        route.rule->table != model::kTableLocal && route.oif != kWgDev) {
      // Calico (outside WireGuard's table) routes pods from the main table only.
      ctx.Suspect(hop, Level::kWarning, "policy_route_unexpected",
                  absl::StrCat("pod traffic to ", dst.to_string(), " is routed by policy rule '",
                               route.rule->ToString(), "' instead of Calico's main-table routes"));
    }
    if (pod->node_name == w.node_name) {
      // Local workload: "<pod ip> dev cali<hash> scope link".
      std::string veth = CalicoVethName(pod->namespace_, pod->name);
      if (route.oif == veth) {
        if (route.route && route.route->scope != model::Scope::kLink) {
          ctx.Suspect(hop, Level::kInfo, "route_mismatch",
                      absl::StrCat("route to pod ", pod->Key(), " via ", veth, " has scope ",
                                   model::ToString(route.route->scope),
                                   ", Calico installs "
                                   "scope link"));
        }
        return PluginAction::Continue();
      }
      if (!ns.FindInterface(veth) && ns.Has(model::NetstackSource::kLinks)) {
        ctx.Suspect(
            hop, Level::kFatal, "link_missing",
            absl::StrCat("workload interface ", veth, " of pod ", pod->Key(), " does not exist on ",
                         w.node_name, " (Calico names it cali + sha1(\"", pod->namespace_, ".",
                         pod->name, "\")[:11])"));
        return PluginAction::Stop();
      }
      ctx.Suspect(hop, Level::kFatal, "route_mismatch",
                  absl::StrCat("route to local pod ", pod->Key(), " (", dst.to_string(),
                               ") goes via '", route.ToString(), "', expected '", dst.to_string(),
                               " dev ", veth, " scope link'"));
      return PluginAction::Stop();
    }
    // Remote workload.
    const model::Node* self = c.FindNode(w.node_name);
    const model::Node* remote = c.FindNode(pod->node_name);
    if (!remote) return PluginAction::Continue();
    Mode mode = ModeFor(*pool, self, *remote, ctx, w, hop);
    bool fatal = false;
    if (!remote->calico_ipv4_address) {
      ctx.Suspect(hop, Level::kFatal, "node_address_missing",
                  absl::StrCat("node ", remote->name, " (of pod ", pod->Key(),
                               ") has no projectcalico.org/IPv4Address: calico-node there could "
                               "not autodetect its address, so no node has a BGP session with it "
                               "and there is no ",
                               ModeName(mode), " next hop for its blocks"));
      fatal = true;
    }
    std::string exp_dev;
    std::optional<net::Ipv4> exp_gw;
    if (remote->calico_ipv4_address) exp_gw = remote->calico_ipv4_address->address();
    switch (mode) {
      case Mode::kIpip:
        exp_dev = std::string(kTunl);
        break;
      case Mode::kVxlan:
        exp_dev = std::string(kVxlanDev);
        exp_gw = remote->calico_vxlan_tunnel_addr;
        if (!remote->calico_vxlan_tunnel_addr) {
          ctx.Suspect(
              hop, Level::kFatal, "node_address_missing",
              absl::StrCat("node ", remote->name,
                           " has no projectcalico.org/IPv4VXLANTunnelAddr: no VXLAN next "
                           "hop exists for its blocks (pool ",
                           pool->name, " vxlanMode ", model::ToString(pool->vxlan_mode), ")"));
          fatal = true;
        }
        break;
      case Mode::kBgp:
        if (const Interface* h = HostInterface(ctx, w.node_name, *w.node)) exp_dev = h->name;
        break;
    }
    if ((mode == Mode::kIpip || mode == Mode::kVxlan) && ns.Has(model::NetstackSource::kLinks)) {
      const Interface* t = ns.FindInterface(exp_dev);
      if (!t) {
        ctx.Suspect(
            hop, Level::kFatal, "tunnel_missing",
            absl::StrCat("pool ", pool->name, " needs ", ModeName(mode), " towards ", remote->name,
                         " but ", w.node_name, " has no ", exp_dev, " device"));
        return PluginAction::Stop();
      }
    }
    if (!exp_dev.empty() && route.oif != exp_dev && ns.Has(model::NetstackSource::kLinks)) {
      // The device Calico routes the block through is down: the kernel flushed that route
      // with it, so the lookup fell through to another one.
      const Interface* t = ns.FindInterface(exp_dev);
      if (t && (!t->admin_up || !t->CanTransmit())) {
        ctx.Suspect(
            hop, Level::kFatal, "link_down",
            absl::StrCat(exp_dev, " is down on ", w.node_name, " (",
                         t->operstate.empty() ? "no carrier" : t->operstate,
                         "): the kernel flushed Calico's route for the block of ", remote->name,
                         " (", ModeName(mode), "), so ", dst.to_string(), " falls to '",
                         route.route ? route.route->ToString() : route.ToString(), "'"));
        return PluginAction::Stop();
      }
    }
    bool dev_ok = exp_dev.empty() || route.oif == exp_dev;
    bool gw_ok = !exp_gw || (route.gateway && *route.gateway == *exp_gw);
    // BIRD's ECMP (BGP sessions over several links): one next hop of a multipath route that
    // hands the packet to another address of the block's node is one of Calico's own paths.
    if (mode == Mode::kBgp && route.route && route.route->nexthops.size() > 1 && route.gateway &&
        NodeHasAddress(ctx, *remote, *route.gateway)) {
      dev_ok = gw_ok = true;
    }
    // BIRD's recursive next hop: a BGP peer in another subnet (through a ToR router) is not
    // on-link, so BIRD installs the block via the next hop of its own route to the peer.
    if (mode == Mode::kBgp && !gw_ok && exp_gw && RecursiveNexthop(ns, route, *exp_gw)) {
      dev_ok = gw_ok = true;
    }
    net::Ipv4Prefix block(dst, std::max<uint8_t>(pool->block_size, pool->cidr.prefix_length()));
    std::string expected =
        absl::StrCat(block.canonical().to_string(), " (block of ", remote->name, ") via ",
                     exp_gw ? exp_gw->to_string() : std::string("<node address>"), " dev ",
                     exp_dev.empty() ? std::string("<host interface>") : exp_dev,
                     mode == Mode::kVxlan ? " onlink" : " proto bird", " (", ModeName(mode),
                     ", pool ", pool->name, ")");
    if (!dev_ok || !gw_ok) {
      bool gw_is_node = route.gateway && NodeOwns(ctx, *route.gateway);
      bool to_tunnel = IsCalicoDevice(route.oif) && !absl::StartsWith(route.oif, "cali");
      std::string fabric = mode == Mode::kBgp || !route.gateway
                               ? std::string()
                               : RouterWithoutRoute(ctx, *route.gateway, dst);
      if (!fabric.empty()) {
        // The pool encapsulates towards `remote`, but this route hands the bare pod packet to a
        // router of the snapshot that cannot route pod addresses (an underlay that knows only
        // the nodes, as a cloud VPC): the fault is here, not on the router.
        ctx.Suspect(
            hop, Level::kFatal, "route_mismatch",
            absl::StrCat("route for ", dst.to_string(), " is '",
                         route.route ? route.route->ToString() : route.ToString(),
                         "': it hands the packet unencapsulated to router ", fabric, " (",
                         route.gateway->to_string(), "), which has no route for ",
                         dst.to_string(), "; pool ", pool->name, " needs ", ModeName(mode),
                         " towards ", remote->name, ", expected ", expected));
        return PluginAction::Stop();
      }
      if (!gw_is_node && !to_tunnel) {
        ctx.Suspect(
            hop, Level::kFatal, "route_mismatch",
            absl::StrCat("no Calico route for ", dst.to_string(), " (pod ", pod->Key(), " on ",
                         remote->name, "): the lookup falls to '",
                         route.route ? route.route->ToString() : route.ToString(),
                         "', which hands pod traffic to ",
                         route.gateway ? route.gateway->to_string() : std::string("the link"),
                         ", not a node; expected ", expected));
        return PluginAction::Stop();
      }
      ctx.Suspect(hop, Level::kWarning, "route_mismatch",
                  absl::StrCat("route for ", dst.to_string(), " is '",
                               route.route ? route.route->ToString() : route.ToString(),
                               "', expected ", expected));
    } else if (route.route && mode != Mode::kVxlan && route.route->protocol != model::RouteProtocol::kBird) {
      ctx.Suspect(hop, Level::kInfo, "route_mismatch",
                  absl::StrCat("route for ", dst.to_string(), " has proto ",
                               model::ToString(route.route->protocol),
                               ", Calico's BIRD installs proto bird"));
    }
    if (fatal) return PluginAction::Stop();
    return PluginAction::Continue();
  }

  PluginAction AfterPostrouting(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop,
                                const HookPacket& before, Packet* after, bool snat_done,
                                bool netfilter_known, const model::RouteResult& route) override {
    if (before.reply || !w.node) return PluginAction::Continue();
    const model::Cluster& c = *ctx.cluster;
    if (!ctx.Need(w, hop, SnapshotInput::kIpPools, kPoolChecks)) return PluginAction::Continue();
    const IpPool* src_pool = c.FindIpPool(before.packet.src);
    if (!src_pool || IsCalicoDevice(route.oif)) return PluginAction::Continue();
    if (!src_pool->nat_outgoing) return PluginAction::Continue();
    if (c.FindNodeByIp(before.packet.dst)) return PluginAction::Continue();
    if (snat_done || after->src != before.packet.src) return PluginAction::Continue();
    if (const IpPool* dst_pool = c.FindIpPool(before.packet.dst)) {
      return PoolDestination(ctx, hop, before, *src_pool, *dst_pool, route);
    }
    if (!netfilter_known) {
      std::optional<net::Ipv4> src = route.prefsrc;
      if (!src) {
        src = w.node->netstack.SelectSourceAddress(route.oif, before.packet.dst,
                                                   model::Scope::kUniverse);
      }
      if (src) after->src = *src;
      ctx.Suspect(hop, Level::kInfo, "nat_outgoing",
                  absl::StrCat("pool ", src_pool->name, " has natOutgoing: masquerading ",
                               before.packet.src.to_string(), " to ",
                               src ? src->to_string() : std::string("?"),
                               " assumed (iptables not in the snapshot)"));
      return PluginAction::Continue();
    }
    ctx.Suspect(hop, Level::kFatal, "nat_outgoing_missing",
                absl::StrCat("pool ", src_pool->name, " (", src_pool->cidr.to_string(),
                             ") has natOutgoing but no MASQUERADE applies to ",
                             before.packet.src.to_string(), " -> ", before.packet.dst.to_string(),
                             " leaving via ", route.oif,
                             ": it leaves with the pod address and replies cannot return "
                             "(Felix's cali-nat-outgoing rule is missing)"));
    return PluginAction::Stop();
  }

 private:
  // A pod of a natOutgoing pool sends to an address inside an IPPool (any pool: Felix's
  // cali-nat-outgoing rule is "-m set --match-set cali40masq-ipam-pools src -m set !
  // --match-set cali40all-ipam-pools dst -j MASQUERADE", and all-ipam-pools holds every pool,
  // disabled ones too) and nothing masqueraded it. Towards a pod or another node that is Calico's
  // own path; but when the route takes it out of the cluster (no block route: the node's default
  // or an underlay route, to no node) it leaves with the pod address, and natOutgoing on the pool
  // says the network does not route pod addresses back: the reply cannot return. This is the
  // classic overlap of an IPPool with an external range (a VM subnet, a corporate network).
  // Source: docs.tigera.io "Configure outgoing NAT"; Felix rules/nat.go (cali-nat-outgoing).
  PluginAction PoolDestination(const PluginContext& ctx, PathGraph::Vertex hop,
                               const HookPacket& before, const IpPool& src_pool,
                               const IpPool& dst_pool, const model::RouteResult& route) {
    const model::Cluster& c = *ctx.cluster;
    if (c.FindPodByIp(before.packet.dst)) return PluginAction::Continue();
    if (route.gateway && c.FindNodeByIp(*route.gateway)) return PluginAction::Continue();
    if (route.route && route.route->protocol == model::RouteProtocol::kBird) {
      return PluginAction::Continue();  // a block BIRD learnt: another node owns it
    }
    ctx.Suspect(hop, Level::kFatal, "nat_outgoing_pool_destination",
                absl::StrCat(
                    before.packet.dst.to_string(), " is inside IPPool ", dst_pool.name, " (",
                    dst_pool.cidr.to_string(), ") but no pod or node has it: Felix masquerades ",
                    "only to destinations outside every pool, so ", before.packet.src.to_string(),
                    " leaves via ", route.oif,
                    route.gateway ? absl::StrCat(" (via ", route.gateway->to_string(), ")") : "",
                    " un-NATed, and pool ", src_pool.name,
                    " has natOutgoing: the network outside does not route pod addresses back, ",
                    "so the reply cannot return. Take the external range out of the pool (a "
                    "smaller pool CIDR) or route the pool's addresses back to the nodes"));
    return PluginAction::Stop();
  }

  // Calico pods route through 169.254.1.1, which nothing owns: the host-side cali veth answers
  // ARP for it by proxy_arp (IN_DEV_PROXY_ARP = all OR dev). Without it the pod cannot resolve
  // its gateway once the cached entry expires.
  void CheckGatewayArp(const PluginContext& ctx, const Where& w, PathGraph::Vertex hop) {
    const model::Netstack& pod = w.ns->netstack;
    const model::Netstack& node = w.node->netstack;
    if (!node.Has(model::NetstackSource::kSysctls)) return;
    model::Flow fl;
    fl.dst = net::Ipv4(0x08080808);
    model::RouteResult r = pod.Lookup(fl);
    if (!r.ok() || !r.gateway) return;
    const Interface* eth = pod.FindInterface(r.oif);
    if (!eth || !eth->link_index) return;
    const Interface* host = node.FindInterfaceByIndex(*eth->link_index);
    if (!host) return;
    auto flag = [&](absl::string_view dev) {
      return node.sysctls().GetInt(model::Sysctls::ConfKey(dev, "proxy_arp")).value_or(0) != 0;
    };
    if (flag("all") || flag(host->name)) return;
    const model::Neighbor* n = pod.FindNeighbor(*r.gateway, r.oif);
    if (n && HasAny(n->state, net::NeighState::kPermanent)) return;
    bool cached = n && n->Usable();
    ctx.Suspect(hop, cached ? Level::kCritical : Level::kFatal, "neighbor_missing",
                absl::StrCat("proxy_arp is off on ", host->name, " (net.ipv4.conf.", host->name,
                             ".proxy_arp = 0): nothing answers pod ", w.pod->Key(),
                             "'s ARP for its gateway ", r.gateway->to_string(),
                             cached ? "; it works only until the cached entry expires"
                                    : "; the pod cannot send off its veth"));
  }

  // Whether `ip` is a node's: listed in nodes.json, or an address of a node netns in the
  // snapshot (a second interface the Node object does not list; small snapshots only).
  // `ip` is an address of `node`: its InternalIPs, its Calico address, or (in the snapshot) an
  // address on one of its devices.
  static bool NodeHasAddress(const PluginContext& ctx, const model::Node& node,
                             const net::Ipv4& ip) {
    if (node.calico_ipv4_address && node.calico_ipv4_address->address() == ip) return true;
    for (const auto& a : node.internal_ips) {
      if (a == ip) return true;
    }
    auto st = ctx.snapshot->Node(node.name);
    return st.ok() && (*st)->netstack.InterfaceWithAddress(ip) != nullptr;
  }

  // True when `route` (for a block of the node whose BGP address is `peer`) is what BIRD's
  // `gateway recursive` installs: `peer` is not on-link, and the route's gateway and device are
  // those of this node's own route to `peer` (e.g. a ToR router between subnets).
  static bool RecursiveNexthop(const model::Netstack& ns, const model::RouteResult& route,
                               const net::Ipv4& peer) {
    if (!route.gateway) return false;
    model::Flow fl;
    fl.dst = peer;
    model::RouteResult r = ns.Lookup(fl);
    return r.ok() && r.gateway && *r.gateway == *route.gateway && r.oif == route.oif;
  }

  // The namespace of the snapshot that owns `gateway` but is no Kubernetes node (a router), when
  // it has no route for `dst`; "" otherwise (a node, an unknown gateway, or a router that routes
  // pods, e.g. a ToR peering with BIRD).
  static std::string RouterWithoutRoute(const PluginContext& ctx, const net::Ipv4& gateway,
                                        const net::Ipv4& dst) {
    const auto& names = ctx.snapshot->node_names();
    if (names.size() > 64) return "";
    for (const std::string& n : names) {
      if (ctx.cluster->FindNode(n)) continue;
      auto st = ctx.snapshot->Node(n);
      if (!st.ok() || !(*st)->netstack.InterfaceWithAddress(gateway)) continue;
      model::Flow fl;
      fl.dst = dst;
      return (*st)->netstack.Lookup(fl).ok() ? "" : n;
    }
    return "";
  }

  static bool NodeOwns(const PluginContext& ctx, const net::Ipv4& ip) {
    if (ctx.cluster->FindNodeByIp(ip)) return true;
    const auto& names = ctx.snapshot->node_names();
    if (names.size() > 64) return false;
    for (const std::string& n : names) {
      auto st = ctx.snapshot->Node(n);
      if (st.ok() && (*st)->netstack.InterfaceWithAddress(ip)) return true;
    }
    return false;
  }

  // The node's host interface: the one holding its Calico address, else its InternalIP.
  const Interface* HostInterface(const PluginContext& ctx, const std::string& node_name,
                                 const model::NodeState& node) {
    const model::Node* k = ctx.cluster->FindNode(node_name);
    if (k && k->calico_ipv4_address) {
      if (const Interface* i =
              node.netstack.InterfaceWithAddress(k->calico_ipv4_address->address())) {
        return i;
      }
    }
    if (k) {
      for (const auto& ip : k->internal_ips) {
        if (const Interface* i = node.netstack.InterfaceWithAddress(ip)) return i;
      }
    }
    return nullptr;
  }

  // The pool's mode towards `remote`; CrossSubnet is decided as Felix and BIRD decide it
  // (model::CalicoSubnetOf: the node address's real prefix length, a /32 has no peer in its
  // subnet), with an INFO on this node's hop when that is not what the annotation alone says.
  Mode ModeFor(const IpPool& pool, const model::Node* self, const model::Node& remote,
               const PluginContext& ctx, const Where& w, PathGraph::Vertex hop) {
    auto same_subnet = [&]() {
      std::optional<model::CalicoNodeSubnet> mine =
          model::CalicoSubnetOf(self, w.node ? &w.node->netstack : nullptr);
      std::optional<net::Ipv4> theirs = model::CalicoPeerAddress(remote);
      if (!mine || !theirs) return false;
      bool same = model::CalicoSameSubnet(*mine, *theirs);
      if (mine->stale_annotation &&
          net::Contains(*mine->stale_annotation, *theirs) != same) {
        ctx.Suspect(hop, Level::kInfo, "cross_subnet",
                    absl::StrCat("CrossSubnet towards ", remote.name, " (", theirs->to_string(),
                                 "): ", w.node_name, "'s address is ", mine->source,
                                 " but its projectcalico.org/IPv4Address says ",
                                 mine->stale_annotation->address().to_string(), "/",
                                 mine->stale_annotation->prefix_length(),
                                 "; calico-node rewrites the annotation from the interface, so ",
                                 remote.name, " is ", same ? "in the same" : "in another",
                                 " subnet (", same ? "no encapsulation" : "encapsulated", ")"));
      } else if (!same && mine->address.prefix_length() == 32) {
        ctx.Suspect(hop, Level::kInfo, "cross_subnet",
                    absl::StrCat(w.node_name, "'s address is ", mine->source,
                                 ": a /32 has no other node in its subnet, so CrossSubnet "
                                 "encapsulates towards every peer (", remote.name, " too)"));
      }
      return same;
    };
    if (pool.vxlan_mode == EncapMode::kAlways) return Mode::kVxlan;
    if (pool.vxlan_mode == EncapMode::kCrossSubnet)
      return same_subnet() ? Mode::kBgp : Mode::kVxlan;
    if (pool.ipip_mode == EncapMode::kAlways) return Mode::kIpip;
    if (pool.ipip_mode == EncapMode::kCrossSubnet) return same_subnet() ? Mode::kBgp : Mode::kIpip;
    return Mode::kBgp;
  }

};

}  // namespace

std::unique_ptr<Plugin> NewCalicoPlugin() { return std::make_unique<CalicoPlugin>(); }

}  // namespace sarena::diag
