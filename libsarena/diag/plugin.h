// CNI plugins of the walk. The generic walk (walk.h) knows only the kernel: routes, rules,
// sysctls, netfilter, links, MTU, neighbours, tunnels, Services. A plugin adds what one CNI
// promises on top — the routes, devices, annotations and datapath programs it must have installed —
// and, for eBPF datapaths, takes over where a program (not the kernel) moves the packet.
#ifndef LIBSARENA_DIAG_PLUGIN_H_
#define LIBSARENA_DIAG_PLUGIN_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/diag/path_graph.h"
#include "libsarena/diag/query.h"
#include "libsarena/diag/snapshot_input.h"
#include "libsarena/model/k8s.h"
#include "libsarena/model/netfilter.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/snapshot.h"
#include "libsarena/model/topology.h"

namespace sarena::diag {

/// Where the packet is: a node's host netns, or a pod's netns (then `pod` is set and `node` is
/// the pod's node). `ns` is null when the snapshot lacks that netns (a pod directory missing).
/// The model's namespace reference (model/topology.h), named for the walk.
using Where = model::NetnsRef;

/// What a plugin hook decided.
struct PluginAction {
  enum class Kind {
    kContinue,      // the kernel's path applies (the generic walk goes on)
    kStop,          // the packet is dropped here (the plugin added the FATAL suspicion)
    kDeliverToPod,  // a datapath program hands the packet straight to `pod` (its netns,
                    // `pod_ifname`)
    kReenterHost,   // a program re-injects the packet into the same netns, arriving on `iif`
    kEncapsulate,   // a program set the tunnel key (`tunnel_key`) and sent the packet into the
                    // collect-metadata tunnel device `tunnel_dev` (bpf_skb_set_tunnel_key +
                    // bpf_redirect, or the device's own egress program): the device builds the
                    // outer header, the host routes it (OUTPUT, POSTROUTING) out of the underlay
    kRedirect,      // a program sends the packet straight out of `oif` toward `nexthop`
                    // (bpf_fib_lookup + bpf_redirect_neigh): no forwarding, no netfilter
  };
  /// The tunnel key of kEncapsulate (struct bpf_tunnel_key): remote underlay address, VNI, and
  /// whether the outer header gets DF (BPF_F_DONT_FRAGMENT; without it an outer packet larger
  /// than the underlay MTU is fragmented by the IP layer). The UDP port is the device's.
  struct TunnelKey {
    net::Ipv4 remote;
    uint32_t vni = 0;
    bool dont_fragment = false;
  };
  Kind kind = Kind::kContinue;
  const model::Pod* pod = nullptr;
  std::string pod_ifname = "eth0";
  std::string iif;
  std::string label;           // link label for the graph ("bpf redirect_peer", ...)
  bool decrement_ttl = false;  // the program decrements the TTL (local_delivery does)
  /// Findings that belong to the hop the packet reaches (e.g. a MAC the pod rejects); with
  /// `drop_at_target` the packet ends there.
  std::vector<Suspicion> at_target;
  bool drop_at_target = false;
  /// A flow a datapath program records for later packets of the same trace (any kind of action;
  /// the walk appends it to HookPacket::host_flows of the branch). Sarena's from_container
  /// records the packets pods send toward non-endpoints, so that their replies from a local
  /// backend cross the host stack (conntrack un-NAT) instead of being short-circuited.
  std::optional<Packet> record_host_flow;
  /// kEncapsulate: the tunnel device and key. `check_device_mtu`: the packet reached the device
  /// through the host stack (routed onto it), so the device MTU applies to it as on any egress;
  /// a bpf_redirect from TC ingress skips that check.
  std::string tunnel_dev;
  std::optional<TunnelKey> tunnel_key;
  bool check_device_mtu = false;
  /// kRedirect: the egress device and the next hop the FIB lookup returned.
  std::string oif;
  std::optional<net::Ipv4> nexthop;
  /// kEncapsulate / kRedirect: what the far end must do with the packet, shown (with a WARNING
  /// snapshot_incomplete) when the outer destination or next hop is not a node of the snapshot —
  /// the walk stops there and names the peer's expectations instead.
  std::string peer_expectation;

