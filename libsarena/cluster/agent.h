// The node agent: registers this node in etcd (pod CIDR claim, node id claim, lease-bound node
// record) and maintains the desired peer table from a list-then-watch of /sarena/v1/nodes/
// (docs/cluster.md). The daemon reconciles that table into its maps and routes through
// the `apply` callback. Plus the admin functions behind `sarena node list|delete`.
//
// Guarantees:
//  - Two nodes can never both own one pod CIDR or node id (create-if-absent transactions).
//  - A claim made by this node name is reused after a restart or reboot (like Calico's block
//    affinity); claims are released only by DeleteNode.
//  - Nothing is withdrawn because etcd is unreachable; a peer whose record is deleted (its lease
//    expired) stays in the table, marked lost, for peer_grace, and is withdrawn only then unless
//    it re-registers. An address change is one in-place update of the peer.
//  - A corrupt record is skipped with a log line naming its key; it never withdraws a peer.
#ifndef LIBSARENA_CLUSTER_AGENT_H_
#define LIBSARENA_CLUSTER_AGENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "libsarena/cluster/records.h"
#include "libsarena/net/ip.h"

namespace sarena::cluster {

struct AgentOptions {
  std::string endpoints;   // etcd endpoints, see ParseEndpoints
  std::string node_name;   // RFC 1123 (ValidateNodeName)
  /// The cluster CIDR pod CIDRs are carved from. Written to /sarena/v1/config by the first node;
  /// a later node giving a different one fails with kFailedPrecondition. May be omitted when the
  /// config exists or pod_cidr is given.
  std::optional<net::Ipv4Prefix> cluster_cidr;
  int node_mask_len = 24;  // prefix length of each claimed pod CIDR (config wins when present)
  std::optional<net::Ipv4Prefix> pod_cidr;  // given: claim exactly this one
  net::Ipv4 underlay;      // this node's underlay (uplink) address
  uint16_t tunnel_port = 8472;
  uint32_t mtu = 1500;     // uplink MTU, bytes
  std::string routing_mode = "tunnel";  // tunnel | native | hybrid
  uint32_t vni = 1;        // written to the cluster config by the first node
  absl::Duration peer_grace = absl::Seconds(30);
  absl::Duration lease_ttl = absl::Seconds(10);   // keepalive every lease_ttl / 3
  std::string boot_id;     // /proc/sys/kernel/random/boot_id; empty: read it
  absl::Duration call_timeout = absl::Seconds(5);  // per etcd call
  /// Cap of the exponential backoff (from 100 ms) between etcd attempts of the agent thread.
  absl::Duration max_retry_backoff = absl::Seconds(5);
};

/// What Register claimed.
struct Registration {
  net::Ipv4Prefix pod_cidr;
  uint32_t node_id = 0;
};

struct AgentStatus {
  bool connected = false;   // the last etcd call succeeded
  bool registered = false;  // node record written with a live lease
  bool synced = false;      // the first full node list was applied successfully
  std::string last_error;   // the last failure (etcd or apply), empty when none
  std::string endpoints;
  std::optional<Registration> registration;
  int64_t lease_id = 0;
  int64_t revision = 0;     // last etcd revision seen
  absl::Time last_contact;  // last successful etcd call (absl::InfinitePast(): never)
  PeerTable peers;          // the last table given to apply (lost peers included)
};

class Agent {
 public:
  /// Called from the agent thread with the full desired table whenever it changed. A non-OK
  /// answer is retried (same or newer table) with exponential backoff.
  using ApplyFn = std::function<absl::Status(const PeerTable&)>;

  /// Validates `options` (kInvalidArgument naming the field: node_name, endpoints,
  /// node_mask_len, routing_mode, underlay unspecified, lease_ttl < 2 s, peer_grace < 0).
  static absl::StatusOr<std::unique_ptr<Agent>> Create(AgentOptions options, ApplyFn apply);
  ~Agent();  // Stop()s
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  /// Claims the pod CIDR and node id, grants the lease and writes the node record. Retries with
  /// exponential backoff (100 ms .. 5 s, each attempt logged) while etcd is unreachable, until
  /// `timeout`; then returns the last kUnavailable / kDeadlineExceeded.
  /// Other errors: kResourceExhausted "cluster CIDR <cidr> is exhausted: all N /M pod CIDRs are
  /// claimed" (or every node id taken); kAlreadyExists when the given pod_cidr is claimed by
  /// another node; kFailedPrecondition when no cluster CIDR is known, or the given one differs
  /// from /sarena/v1/config, or the config is corrupt; kInvalidArgument when pod_cidr is not
  /// inside the cluster CIDR.
  absl::StatusOr<Registration> Register(absl::Duration timeout);

  /// Starts the agent thread (keepalive at lease_ttl/3, re-registering when the lease was lost;
  /// list at revision R then watch from R+1; reconnect from the last revision; re-list on
  /// compaction; grace expiry; apply). Register must have succeeded first.
  void Start();

  /// A consistent snapshot. Thread-safe.
  AgentStatus status() const;

  /// Stops and joins the thread. Revokes nothing: the node record expires with its lease, so a
  /// restarting daemon never withdraws itself from its peers. Idempotent.
  void Stop();

  /// Revokes the lease (deleting the node record at once: peers start their grace period). The
  /// claims stay (DeleteNode releases them).
  absl::Status Deregister(absl::Duration timeout = absl::Seconds(5));

 private:
  Agent(AgentOptions options, ApplyFn apply);
  void Run();
  absl::StatusOr<Registration> RegisterOnce(class EtcdClient& client);

  const AgentOptions opts_;
  const ApplyFn apply_;
  std::thread thread_;
  absl::Notification stop_;
  bool started_ = false;

  mutable absl::Mutex mu_;
  AgentStatus status_ ABSL_GUARDED_BY(mu_);
};

/// One node as `sarena node list` shows it.
struct NodeListing {
  std::string name;
  bool has_record = false;        // /sarena/v1/nodes/<name> exists
  v1::NodeRecord record;          // when has_record (possibly partially parsed when corrupt)
  std::string error;              // why the record is corrupt; empty when fine
  bool live = false;              // the record's lease exists
  absl::Duration lease_ttl_left;  // remaining lease TTL when live
  std::vector<std::string> claimed_pod_cidrs;  // from /sarena/v1/podcidrs/
  std::vector<uint32_t> claimed_node_ids;      // from /sarena/v1/nodeids/
};

/// Every node with a record or a claim, sorted by name. kUnavailable / kDeadlineExceeded when etcd
/// cannot be reached.
absl::StatusOr<std::vector<NodeListing>> ListNodes(const std::string& endpoints,
                                                   absl::Duration timeout = absl::Seconds(5));

/// What DeleteNode removed.
struct DeleteNodeResult {
  bool record_deleted = false;
  bool lease_revoked = false;  // the record's lease existed and was revoked
  std::vector<std::string> released_pod_cidrs;
  std::vector<uint32_t> released_node_ids;
};

/// Deletes /sarena/v1/nodes/<name>, releases its pod CIDR and node id claims (each claim deleted
/// only if unchanged since read: a concurrent re-claim is not lost), then revokes the record's
/// lease, so an agent still running on that node re-registers from scratch at its next keepalive
/// rather than keeping a half-deleted identity. kNotFound when the node has neither a record nor
/// a claim; kInvalidArgument for a bad name.
absl::StatusOr<DeleteNodeResult> DeleteNode(const std::string& endpoints, const std::string& name,
                                            absl::Duration timeout = absl::Seconds(5));

}  // namespace sarena::cluster

#endif  // LIBSARENA_CLUSTER_AGENT_H_
