#include "libsarena/daemon/metrics_node.h"

#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "libsarena/base/log.h"
#include "libsarena/datapath/abi.h"

namespace sarena::daemon {
namespace {

namespace v1 = ::sarena::rpc::v1;

MetricFamily Family(std::string name, MetricType type, std::string help) {
  return MetricFamily{.name = std::move(name), .type = type, .help = std::move(help)};
}

void Add(MetricFamily& f, Labels labels, double value) {
  f.samples.push_back({.labels = std::move(labels), .value = value});
}

double U(uint64_t v) { return static_cast<double>(v); }

void AppendEndpoints(const v1::EndpointListResponse& list, MetricFamily& packets,
                     MetricFamily& bytes) {
  for (const v1::Endpoint& e : list.endpoints()) {
    Labels base = {{"endpoint_id", absl::StrCat(e.endpoint_id())},
                   {"namespace", e.pod_namespace()},
                   {"pod", e.pod_name()},
                   {"container_id", e.ref().container_id()},
                   {"interface", e.ref().ifname()},
                   {"host_interface", e.host_ifname()}};
    auto with = [&base](const char* direction) {
      Labels l = base;
      l.emplace_back("direction", direction);
      return l;
    };
    const v1::Counters& c = e.counters();
    Add(packets, with("rx"), U(c.rx_packets()));
    Add(packets, with("tx"), U(c.tx_packets()));
    Add(bytes, with("rx"), U(c.rx_bytes()));
    Add(bytes, with("tx"), U(c.tx_bytes()));
  }
}

void AppendCluster(const v1::ClusterStatus& c, std::vector<MetricFamily>* out) {
  MetricFamily info = Family("sarena_cluster_info", MetricType::kGauge,
                             "1, labelled with this node's name, node id and routing mode.");
  Add(info,
      {{"node_name", c.node_name()},
       {"node_id", absl::StrCat(c.node_id())},
       {"routing_mode", c.routing_mode()}},
      1);
  MetricFamily connected = Family("sarena_cluster_etcd_connected", MetricType::kGauge,
                                  "1 while the last etcd call succeeded, else 0.");
  Add(connected, {}, c.etcd_connected() ? 1 : 0);
  MetricFamily registered = Family("sarena_cluster_registered", MetricType::kGauge,
                                   "1 once this node's record and claims are in etcd, else 0.");
  Add(registered, {}, c.registered() ? 1 : 0);
  MetricFamily synced = Family("sarena_cluster_synced", MetricType::kGauge,
                               "1 once the first full peer list from etcd is applied, else 0.");
  Add(synced, {}, c.synced() ? 1 : 0);
  MetricFamily revision = Family("sarena_cluster_etcd_revision", MetricType::kGauge,
                                 "The last etcd revision this node has seen.");
  Add(revision, {}, static_cast<double>(c.revision()));
  MetricFamily known = Family("sarena_cluster_peers_known", MetricType::kGauge,
                              "Peer nodes in the peer table (this node excluded).");
  MetricFamily ready = Family("sarena_cluster_peers_ready", MetricType::kGauge,
                              "Peer nodes whose lease is live (known peers not lost).");
  int n_ready = 0;
  for (const v1::PeerStatus& p : c.peers()) n_ready += p.lost() ? 0 : 1;
  Add(known, {}, c.peers_size());
  Add(ready, {}, n_ready);
  MetricFamily apply_at = Family(
      "sarena_cluster_last_apply_timestamp_seconds", MetricType::kGauge,
      "When the peer table was last applied to the datapath, seconds since the epoch (0 = never).");
  Add(apply_at, {}, static_cast<double>(c.last_apply_unix()));
  MetricFamily apply_took = Family("sarena_cluster_last_apply_duration_seconds", MetricType::kGauge,
                                   "How long the last application of the peer table took.");
  Add(apply_took, {}, c.last_apply_duration_seconds());
  MetricFamily lost = Family("sarena_cluster_peer_lost", MetricType::kGauge,
                             "1 while a peer's lease has expired (its routes are withdrawn after "
                             "--peer-grace), else 0.");
  MetricFamily packets = Family("sarena_cluster_peer_packets_total", MetricType::kCounter,
                                "Packets the datapath sent toward (tx) and accepted from (rx) a "
                                "peer node (sarena_node_ctr, summed over CPUs).");
  MetricFamily bytes = Family("sarena_cluster_peer_bytes_total", MetricType::kCounter,
                              "Bytes the datapath sent toward (tx) and accepted from (rx) a peer "
                              "node (sarena_node_ctr, summed over CPUs).");
  for (const v1::PeerStatus& p : c.peers()) {
    Labels base = {{"peer", p.name()}, {"node_id", absl::StrCat(p.node_id())}};
    Add(lost, base, p.lost() ? 1 : 0);
    auto with = [&base](const char* direction) {
      Labels l = base;
      l.emplace_back("direction", direction);
      return l;
    };
    Add(packets, with("rx"), U(p.rx_packets()));
    Add(packets, with("tx"), U(p.tx_packets()));
    Add(bytes, with("rx"), U(p.rx_bytes()));
    Add(bytes, with("tx"), U(p.tx_bytes()));
  }
  for (MetricFamily* f : {&info, &connected, &registered, &synced, &revision, &known, &ready,
                          &apply_at, &apply_took, &lost, &packets, &bytes}) {
    out->push_back(std::move(*f));
  }
}

}  // namespace

std::vector<MetricFamily> NodeFamilies(const NodeFigures& figures) {
  std::vector<MetricFamily> out;
  MetricFamily ready = Family("sarena_ready", MetricType::kGauge,
                              "1 when sarenad is ready for CNI ADD (CNI STATUS succeeds), else 0.");
  MetricFamily endpoints =
      Family("sarena_endpoints", MetricType::kGauge, "Endpoints (pod attachments) on this node.");
  MetricFamily attach = Family("sarena_attach_mode_info", MetricType::kGauge,
                               "1, labelled with how the datapath's programs are attached: tcx "
                               "(TCX links) or tc (clsact filters).");
  MetricFamily used = Family("sarena_ipam_used_addresses", MetricType::kGauge,
                             "Pod addresses allocated in the pod CIDR.");
  MetricFamily free = Family("sarena_ipam_free_addresses", MetricType::kGauge,
                             "Pod addresses still allocatable in the pod CIDR.");
  if (figures.status) {
    const v1::StatusResponse& s = *figures.status;
    Add(ready, {}, s.ready() ? 1 : 0);
    // Before a clustered node's bring-up the status has no pod CIDR nor datapath yet.
    if (!s.pod_cidr().empty()) {
      Add(endpoints, {}, s.endpoints());
      Add(used, {{"pod_cidr", s.pod_cidr()}}, s.ips_used());
      Add(free, {{"pod_cidr", s.pod_cidr()}}, s.ips_free());
    }
    if (!s.attach_mode().empty()) Add(attach, {{"mode", s.attach_mode()}}, 1);
  }
  MetricFamily packets =
      Family("sarena_endpoint_packets_total", MetricType::kCounter,
             "Packets the datapath delivered to (rx) and handled from (tx) an endpoint "
             "(sarena_ep_counters, summed over CPUs).");
  MetricFamily bytes = Family("sarena_endpoint_bytes_total", MetricType::kCounter,
                              "Bytes the datapath delivered to (rx) and handled from (tx) an "
                              "endpoint (sarena_ep_counters, summed over CPUs).");
  if (figures.endpoints) AppendEndpoints(*figures.endpoints, packets, bytes);
  MetricFamily drop_packets = Family("sarena_drop_packets_total", MetricType::kCounter,
                                     "Packets the datapath dropped, by reason (SARENA_DROP_REASONS "
                                     "in sarena/abi.h; `sarena drops` prints the same).");
  MetricFamily drop_bytes = Family("sarena_drop_bytes_total", MetricType::kCounter,
                                   "Bytes of the packets the datapath dropped, by reason.");
  if (figures.drops) {
    for (size_t i = 1; i < figures.drops->size(); ++i) {  // 0 is "none": not a drop
      const std::string reason = datapath::DropReasonName(static_cast<uint32_t>(i));
      Add(drop_packets, {{"reason", reason}}, U((*figures.drops)[i].packets));
      Add(drop_bytes, {{"reason", reason}}, U((*figures.drops)[i].bytes));
    }
  }
  for (MetricFamily* f : {&ready, &endpoints, &attach, &used, &free, &packets, &bytes,
                          &drop_packets, &drop_bytes}) {
    out.push_back(std::move(*f));
  }
  if (figures.status && figures.status->has_cluster()) {
    AppendCluster(figures.status->cluster(), &out);
  }
  return out;
}

NodeMetrics::NodeMetrics(Handler handler, std::string bpffs)
    : handler_(std::move(handler)), bpffs_(std::move(bpffs)) {}

RequestObserver NodeMetrics::observer() {
  return [this](const v1::Request& request, const v1::Response& response,
                absl::Duration elapsed) { cni_.Observe(request, response, elapsed); };
}

absl::StatusOr<std::string> NodeMetrics::Render() {
  NodeFigures figures;
  // The daemon itself asks (uid 0, its own pid), as `sarena status` / `sarena endpoint list`
  // would: one computation of the status, not two.
  const PeerCred self{.pid = ::getpid(), .uid = 0, .gid = 0};
  auto ask = [&](v1::Request request) {
    v1::Response r = handler_(request, self);
    if (r.has_error()) SARENA_LOG(Debug, "metrics: ", r.error().message());
    return r;
  };
  v1::Request request;
  request.mutable_status();
  if (v1::Response r = ask(request); r.has_status()) figures.status = r.status();
  request.mutable_endpoint_list();
  if (v1::Response r = ask(request); r.has_endpoint_list()) figures.endpoints = r.endpoint_list();
  if (!maps_) {
    absl::StatusOr<datapath::Maps> maps = datapath::Maps::OpenPinned(bpffs_);
    if (maps.ok()) {
      maps_ = *std::move(maps);
    } else {
      SARENA_LOG(Debug, "metrics: no drop counters yet: ", maps.status().message());
    }
  }
  if (maps_) {
    absl::StatusOr<std::vector<datapath::DropCounter>> drops = maps_->drops.ReadAll();
    if (drops.ok()) {
      figures.drops = *std::move(drops);
    } else {
      SARENA_LOG(Debug, "metrics: read drop counters: ", drops.status().message());
    }
  }
  std::vector<MetricFamily> families = NodeFamilies(figures);
  cni_.AppendFamilies(&families);
  return WriteExposition(families);
}

}  // namespace sarena::daemon