  static PluginAction Continue() { return {}; }
  static PluginAction Stop() {
    PluginAction a;
    a.kind = Kind::kStop;
    return a;
  }
};

/// The walk's state as plugins see it.
struct PluginContext {
  const model::Snapshot* snapshot = nullptr;
  const model::Cluster* cluster = nullptr;
  PathGraph* graph = nullptr;
  const Query* query = nullptr;
  /// The walk's topology of the snapshot (null outside a walk): Topology::FindPod finds a pod
  /// in the cluster objects or, when cluster/pods.json lacks it (e.g. a live `collect`), among
  /// the pod netns directories.
  model::Topology* topology = nullptr;

  /// The walk's once-per-branch keys (owned by the walk; null outside one).
  absl::flat_hash_set<std::string>* branch_seen = nullptr;
  /// The walk's absent-data rule (snapshot_input.h), set by the walk: true when `input` (of
  /// `w`'s namespace, or of cluster/) is in the snapshot; else the INFO file_missing on `hop`
  /// (once per namespace and file) and, for Absent::kEnd, the WARNING snapshot_incomplete.
  std::function<bool(const Where& w, PathGraph::Vertex hop, SnapshotInput input,
                     absl::string_view what, Absent then)>
      need;

  void Suspect(PathGraph::Vertex hop, Level level, absl::string_view code,
               absl::string_view message) const {
    graph->AddSuspicion(hop, level, code, message);
  }
  /// A plugin check that reads `input` asks here first (`need`; outside a walk, whether the
  /// input is in the snapshot, nothing recorded): when false, the check is not made — absent
  /// data is never evidence. `what` names the check in the file_missing message.
  bool Need(const Where& w, PathGraph::Vertex hop, SnapshotInput input, absl::string_view what,
            Absent then = Absent::kSkip) const {
    if (need) return need(w, hop, input, what, then);
    return HasSnapshotInput(*cluster, w.ns, input);
  }
  /// True the first time `key` is seen on the current branch of the walk (always true outside a
  /// walk). For checks whose findings belong to every path that crosses a place (a node's
  /// sysctls, a pod's gateway): when the walk forks (Service backends, multipath next hops)
  /// each branch runs them again, so a FATAL there is in every branch that crosses it and is
  /// not taken for a failure of one branch only.
  bool FirstInBranch(absl::string_view key) const {
    return branch_seen == nullptr || branch_seen->insert(std::string(key)).second;
  }
};

/// Per-packet facts at a hook.
struct HookPacket {
  Packet packet;       // the (inner) packet at this point
  bool reply = false;  // on the reply direction
  /// Flows recorded earlier in this trace by PluginAction::record_host_flow (sarena: packets a
  /// pod sent toward a non-endpoint; a pod-to-pod packet to such a flow's source address and
  /// port is its reply and must return through the host).
  const std::vector<Packet>* host_flows = nullptr;
  /// At OnIngress of a tunnel device after decapsulation: the outer header as it arrived and
  /// the VNI it carried (VXLAN); null / nullopt otherwise.
  const Packet* outer = nullptr;
  std::optional<uint32_t> vni;
};

/// A CNI plugin. Every hook has a do-nothing default.
class Plugin {
 public:
  virtual ~Plugin() = default;
  /// "generic", "calico", "sarena".
  virtual absl::string_view name() const = 0;

  /// A hard error met by a hook (a malformed plugin input file, naming file and field); the
  /// trace fails with it (sarena-diag exits 2). OK by default.
  virtual absl::Status error() const { return absl::OkStatus(); }

