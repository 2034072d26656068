// The node registry's keys and records in etcd (proto/cluster.proto; docs/cluster.md),
// and the validated, typed view of a node record the agent hands to the daemon.
//   /sarena/v1/config            ClusterConfig
//   /sarena/v1/podcidrs/<cidr>   PodCidrClaim, '/' replaced by '-' ("10.244.1.0-24")
//   /sarena/v1/nodeids/<id>      NodeIdClaim, decimal 1..16383
//   /sarena/v1/nodes/<name>      NodeRecord, attached to the node's lease
// Values are the protobuf JSON mapping (proto field names).
#ifndef LIBSARENA_CLUSTER_RECORDS_H_
#define LIBSARENA_CLUSTER_RECORDS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "libsarena/cluster/cluster.pb.h"
#include "libsarena/net/ip.h"

namespace sarena::cluster {

inline constexpr absl::string_view kConfigKey = "/sarena/v1/config";
inline constexpr absl::string_view kNodesPrefix = "/sarena/v1/nodes/";
inline constexpr absl::string_view kPodCidrsPrefix = "/sarena/v1/podcidrs/";
inline constexpr absl::string_view kNodeIdsPrefix = "/sarena/v1/nodeids/";
/// Node ids are 1..kMaxNodeId (14 bits: they fit the datapath's per-node counters and marks).
inline constexpr uint32_t kMaxNodeId = 16383;

/// "/sarena/v1/nodes/<name>".
std::string NodeKey(absl::string_view name);
/// "/sarena/v1/podcidrs/10.244.1.0-24" for 10.244.1.0/24 (canonical network).
std::string PodCidrKey(const net::Ipv4Prefix& cidr);
/// Inverse of PodCidrKey. kInvalidArgument naming the key when it is not one.
absl::StatusOr<net::Ipv4Prefix> PodCidrFromKey(absl::string_view key);
/// "/sarena/v1/nodeids/<id>".
std::string NodeIdKey(uint32_t id);
/// Inverse of NodeIdKey (1..kMaxNodeId). kInvalidArgument naming the key.
absl::StatusOr<uint32_t> NodeIdFromKey(absl::string_view key);

/// A node name: 1..253 characters of [a-z0-9.-] (a Kubernetes node name, RFC 1123 subdomain).
/// kInvalidArgument "invalid node name '<name>': ...".
absl::Status ValidateNodeName(absl::string_view name);

/// Protobuf JSON (proto field names, no whitespace) of a record.
std::string RecordToJson(const google::protobuf::Message& m);
/// Parses a record's JSON (unknown fields ignored: newer writers may add fields).
/// kInvalidArgument "corrupt record at <key>: <parser message>".
absl::Status RecordFromJson(absl::string_view json, google::protobuf::Message* m,
                            absl::string_view key);

/// "ipv4" / "ipv6" / "unspecified".
absl::string_view FamilyName(v1::AddressFamily family);

/// One peer as the daemon reconciles it (IPv4 view of a NodeRecord).
struct PeerNode {
  std::string name;
  uint32_t node_id = 0;                 // 1..kMaxNodeId
  net::Ipv4 underlay;                   // first IPV4 address of the record
  std::vector<net::Ipv4Prefix> pod_cidrs;  // the record's IPV4 pod CIDRs (canonical)
  uint16_t tunnel_port = 0;
  uint32_t mtu = 0;                     // bytes
  std::string routing_mode;
  std::string boot_id;
  absl::Time last_update;               // when this node's content last changed (local clock)
  bool lost = false;                    // its record is gone (lease expired); kept for grace
  absl::Time lost_since;                // valid when lost
  int64_t mod_revision = 0;             // etcd mod_revision of the record last applied

  /// True when the reconcilable content (everything but the timestamps, revision and lost
  /// state) is equal.
  bool SameContent(const PeerNode& o) const;
};

/// The desired peer table: every other node, by name.
struct PeerTable {
  std::map<std::string, PeerNode> peers;  // excluding this node
  int64_t revision = 0;                   // etcd revision the table reflects
};

/// Validates one node record read at `key` (kNodesPrefix + name) and converts it. Errors
/// (kInvalidArgument, message names the key): bad JSON, name not matching the key, node_id 0 or
/// > kMaxNodeId, an address or CIDR that does not parse as its family, unspecified family, no
/// IPV4 underlay address, a CIDR with host bits set, tunnel_port > 65535.
absl::StatusOr<PeerNode> ParseNodeRecord(absl::string_view key, absl::string_view value,
                                         v1::NodeRecord* record_out = nullptr);

}  // namespace sarena::cluster

#endif  // LIBSARENA_CLUSTER_RECORDS_H_
