// A synchronous etcd v3 client speaking HTTP/1.1 + JSON to etcd's gRPC gateway (Boost.Beast),
// over a unix stream socket or TCP. Messages are proto/etcd_gateway.proto (etcd's own field names,
// so the protobuf JSON mapping is the gateway's JSON). Source: etcd 3.4 docs, "gRPC gateway"
// (https://etcd.io/docs/v3.4/dev-guide/api_grpc_gateway/) and the API reference.
//
// Thread-compatible: one client (and one Watch) per thread. Every call has a deadline.
// Errors (absl::StatusCode):
//   kUnavailable        connect or I/O failure (etcd down, socket missing, connection reset)
//   kDeadlineExceeded   the call did not complete within its timeout
//   kInvalidArgument    a bad endpoint string
//   <gRPC code N>       etcd answered {"error": .., "code": N} (e.g. kNotFound for a lease that
//                       does not exist, kOutOfRange for a compacted revision)
//   kInternal           an answer that is not the expected JSON
#ifndef LIBSARENA_CLUSTER_ETCD_CLIENT_H_
#define LIBSARENA_CLUSTER_ETCD_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "libsarena/cluster/etcd_gateway.pb.h"

namespace sarena::cluster {

/// One parsed etcd endpoint.
struct Endpoint {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string path;  // kUnix: absolute socket path, e.g. "/tmp/x/etcd.sock:2379"
  std::string host;  // kTcp: host name or address
  uint16_t port = 0; // kTcp
  /// "unix:///abs/path" or "http://host:port" (the form it was parsed from).
  std::string ToString() const;
};

/// Parses a comma-separated list of endpoints: `unix:///abs/path/etcd.sock:2379` (everything
/// after "unix://" is the socket path, ':2379' included — etcd 3.4 names its socket that way)
/// or `http://host:port`. Errors: kInvalidArgument "invalid etcd endpoint '<text>': <why>".
absl::StatusOr<std::vector<Endpoint>> ParseEndpoints(absl::string_view text);

/// The range_end that selects every key starting with `prefix` (etcd's "prefix" convention:
/// the prefix with its last byte incremented; "\0" when the prefix is all 0xff).
std::string PrefixRangeEnd(absl::string_view prefix);

/// Default timeout of one call.
inline constexpr absl::Duration kDefaultCallTimeout = absl::Seconds(5);

class Watch;

/// The client. Keeps one HTTP/1.1 keep-alive connection, reconnecting on demand (trying the
/// endpoints in order).
class EtcdClient {
 public:
  /// Parses `endpoints` (see ParseEndpoints). Does not connect yet.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(absl::string_view endpoints);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  /// Keys in [key, range_end) (range_end empty: `key` only) at `revision` (<= 0: newest), at most
  /// `limit` (0: all). kOutOfRange when `revision` was compacted.
  absl::StatusOr<etcd::RangeResponse> Range(absl::string_view key, absl::string_view range_end = {},
                                            int64_t revision = 0, int64_t limit = 0,
                                            absl::Duration timeout = kDefaultCallTimeout);
  /// Every key with `prefix`, newest revision.
  absl::StatusOr<etcd::RangeResponse> RangePrefix(absl::string_view prefix,
                                                  absl::Duration timeout = kDefaultCallTimeout);
  /// Writes `value` at `key`, attached to `lease` (0: none). kNotFound when the lease does not
  /// exist.
  absl::StatusOr<etcd::PutResponse> Put(absl::string_view key, absl::string_view value,
                                        int64_t lease = 0,
                                        absl::Duration timeout = kDefaultCallTimeout);
  /// Deletes keys in [key, range_end) (range_end empty: `key` only).
  absl::StatusOr<etcd::DeleteRangeResponse> DeleteRange(
      absl::string_view key, absl::string_view range_end = {},
      absl::Duration timeout = kDefaultCallTimeout);
  /// A general transaction (use the helpers below to build one).
  absl::StatusOr<etcd::TxnResponse> Txn(const etcd::TxnRequest& txn,
                                        absl::Duration timeout = kDefaultCallTimeout);
  /// Creates `key` = `value` (with `lease`) only when the key does not exist
  /// (compare create_revision == 0). Returns true when it was created; false when the key existed
  /// (`existing`, when given, then receives its current KeyValue).
  absl::StatusOr<bool> PutIfAbsent(absl::string_view key, absl::string_view value,
                                   int64_t lease = 0, etcd::KeyValue* existing = nullptr,
                                   absl::Duration timeout = kDefaultCallTimeout);
  /// Writes `key` = `value` only when the key's mod_revision is still `mod_revision`
  /// (optimistic concurrency). Returns true when written.
  absl::StatusOr<bool> PutIfModRevision(absl::string_view key, absl::string_view value,
                                        int64_t mod_revision, int64_t lease = 0,
                                        absl::Duration timeout = kDefaultCallTimeout);
  /// Deletes `key` only when its mod_revision is still `mod_revision`. Returns true when deleted.
  absl::StatusOr<bool> DeleteIfModRevision(absl::string_view key, int64_t mod_revision,
                                           absl::Duration timeout = kDefaultCallTimeout);
  /// Grants a lease of `ttl` (whole seconds, etcd raises values below its minimum, ~2 s on
  /// default timing). Returns the response (ID, granted TTL).
  absl::StatusOr<etcd::LeaseGrantResponse> LeaseGrant(absl::Duration ttl,
                                                      absl::Duration timeout = kDefaultCallTimeout);
  /// Renews lease `id` once. Returns its new TTL. kNotFound when the lease has expired or was
  /// revoked (etcd answers TTL 0).
  absl::StatusOr<absl::Duration> LeaseKeepAlive(int64_t id,
                                                absl::Duration timeout = kDefaultCallTimeout);
  /// Remaining TTL of lease `id`; kNotFound when it does not exist.
  absl::StatusOr<absl::Duration> LeaseTimeToLive(int64_t id,
                                                 absl::Duration timeout = kDefaultCallTimeout);
  /// Revokes lease `id`, deleting every key attached to it. kNotFound when it does not exist.
  absl::Status LeaseRevoke(int64_t id, absl::Duration timeout = kDefaultCallTimeout);
  /// Compacts the key-value history up to `revision` (tests). kOutOfRange when already compacted.
  absl::Status Compact(int64_t revision, absl::Duration timeout = kDefaultCallTimeout);

