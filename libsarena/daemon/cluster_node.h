// sarenad in a cluster (--etcd-endpoints): the glue between the registry (cluster::Agent: this
// node's lease-bound record, its pod CIDR and node id, the desired peer table) and the cluster
// datapath (datapath::Overlay: sarena_vxlan, tunnel and peer maps, peer routes).
//
// Life cycle, as sarenad drives it:
//   1. Register(): find the uplink (underlay address, MTU), claim a pod CIDR and a node id and put
//      the node record; retries with backoff while etcd is unreachable (status() says so).
//   2. The node's datapath is brought up with the claimed pod CIDR (node IP = its first address,
//      pod MTU = pod_mtu()).
//   3. StartDatapath(): Overlay::Setup on that datapath, then the agent's list-then-watch loop,
//      whose every change of the desired peer table is applied with Overlay::Sync.
// Readiness (CNI STATUS, docs/cluster.md "Bring-up and readiness"): ready only once registered and
// the first full peer list is applied. With etcd down afterwards nothing is withdrawn: the pinned
// maps keep forwarding.
#ifndef LIBSARENA_DAEMON_CLUSTER_NODE_H_
#define LIBSARENA_DAEMON_CLUSTER_NODE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "libsarena/cluster/agent.h"
#include "libsarena/daemon/endpoint_manager.h"
#include "libsarena/daemon/server.h"
#include "libsarena/datapath/overlay.h"
#include "libsarena/net/ip.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::daemon {

/// sarenad's cluster flags.
struct ClusterOptions {
  std::string etcd_endpoints;                 // --etcd-endpoints unix:///...|http://host:port
  std::string node_name;                      // --node-name (default: the hostname)
  net::Ipv4Prefix cluster_cidr;               // --cluster-cidr
  int node_mask_len = 24;                     // --node-mask-len: size of a claimed pod CIDR
  std::optional<net::Ipv4Prefix> pod_cidr;    // --pod-cidr: claim exactly this one
  std::string uplink;                         // --uplink
  datapath::RoutingMode mode = datapath::RoutingMode::kTunnel;  // --routing-mode
  uint16_t tunnel_port = 8472;                // --tunnel-port
  uint32_t vni = 1;                           // --vni
  absl::Duration peer_grace = absl::Seconds(30);  // --peer-grace
  absl::Duration lease_ttl = absl::Seconds(10);   // --lease-ttl
  std::optional<uint32_t> mtu;                // --mtu when given: must fit the uplink
};

class ClusterNode {
 public:
  /// Checks the options, finds the uplink and creates the agent; claims nothing yet.
  /// Errors: kInvalidArgument for an empty node name, a --pod-cidr outside --cluster-cidr or an
  /// --mtu too big for the uplink (naming both); kNotFound / kFailedPrecondition for an uplink
  /// that does not exist, is down or has no IPv4 address (naming --uplink); the agent's errors.
  static absl::StatusOr<std::unique_ptr<ClusterNode>> Create(const ClusterOptions& options);
  /// Step 1 (see the header): blocks until registered (retrying with backoff while etcd is
  /// unreachable, logging each failure) or `timeout` passes. Errors: kResourceExhausted when the
  /// cluster CIDR has no free pod CIDR; kAlreadyExists when --pod-cidr is another node's;
  /// kFailedPrecondition for a cluster CIDR that differs from etcd's /sarena/v1/config;
  /// kDeadlineExceeded when etcd did not answer within `timeout`; kCancelled after Stop().
  absl::Status Register(absl::Duration timeout);

  /// After Register: the claimed pod CIDR, this node's IP in it (its first address: the pods'
  /// gateway) and the pod MTU (uplink MTU - 50 with a tunnel, unless --mtu is smaller).
  net::Ipv4Prefix pod_cidr() const;
  net::Ipv4 node_ip() const;
  uint32_t pod_mtu() const;

  /// Step 3: sets up the cluster datapath on `dp` (the node's loaded datapath) and starts the
  /// agent's watch loop. Errors: Overlay::Setup's.
  absl::Status StartDatapath(datapath::Datapath& dp);

  /// Stops the agent (the record expires with its lease; peers keep this node through their
  /// grace period, so a restart within it withdraws nothing). Safe to call from another thread
  /// while BringUp runs: a Register waiting for etcd returns kCancelled at once, and a
  /// StartDatapath after Stop starts no agent (kCancelled). Idempotent.
  void Stop();
  /// Stop()s first, so the agent thread never applies peers to a destroyed overlay.
  ~ClusterNode() { Stop(); }

  /// Steps 1-3 for sarenad, on a bring-up thread while the server already answers: Register
  /// (retrying until it succeeds; STATUS reports each failure meanwhile), then the
  /// EndpointManager on a Node with `base` completed by the claimed pod CIDR, node IP and pod
  /// MTU, then StartDatapath on that node's datapath. From then on Handle serves with it.
  /// Errors: those of Register (except unreachability, which is retried), EndpointManager and
  /// StartDatapath; the daemon should exit with them.
  absl::Status BringUp(DaemonOptions base);

  /// The request handler of a clustered sarenad. Before BringUp finished: STATUS answers
  /// ready=false with the reason (CNI STATUS then fails with code 50), every other request
  /// fails with CNI code 11 (try again later). After: the EndpointManager handles it, and STATUS
  /// gains the cluster fields (and stays not ready until the first peer list is applied).
  rpc::v1::Response Handle(const rpc::v1::Request& request, const PeerCred& peer);

  /// Fills `out->cluster` and clears `out->ready` (with `not_ready_reason`) until registered and
  /// synced. Thread-safe.
  void FillStatus(rpc::v1::StatusResponse* out) const;

 private:
  explicit ClusterNode(ClusterOptions options) : options_(std::move(options)) {}
  absl::Status Apply(const cluster::PeerTable& table);

  ClusterOptions options_;
  datapath::Uplink uplink_;
  std::unique_ptr<cluster::Agent> agent_;
  std::optional<cluster::Registration> registration_;
  std::unique_ptr<datapath::Overlay> overlay_;
  std::unique_ptr<EndpointManager> manager_;
  std::atomic<EndpointManager*> ready_manager_{nullptr};
  std::atomic<bool> applied_{false};
  std::mutex start_mu_;    // orders agent_->Start() (bring-up thread) against Stop() (main)
  bool stopping_ = false;  // guarded by start_mu_
  mutable std::mutex mu_;  // guards last_sync_*
  std::string last_sync_error_;
  absl::Time last_sync_;
  absl::Duration last_sync_duration_;  // how long the Overlay::Sync of last_sync_ took
};

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_CLUSTER_NODE_H_
