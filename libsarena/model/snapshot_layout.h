// The snapshot directory's layout: every directory and file name of a snapshot, in one place for
// its writer (libsarena/collect, `sarena-diag collect`) and its readers (model/snapshot.h, the
// diag plugins). docs/diag-snapshot.md describes each file's format.
//
//   <dir>/cluster/pods.json nodes.json services.json endpointslices.json (or endpoints.json)
//                 ippools.json                                     (kubectl get ... -o json)
//   <dir>/nodes/<node>/ip-link.json ip-addr.json ip-route.json ip-rule.json ip-neigh.json
//                      bridge-fdb.json                             (ip -j / bridge -j)
//                      sysctl.txt iptables-save.txt ipset-save.txt (sysctl -a / *-save formats)
//                      sarena-endpoints.json sarena-programs.json sarena-cluster.json
//                                                 (sarena's own formats: proto/sarena_node.proto)
//   <dir>/nodes/<node>/pods/<namespace>/<pod>/ip-link.json ip-addr.json ip-route.json
//                                             ip-rule.json ip-neigh.json sysctl.txt
//
// Paths are relative to the snapshot directory, '/'-separated; node, namespace and pod names are
// single path components (callers reject "", ".", ".." and names containing '/').
#ifndef LIBSARENA_MODEL_SNAPSHOT_LAYOUT_H_
#define LIBSARENA_MODEL_SNAPSHOT_LAYOUT_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sarena::model {

/// Top-level directories.
inline constexpr absl::string_view kClusterDir = "cluster";
inline constexpr absl::string_view kNodesDir = "nodes";
/// Directory of a node's pod network namespaces, inside the node directory.
inline constexpr absl::string_view kPodsDir = "pods";

/// Files of cluster/ (`kubectl get <kind> -A -o json`; k8s.h parses them). endpoints.json is read
/// only when endpointslices.json is absent.
inline constexpr absl::string_view kPodsFile = "pods.json";
inline constexpr absl::string_view kNodesFile = "nodes.json";
inline constexpr absl::string_view kServicesFile = "services.json";
inline constexpr absl::string_view kEndpointSlicesFile = "endpointslices.json";
inline constexpr absl::string_view kEndpointsFile = "endpoints.json";
inline constexpr absl::string_view kIpPoolsFile = "ippools.json";

/// Files inside a node (or pod) directory: iproute2's JSON (`ip -j`, `bridge -j`), the
/// `sysctl -a` text of net.ipv4.* / net.bridge.*, `iptables-save` and `ipset save`.
inline constexpr absl::string_view kIpLinkFile = "ip-link.json";
inline constexpr absl::string_view kIpAddrFile = "ip-addr.json";
inline constexpr absl::string_view kIpRouteFile = "ip-route.json";
inline constexpr absl::string_view kIpRuleFile = "ip-rule.json";
inline constexpr absl::string_view kIpNeighFile = "ip-neigh.json";
inline constexpr absl::string_view kBridgeFdbFile = "bridge-fdb.json";
inline constexpr absl::string_view kSysctlFile = "sysctl.txt";
inline constexpr absl::string_view kIptablesFile = "iptables-save.txt";
/// Optional (`ipset save`): contents of the sets `-m set` rules refer to. Not recorded as missing.
inline constexpr absl::string_view kIpsetFile = "ipset-save.txt";

/// sarena's own node files, each the protobuf JSON mapping of a message of
/// libsarena/model/proto/sarena_node.proto: the endpoint list (SarenaEndpointsFile), the BPF
/// programs attached at device hooks (SarenaProgramsFile) and the cluster datapath maps
/// (SarenaClusterFile).
inline constexpr absl::string_view kSarenaEndpointsFile = "sarena-endpoints.json";
inline constexpr absl::string_view kSarenaProgramsFile = "sarena-programs.json";
inline constexpr absl::string_view kSarenaClusterFile = "sarena-cluster.json";

/// "cluster/<file>".
inline std::string ClusterPath(absl::string_view file) {
  return absl::StrCat(kClusterDir, "/", file);
}
/// "nodes/<node>".
inline std::string NodeDir(absl::string_view node) { return absl::StrCat(kNodesDir, "/", node); }
/// "nodes/<node>/<file>".
inline std::string NodePath(absl::string_view node, absl::string_view file) {
  return absl::StrCat(kNodesDir, "/", node, "/", file);
}
/// "nodes/<node>/pods/<namespace>/<pod>".
inline std::string PodDir(absl::string_view node, absl::string_view namespace_,
                          absl::string_view pod) {
  return absl::StrCat(kNodesDir, "/", node, "/", kPodsDir, "/", namespace_, "/", pod);
}

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_SNAPSHOT_LAYOUT_H_
