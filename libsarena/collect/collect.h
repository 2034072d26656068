// `sarena-diag collect`: writes one node's part of a snapshot (docs/diag-snapshot.md) from a live
// node, in exactly the formats the snapshot reader takes, at the paths of model/snapshot_layout.h:
// the node's and each pod's iproute2 files, sysctl.txt, and for the node iptables-save.txt,
// bridge-fdb.json and sarena's own files: sarena-endpoints.json (the pinned endpoint map, named
// with sarenad's endpoint records when it answers; those records alone when the map is not
// pinned), sarena-programs.json (BPF programs attached at device hooks) and sarena-cluster.json
// (the cluster datapath maps, when pinned).
// The iproute2 files come from running `ip -j ...` / `bridge -j fdb show` / `iptables-save`
// (the documented formats, byte for byte); sysctl.txt is read from /proc/sys/net/ipv4 and
// /proc/sys/net/bridge in the netns (the `sysctl -a` format, net.ipv4.* and net.bridge.* keys);
// programs come from BPF_PROG_QUERY (TCX) and tc cls_bpf filters (datapath::AttachedPrograms);
// the sarena maps are opened read-only by pin (datapath::Maps::OpenPinned), so they are read
// even when sarenad is down; sarenad's records come over its socket (rpc::Client). Each
// command runs inside the node or pod network namespace (setns in a child process), never changing
// the caller's namespace.
#ifndef LIBSARENA_COLLECT_COLLECT_H_
#define LIBSARENA_COLLECT_COLLECT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sarena::collect {

/// One pod network namespace to collect: pods/<namespace_>/<name>/ from `netns` (a path such
/// as /var/run/netns/cni-1234 or /proc/<pid>/ns/net).
struct PodNetnsSpec {
  std::string namespace_;
  std::string name;
  std::string netns;
};

struct CollectOptions {
  /// Snapshot directory to write into (created; existing node files are replaced).
  std::string out_dir;
  /// Node name (directory nodes/<node>); empty = this host's hostname.
  std::string node;
  /// Network namespace of the node: "" = the caller's, else a name under /var/run/netns or a
  /// path. Simulated nodes of the test suite are such namespaces.
  std::string node_netns;
  /// Pods to collect besides those found in the sarena endpoint list.
  std::vector<PodNetnsSpec> pods;
  /// Also collect every pod the sarena endpoint list names (with its netns path).
  bool pods_from_endpoints = true;
  /// Pods collected after `pods` and the endpoint list's, each skipped when its namespace (nsfs
  /// inode) was already collected under another name (`sarena-diag trace --live` names every
  /// namespace whose veth peer is in the node's "netns/<name>", and the endpoint list's name
  /// for a pod wins).
  std::vector<PodNetnsSpec> fallback_pods;
  /// sarenad's socket, asked for its endpoint records (EndpointList, libsarena/rpc/client.h);
  /// skipped when the socket does not exist, and a daemon that does not answer is listed in
  /// `skipped`: the pinned maps are read without it.
  std::string sarena_socket = "/run/sarena/sarenad.sock";
  /// bpffs directory of the datapath's pinned maps. When the endpoint map is pinned there, the
  /// endpoint list is written from the MAP (what the programs really use: pod/host MAC, ifindex),
  /// with names and netns taken from the daemon's records; empty = do not read the map.
  std::string bpffs = "/sys/fs/bpf/sarena";
  /// Collect attached BPF programs (needs CAP_BPF / root).
  bool programs = true;
};

/// What Collect wrote or skipped (for the CLI to print).
struct CollectReport {
  std::vector<std::string> written;  // relative paths
  std::vector<std::string> skipped;  // "<file>: <reason>"
  /// One collected pod namespace: pods/<namespace_>/<name>/ came from `netns` (the path
  /// collected), whose nsfs inode is `inode` (what `readlink /proc/PID/ns/net` shows).
  struct PodNetns {
    PodNetnsSpec spec;
    uint64_t inode = 0;
  };
  std::vector<PodNetns> pods;
};

/// Parses "--pod NS/NAME=NETNS". kInvalidArgument naming the text.
absl::StatusOr<PodNetnsSpec> ParsePodNetnsSpec(absl::string_view text);

/// Collects. Errors: kInvalidArgument for bad options; kNotFound when `node_netns` or a pod
/// netns does not exist; kInternal when a required tool (`ip`) fails (its stderr in the
/// message). Optional sources (bridge, iptables-save, sarena, BPF) that fail are listed in
/// `skipped`, not errors.
absl::StatusOr<CollectReport> Collect(const CollectOptions& options);

/// The `sysctl -a` format ("net.ipv4.conf.eth0.rp_filter = 1", dots in device names written
/// as '/') of every readable file under `proc_sys_net_ipv4` (normally /proc/sys/net/ipv4) and
/// its sibling bridge/ (br_netfilter's net.bridge.* switches, when loaded) for the calling
/// thread's netns, sorted by key.
absl::StatusOr<std::string> ReadIpv4Sysctls(
    const std::string& proc_sys_net_ipv4 = "/proc/sys/net/ipv4");

}  // namespace sarena::collect

#endif  // LIBSARENA_COLLECT_COLLECT_H_
