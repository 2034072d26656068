// The topology of a snapshot: which network namespace is whose (a node's host netns, a pod's),
// who owns an address, which pods a node runs (cluster/pods.json plus the pod netns directories
// it lacks), which namespace holds the other end of a veth, and which device is a node's
// uplink. The walk (diag/walk/) asks these questions at every hop; they are facts of the
// snapshot and the kernel's device model (veth(4): a pair's ends know each other's ifindex and
// the peer's netns id, IFLA_LINK / IFLA_LINK_NETNSID), not of the walk.
#ifndef LIBSARENA_MODEL_TOPOLOGY_H_
#define LIBSARENA_MODEL_TOPOLOGY_H_

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/k8s.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/snapshot.h"

namespace sarena::model {

/// One network namespace of a snapshot: a node's host netns (`pod` null), or a pod's netns
/// (`pod` set, `node` the state of the pod's node). `ns` is null when the snapshot lacks that
/// netns (no node directory, no pod directory): the place is known by name only. Pointers are
/// into the Snapshot and Cluster (valid while they live, see Snapshot::ClearCache). Cheap to copy.
struct NetnsRef {
  const NetnsState* ns = nullptr;
  const NodeState* node = nullptr;
  const Pod* pod = nullptr;
  std::string node_name;

  bool in_pod() const { return pod != nullptr; }
  const Netstack* netstack() const { return ns ? &ns->netstack : nullptr; }
};

/// A device of a namespace: `ifname` as `ip link` prints it, in `netns`. `ifname` may be empty
/// when the namespace is known but its device is not (no ip-link.json, or no device found).
struct DeviceRef {
  NetnsRef netns;
  std::string ifname;
};

/// Topology lookups over one Snapshot (and its Cluster). Namespaces are parsed lazily through
/// Snapshot::Node / PodNetns; the pods of a node are computed once and cached. Not thread-safe
/// (one Topology per trace); the Snapshot must outlive it. Errors are the Snapshot's: a node or
/// pod file that does not parse (kInvalidArgument / kDataLoss naming the file) is returned,
/// never skipped; a namespace the snapshot lacks (kNotFound) is not an error here.
class Topology {
 public:
  /// Lookups that must parse every node of the snapshot (an address no node lists in
  /// cluster/nodes.json; a veth's far end on another node) are made only when the snapshot has
  /// at most this many nodes: a trace on a 1,000-node snapshot parses the nodes on its path, not
  /// the cluster. Beyond it those lookups answer "not found".
  static constexpr size_t kMaxNodesScanned = 64;

  explicit Topology(const Snapshot& snap) : snap_(snap), cluster_(snap.cluster()) {}

  /// Node `node`'s host netns; `ns`/`node` null when nodes/<node> is not in the snapshot.
  absl::StatusOr<NetnsRef> NodeRef(absl::string_view node) const;
  /// Pod `pod`'s netns: the node's for a hostNetwork pod (then `pod` is null in the result),
  /// else nodes/<node>/pods/<ns>/<name> (`ns` null when that directory is absent).
  absl::StatusOr<NetnsRef> PodRef(const Pod& pod) const;

  /// The device that carries node `node`'s address: the first of its InternalIPs, then Calico's
  /// projectcalico.org/IPv4Address, configured on a device; else the device of its default
  /// route (the route to 8.8.8.8, looked up, never sent to). Null when `node.ns` is null or
  /// nothing matches.
  const Interface* PrimaryInterface(const NetnsRef& node) const;

  /// The namespace and device that own `ip`: a node whose cluster/nodes.json addresses include
  /// it (the device with it configured, else its PrimaryInterface, "" when the node's netns is
  /// absent); else, up to kMaxNodesScanned nodes, the first node (by name) with `ip` on a device.
  /// Pod addresses are not searched. nullopt when nobody owns it.
  absl::StatusOr<std::optional<DeviceRef>> OwnerOf(const net::Ipv4& ip) const;

  /// The pods of node `node`: the cluster's (Cluster::PodsOnNode), then one synthesized for each
  /// pod directory of the snapshot that cluster/pods.json lacks (a `collect` without kubectl
  /// data): Running, ready, its podIP the primary address of its first non-loopback device.
  /// Computed once per node; the pointer is valid for the Topology's lifetime. Errors: a pod
  /// directory's file that does not parse (Snapshot::PodNetns's error, naming the file).
  absl::StatusOr<const std::vector<const Pod*>*> PodsOn(const std::string& node);

  /// Pod `ns`/`name`: the cluster's, else one PodsOn synthesized on any node; null when neither.
  /// Errors: PodsOn's, for a node searched on the way.
  absl::StatusOr<const Pod*> FindPod(const std::string& ns, const std::string& name);

  /// The pod of node `node` whose netns has veth `ifindex` paired with `peer_ifindex` (the node's
  /// end) — ifindexes are per netns, so a pod's eth0 is found by the pair. hostNetwork pods are
  /// skipped; a pod whose directory is absent is skipped. nullopt when no pod matches.
  absl::StatusOr<std::optional<DeviceRef>> PodByIfindex(const NetnsRef& node, int ifindex,
                                                        int peer_ifindex);

  /// True when veth `veth` of node `node` leads into one of that node's pods: its own peer is a
  /// pod's device by the ifindex pair, or another veth with the same link-netnsid does (one
  /// netns id names one namespace). False for a non-veth or when `node.ns` is null.
  absl::StatusOr<bool> VethPeerIsPod(const NetnsRef& node, const Interface& veth);

  /// The other end of veth `oif` of node `w` when it is another node's device (a "cable"
  /// between two nodes' namespaces): the candidates are the other nodes' veths with ifindex ==
  /// oif's peer ifindex whose own peer ifindex is oif's and that do not lead into one of their
  /// own pods (VethPeerIsPod, or RoutesAPodOver when the pod's own netns is not in the
  /// snapshot); several are told apart by `nexthop` being local there, then by a shared subnet.
  /// nullopt when `oif` has no peer data, leads into one of `w`'s pods, no node matches, or the
  /// snapshot has more than kMaxNodesScanned nodes.
  absl::StatusOr<std::optional<DeviceRef>> NodeVethPeer(const NetnsRef& w, const Interface& oif,
                                                        const net::Ipv4& nexthop);

  /// True when `oif` is node `w`'s uplink and a veth that does not lead into one of its pods (a
  /// kind / k3d node: eth0's peer is in the Docker host's bridge network): the device of the
  /// node's address (PrimaryInterface) or of its default route. False in a pod, for a
  /// non-veth, or when `w`'s netns is absent.
  absl::StatusOr<bool> IsUplink(const NetnsRef& w, const Interface& oif);

 private:
  // True when `node`'s main table has a /32 route over `dev` to a (non-hostNetwork) pod's
  // address: the host end of a pod's veth by the node's own routes, known without the pod's
  // netns (ifindexes are small per-netns numbers, so a pair can match a pod veth of another node).
  bool RoutesAPodOver(const NetnsRef& node, const Interface& dev) const;

  const Snapshot& snap_;
  const Cluster& cluster_;
  std::deque<Pod> synthetic_pods_;  // stable addresses for PodsOn's pointers
  absl::flat_hash_map<std::string, std::vector<const Pod*>> pods_on_;
};

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_TOPOLOGY_H_
