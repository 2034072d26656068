// A snapshot directory (docs/diag-snapshot.md) and lazy access to its parts. Its layout (every
// directory and file name) is model/snapshot_layout.h, shared with the writer (collect/).
//
// Every file is optional. A missing file is recorded (relative path) so the diagnoser can raise an
// INFO suspicion ("cannot check X: file Y missing"); a malformed file is an error naming the file
// and the field or byte. Opening reads only cluster/ and the list of node directories; a node's
// (or pod netns') files are parsed on first use and cached — a trace over a 5,000-node snapshot
// touches a handful of nodes. Nodes whose iptables-save.txt is the same file (hard link) or has
// the same text share one parsed ruleset.
#ifndef LIBSARENA_MODEL_SNAPSHOT_H_
#define LIBSARENA_MODEL_SNAPSHOT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/k8s.h"
#include "libsarena/model/netfilter.h"
#include "libsarena/model/netstack.h"
#include "libsarena/model/sarena_cluster.h"
#include "libsarena/model/snapshot_layout.h"
#include "libsarena/net/ip.h"

namespace sarena::model {

/// One endpoint of the sarena datapath: an entry of sarena-endpoints.json, the protobuf JSON of
/// sarena.snapshot.v1.SarenaEndpointsFile (model/proto/sarena_node.proto; its Endpoint has the
/// fields of sarenad's, so `sarena endpoint list -o json` output is such a file too).
struct SarenaEndpoint {
  std::string container_id;     // ref.containerId
  std::string ifname;           // ref.ifname (in the pod, "eth0")
  std::optional<net::Ipv4> ip;
  std::optional<net::Mac> pod_mac;
  std::optional<net::Mac> host_mac;
  std::string host_ifname;      // "lxc..." host-side veth
  uint32_t host_ifindex = 0;
  uint32_t endpoint_id = 0;
  uint32_t mtu = 0;
  std::optional<net::Ipv4> gateway;
  std::string pod_namespace;
  std::string pod_name;
};

/// Parses sarena-endpoints.json ({"endpoints": [...]}; snake_case or lowerCamelCase keys; the
/// legacy shapes, a bare array or {"items": [...]}, are read alike). An IPv6 `ip` or `gateway`
/// reads as absent. Errors: kInvalidArgument "parse <file>: endpoints[<i>].<field>: <cause>"
/// (a value of the wrong JSON type, an address or MAC that does not parse), and for an entry
/// that repeats a key of an earlier one — its ref (containerId/ifname, sarenad's key), its ip
/// (the BPF endpoint map's key) or its host_ifname — "parse <file>: endpoints[j].ip: duplicate
/// address '<ip>': endpoints[i] has it too" (never resolved by order).
absl::StatusOr<std::vector<SarenaEndpoint>> ParseSarenaEndpoints(
    absl::string_view json, absl::string_view file_name = kSarenaEndpointsFile);

/// One network namespace of a snapshot: a node's host netns or a pod's netns.
struct NetnsState {
  std::string id;                   // "node:<node>" or "pod:<ns>/<name>"
  std::string dir;                  // relative directory, e.g. "nodes/node-a/pods/default/web"
  Netstack netstack;                // finalized
  std::optional<Netfilter> netfilter;  // nullopt when iptables-save.txt is missing (or pod netns)
  /// Relative paths of the expected files that were absent ("nodes/node-a/ip-rule.json").
  std::vector<std::string> missing_files;
};

/// A node: its host netns plus the sarena endpoint list, if any.
struct NodeState : NetnsState {
  std::string name;
  std::optional<std::vector<SarenaEndpoint>> sarena_endpoints;  // nullopt = file missing
  /// sarena-cluster.json (the cluster datapath maps); nullopt = file absent. Not recorded in
  /// missing_files: a one-node sarenad has no cluster maps (the sarena plugin says so when the
  /// node has sarena_vxlan but no file).
  std::optional<SarenaCluster> sarena_cluster;
};

struct SnapshotOptions {
  /// Parse every node eagerly in Open() (tests, small snapshots). Default lazy.
  bool eager = false;
};

class Snapshot {
 public:
  /// Opens `dir`: parses cluster/ (missing files recorded) and lists nodes/ subdirectories.
  /// Errors: kNotFound "open snapshot '<dir>': no such directory"; kInvalidArgument when `dir` is
  /// a file ("not a directory"), and for a
  /// malformed cluster file (message names the file and field).
  static absl::StatusOr<std::unique_ptr<Snapshot>> Open(absl::string_view dir,
                                                        SnapshotOptions options = {});
  /// A snapshot built in memory (tests, generators): `cluster` finalized by the caller.
  static std::unique_ptr<Snapshot> FromParts(std::string dir, Cluster cluster,
                                             std::vector<std::unique_ptr<NodeState>> nodes);
  ~Snapshot();

