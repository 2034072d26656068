// The snapshot inputs of the diagnoser's absent-data rule (snapshot_input.h).
#include "libsarena/diag/snapshot_input.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "libsarena/model/snapshot_layout.h"

namespace sarena::diag {
namespace {

// The netstack source behind a namespace input; nullopt for the other inputs.
std::optional<model::NetstackSource> NetstackSourceOf(SnapshotInput input) {
  switch (input) {
    case SnapshotInput::kLinks: return model::NetstackSource::kLinks;
    case SnapshotInput::kAddrs: return model::NetstackSource::kAddrs;
    case SnapshotInput::kRoutes: return model::NetstackSource::kRoutes;
    case SnapshotInput::kRules: return model::NetstackSource::kRules;
    case SnapshotInput::kNeighbors: return model::NetstackSource::kNeighbors;
    case SnapshotInput::kSysctls: return model::NetstackSource::kSysctls;
    case SnapshotInput::kFdb: return model::NetstackSource::kFdb;
    default: return std::nullopt;
  }
}

bool ClusterFileMissing(const model::Cluster& cluster, absl::string_view file) {
  const std::vector<std::string>& missing = cluster.files().missing;
  return std::find(missing.begin(), missing.end(), model::ClusterPath(file)) != missing.end();
}

}  // namespace

bool IsClusterInput(SnapshotInput input) {
  return input == SnapshotInput::kEndpointSlices || input == SnapshotInput::kIpPools;
}

std::string SnapshotInputFile(const model::NetnsState* ns, SnapshotInput input) {
  switch (input) {
    case SnapshotInput::kEndpointSlices: return model::ClusterPath(model::kEndpointSlicesFile);
    case SnapshotInput::kIpPools: return model::ClusterPath(model::kIpPoolsFile);
    default: break;
  }
  if (ns == nullptr) return "";
  if (input == SnapshotInput::kIptables) return absl::StrCat(ns->dir, "/", model::kIptablesFile);
  return absl::StrCat(ns->dir, "/", model::ToString(*NetstackSourceOf(input)));
}

bool HasSnapshotInput(const model::Cluster& cluster, const model::NetnsState* ns,
                      SnapshotInput input) {
  switch (input) {
    case SnapshotInput::kEndpointSlices:
      return !ClusterFileMissing(cluster, model::kEndpointSlicesFile);
    case SnapshotInput::kIpPools:
      return !ClusterFileMissing(cluster, model::kIpPoolsFile);
    case SnapshotInput::kIptables:
      return ns != nullptr && ns->netfilter.has_value();
    default:
      return ns != nullptr && ns->netstack.Has(*NetstackSourceOf(input));
  }
}

}  // namespace sarena::diag
