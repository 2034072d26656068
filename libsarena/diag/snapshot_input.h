// The diagnoser's one rule for absent snapshot data (docs/diag-snapshot.md, "Missing files"):
// every input the walk and the plugins read is named here, and a check is made only when its
// input was in the snapshot. Absent data is reported, never taken as evidence: the first check
// that needs an absent file records an INFO file_missing naming it (once per namespace and file);
// where the path cannot go on soundly without it, the walk ends the path there with a WARNING
// snapshot_incomplete instead of concluding a FATAL; where only that check depends on it, the
// check is skipped and the walk goes on.
#ifndef LIBSARENA_DIAG_SNAPSHOT_INPUT_H_
#define LIBSARENA_DIAG_SNAPSHOT_INPUT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "libsarena/model/k8s.h"
#include "libsarena/model/snapshot.h"

namespace sarena::diag {

/// A snapshot input: a file of a network namespace (node or pod directory) or of cluster/. The
/// names are those of model/snapshot_layout.h.
enum class SnapshotInput : uint8_t {
  kLinks,           // <netns>/ip-link.json: device kinds, veth peers, bridge ports, tunnels
  kAddrs,           // <netns>/ip-addr.json: the namespace's own addresses
  kRoutes,          // <netns>/ip-route.json
  kRules,           // <netns>/ip-rule.json (the kernel's three default rules are assumed)
  kNeighbors,       // <netns>/ip-neigh.json
  kSysctls,         // <netns>/sysctl.txt
  kFdb,             // <netns>/bridge-fdb.json
  kIptables,        // nodes/<node>/iptables-save.txt (a pod netns has none in a snapshot)
  kEndpointSlices,  // cluster/endpointslices.json (or endpoints.json)
  kIpPools,         // cluster/ippools.json (Calico)
};

/// What an absent input does to the path: kSkip skips only the check that needs it (the rest of
/// the path does not depend on it); kEnd ends the path there (snapshot_incomplete).
enum class Absent : uint8_t { kSkip, kEnd };

/// True for the inputs of cluster/ (kEndpointSlices, kIpPools), false for a namespace's files.
bool IsClusterInput(SnapshotInput input);

/// The relative path of `input`'s file: "<ns->dir>/<file>" for a namespace input (empty when
/// `ns` is null), "cluster/<file>" for a cluster input (`ns` unused). No errors.
std::string SnapshotInputFile(const model::NetnsState* ns, SnapshotInput input);

/// Whether `input` was read from the snapshot (a snapshot built in memory has every cluster
/// input). False for a namespace input when `ns` is null (no directory at all: the caller reports
/// that). No errors.
bool HasSnapshotInput(const model::Cluster& cluster, const model::NetnsState* ns,
                      SnapshotInput input);

}  // namespace sarena::diag

#endif  // LIBSARENA_DIAG_SNAPSHOT_INPUT_H_