  const std::string& dir() const { return dir_; }
  const Cluster& cluster() const { return cluster_; }

  /// Names of the node directories under nodes/ (sorted).
  const std::vector<std::string>& node_names() const { return node_names_; }
  bool HasNodeDir(absl::string_view node) const;
  /// Names of the nodes (sorted) whose directory has no `ip-link.json`, known without parsing
  /// any node (Open() looks for the file; FromParts() asks each node's netstack): whose devices,
  /// veth peers included, the snapshot cannot tell.
  const std::vector<std::string>& nodes_without_links() const { return nodes_without_links_; }

  /// The node's netns state, parsed on first call and cached (thread-safe; returned pointer
  /// valid for the Snapshot's lifetime). Errors: kNotFound "node '<n>': no directory
  /// nodes/<n> in snapshot"; kInvalidArgument naming the malformed file and field.
  absl::StatusOr<const NodeState*> Node(absl::string_view node) const;

  /// A pod's netns state from nodes/<node>/pods/<ns>/<pod>/. `node` may be empty: the pod's
  /// spec.nodeName from the cluster is used, else every node directory is searched.
  /// kNotFound when there is no such directory (the caller then models the pod without its
  /// netns, as an INFO). Cached like Node().
  absl::StatusOr<const NetnsState*> PodNetns(absl::string_view namespace_, absl::string_view pod,
                                             absl::string_view node = {}) const;

  /// (namespace, name) of every pod directory nodes/<node>/pods/<namespace>/<name>/ of `node`,
  /// sorted — the pods whose netns was collected, listed or not in cluster/pods.json. Empty when
  /// the node has no pods/ directory, and for a snapshot built in memory (no dir()); an entry
  /// that is not a directory is not a pod.
  std::vector<std::pair<std::string, std::string>> PodDirsOn(absl::string_view node) const;

  /// Raw text of any file in the snapshot, by path relative to dir() (for plugin-specific extra
  /// files). kNotFound when absent; kInvalidArgument for paths escaping the snapshot ("..").
  absl::StatusOr<std::string> ReadFile(absl::string_view relative_path) const;

  /// Drops every cached node and pod netns state; the next Node() / PodNetns() parses the files
  /// again (parsed iptables rulesets, shared by nodes with the same iptables-save.txt, are kept). Invalidates every pointer Node() and PodNetns() returned: only for a long-running
  /// caller bounding its memory between traces (no trace may be using the snapshot).
  void ClearCache() const;
  /// Number of node / pod netns states currently cached.
  size_t cached_nodes() const;
  size_t cached_pods() const;

 private:
  Snapshot();
  struct Cache;
  std::string dir_;
  Cluster cluster_;
  std::vector<std::string> node_names_;
  std::vector<std::string> nodes_without_links_;
  std::unique_ptr<Cache> cache_;
};

/// Loads one netns directory (absolute `abs_dir`, reported as `rel_dir`) into `state`:
/// every file optional. Exposed for sarena-diag collect round-trip tests.
absl::Status LoadNetnsDir(const std::string& abs_dir, const std::string& rel_dir, bool with_iptables,
                          NetnsState* state);

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_SNAPSHOT_H_