  // The default hooks do nothing; their parameters keep their names for the docs (and stay
  // quiet under a user's -Wextra -Werror).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
  /// Once per node the walk enters: node-wide expectations (sysctls, devices, annotations).
  virtual void CheckNode(const PluginContext& ctx, const Where& where, PathGraph::Vertex hop) {}

  /// A pod hop was created (source, destination, or any pod the path passes).
  virtual void CheckPod(const PluginContext& ctx, const Where& where, PathGraph::Vertex hop,
                        const HookPacket& p) {}

  /// A packet entered the node netns on `iif` (before netfilter PREROUTING). eBPF datapaths
  /// decide here (TC ingress).
  virtual PluginAction OnIngress(const PluginContext& ctx, const Where& where,
                                 absl::string_view iif, PathGraph::Vertex hop,
                                 const HookPacket& p) {
    return PluginAction::Continue();
  }

  /// After the route lookup of a packet in a node netns (forwarded or locally generated);
  /// `route` is ok(). The plugin checks the route against what the CNI installs. kStop ends the
  /// branch (the plugin reported a FATAL).
  virtual PluginAction AfterRoute(const PluginContext& ctx, const Where& where,
                                  PathGraph::Vertex hop, const HookPacket& p,
                                  const model::RouteResult& route) {
    return PluginAction::Continue();
  }

  /// After netfilter POSTROUTING, before the packet leaves on `oif`. `before` is the packet
  /// entering POSTROUTING, `after` (mutable) what leaves; `snat_done` tells whether netfilter
  /// rewrote the source. Plugins may check or model masquerading here.
  virtual PluginAction AfterPostrouting(const PluginContext& ctx, const Where& where,
                                        PathGraph::Vertex hop, const HookPacket& before,
                                        Packet* after, bool snat_done, bool netfilter_known,
                                        const model::RouteResult& route) {
    return PluginAction::Continue();
  }

  /// The route lookup for `p` failed in a node netns (`route` is the failed result: no route,
  /// unreachable, blackhole, prohibit); the walk has already added its FATAL. Plugins add what
  /// their CNI should have installed there (context, never a second verdict).
  virtual void OnRouteFailure(const PluginContext& ctx, const Where& where, PathGraph::Vertex hop,
                              const HookPacket& p, const model::RouteResult& route) {}

  /// The packet is about to be transmitted on `oif` (TC egress). eBPF datapaths decide here.
  virtual PluginAction OnEgress(const PluginContext& ctx, const Where& where, absl::string_view oif,
                                PathGraph::Vertex hop, const HookPacket& p) {
    return PluginAction::Continue();
  }
#pragma GCC diagnostic pop
};

/// The plugin with no CNI knowledge.
std::unique_ptr<Plugin> NewGenericPlugin();
/// Calico (plugin/calico.cc).
std::unique_ptr<Plugin> NewCalicoPlugin();
/// The sarena eBPF datapath (plugin/sarena_plugin.cc).
std::unique_ptr<Plugin> NewSarenaPlugin();

/// `--cni`: "calico", "sarena", "generic" (or "none") pick that plugin; "auto" picks sarena when a
/// node of the query (or any node, when the query names none) has `sarena_host` or
/// sarena-endpoints.json, else calico when the cluster has IP pools or such a node has cali*
/// interfaces, else generic. `nodes` are the node names to inspect first.
/// Errors: kInvalidArgument for an unknown name; errors of loading a node's files.
absl::StatusOr<std::unique_ptr<Plugin>> SelectPlugin(absl::string_view cni,
                                                     const model::Snapshot& snapshot,
                                                     const std::vector<std::string>& nodes);

/// Calico's host-side veth name for a pod: "cali" + the first 11 hex digits of
/// sha1("<namespace>.<name>") (Calico's libcalico-go naming; interface names are ≤ 15 bytes).
std::string CalicoVethName(absl::string_view namespace_, absl::string_view name);

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_PLUGIN_H_