  /// Opens a watch on [key, range_end) starting at `start_revision` (0: from now) on its own
  /// connection. Returns once etcd confirmed the watch ("created"); a compacted start revision
  /// gives kOutOfRange carrying the compact revision (see CompactRevisionOf).
  absl::StatusOr<std::unique_ptr<Watch>> OpenWatch(absl::string_view key,
                                                   absl::string_view range_end,
                                              int64_t start_revision,
                                              absl::Duration timeout = kDefaultCallTimeout);

  /// The parsed endpoints.
  const std::vector<Endpoint>& endpoints() const { return endpoints_; }

  /// One POST of `body_json` to `path` (e.g. "/v3/kv/range"); returns the answer's body.
  /// Exposed for the benchmark and for calls this class does not wrap.
  absl::StatusOr<std::string> Post(absl::string_view path, absl::string_view body_json,
                                   absl::Duration timeout);

 private:
  struct Conn;
  explicit EtcdClient(std::vector<Endpoint> endpoints);
  template <typename Req, typename Resp>
  absl::StatusOr<Resp> Unary(absl::string_view path, const Req& req, absl::Duration timeout);

  std::vector<Endpoint> endpoints_;
  std::unique_ptr<Conn> conn_;
};

/// One batch of watch events with the revision of the answer's header.
struct WatchBatch {
  int64_t revision = 0;  // header revision: every change <= revision has been delivered
  std::vector<etcd::Event> events;
};

/// A watch stream (its own connection; one streamed HTTP answer, one JSON object per message).
class Watch {
 public:
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  /// The next batch of events, waiting at most `timeout`. kDeadlineExceeded when none came in
  /// time (the watch stays usable); kOutOfRange (with CompactRevisionOf) when etcd cancelled the
  /// watch because its revision was compacted; kUnavailable when the connection was lost or etcd
  /// cancelled the watch otherwise (the watch is then dead: open a new one).
  absl::StatusOr<WatchBatch> Next(absl::Duration timeout);

 private:
  friend class EtcdClient;
  struct Stream;
  explicit Watch(std::unique_ptr<Stream> stream);
  std::unique_ptr<Stream> stream_;
};

/// The compact revision carried by a kOutOfRange status from Watch / Next (payload
/// "sarena.etcd/compact_revision"); 0 when absent.
int64_t CompactRevisionOf(const absl::Status& status);

}  // namespace sarena::cluster

#endif  // LIBSARENA_CLUSTER_ETCD_CLIENT_H_
