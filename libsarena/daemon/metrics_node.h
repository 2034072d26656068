// sarenad's metrics (docs/metrics.md lists every family): what one scrape reads — the STATUS
// and EndpointList answers of the daemon's own request handler (the very code that answers
// `sarena status` / `sarena endpoint list`, cluster fields included via ClusterNode::FillStatus),
// the drop counters of the pinned maps (opened read-only by datapath::Maps::OpenPinned) and the
// CNI request figures (CniRequestMetrics) — turned into metric families (NodeFamilies) and rendered (metrics.h).
#ifndef LIBSARENA_DAEMON_METRICS_NODE_H_
#define LIBSARENA_DAEMON_METRICS_NODE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "libsarena/daemon/metrics.h"
#include "libsarena/daemon/server.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::daemon {

/// The figures of one scrape. A missing one (nullopt) contributes its families without samples:
/// `endpoints` before a clustered sarenad finished its bring-up, `drops` before the maps are
/// pinned.
struct NodeFigures {
  std::optional<rpc::v1::StatusResponse> status;
  std::optional<rpc::v1::EndpointListResponse> endpoints;
  std::optional<std::vector<datapath::DropCounter>> drops;  // index = sarena_drop_reason
};

/// The families of `figures` in a fixed order (docs/metrics.md): sarena_ready, sarena_endpoints,
/// sarena_attach_mode_info, sarena_ipam_{used,free}_addresses, sarena_endpoint_{packets,bytes}_total,
/// sarena_drop_{packets,bytes}_total (every reason of SARENA_DROP_REASONS but "none", by its
/// datapath::DropReasonName), then — only when status.cluster is set — the sarena_cluster_*
/// families. The CNI families are not included (CniRequestMetrics::AppendFamilies).
std::vector<MetricFamily> NodeFamilies(const NodeFigures& figures);

/// The collector sarenad serves on --metrics-address.
class NodeMetrics {
 public:
  /// `handler` is the daemon's request handler (the one given to Server::Create); `bpffs` the
  /// --bpffs pin root of the datapath's maps.
  NodeMetrics(Handler handler, std::string bpffs);

  /// The CNI request figures; feed them from ServerOptions::observe (see observer()).
  CniRequestMetrics& cni() { return cni_; }
  /// A ServerOptions::observe that counts into cni().
  RequestObserver observer();

  /// Collects and renders one scrape (text format 0.0.4). Call on the Server's worker thread
  /// (MetricsServer does), serialized with requests: the handler needs that. A figure that
  /// cannot be read is left out (see NodeFigures) and logged at debug level.
  /// Errors: WriteExposition's (kInvalidArgument: a family this code built is malformed).
  absl::StatusOr<std::string> Render();

 private:
  Handler handler_;
  std::string bpffs_;
  CniRequestMetrics cni_;
  std::optional<datapath::Maps> maps_;  // opened on the first scrape that finds the pins
};

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_METRICS_NODE_H_
