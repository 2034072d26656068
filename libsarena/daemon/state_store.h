// Durable endpoint records: the daemon's memory of every endpoint it created (the proto Endpoint
// message), kept under --state-dir so a restart can reconcile them with the pinned BPF maps and
// the live links.
//
// On-disk layout: <state_dir>/endpoints/<containerID>:<ifname>.json, one file per endpoint, holding
// the Endpoint message in protobuf's JSON mapping (proto field names, e.g. "host_ifname"). ':' is
// the separator because neither a valid container ID nor a valid ifname can contain it
// (ValidateEndpointKey), so two keys can never share a file — "_" could ("a_b"+"c" vs "a"+"b_c").
// A key whose name would exceed NAME_MAX (255 bytes; CNI sets no limit on container IDs) is stored
// as "sha256-<64 hex of containerID/ifname>.json"; its ref inside the record is the key, checked
// against the name on load.
//
// Every write is atomic and durable before Put returns: content -> temporary file in the same
// directory -> fsync -> rename(2) over the final name -> fsync of the directory. A crash leaves
// either the old or the new record, never a torn one; leftover temporaries (".tmp-*") are removed
// on Open. The runtime-only `counters` field is never persisted.
//
// Thread-safe: every method may be called from any thread. One process per state dir: Open takes
// an exclusive flock(2) on <state_dir>/endpoints/lock.
#ifndef LIBSARENA_DAEMON_STATE_STORE_H_
#define LIBSARENA_DAEMON_STATE_STORE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/daemon/endpoint_key.h"
#include "libsarena/rpc/sarenad.pb.h"

namespace sarena::daemon {

/// The protocol's messages (libsarena/rpc/proto/sarenad.proto).
namespace v1 = ::sarena::rpc::v1;

/// Checks that a loaded record can be acted on: ip and gateway are IPv4 dotted quads,
/// prefix_len 32, pod_mac and host_mac are MACs, host_ifname is a valid interface name
/// ("lxc..." up to 15 bytes), endpoint_id in 1 .. SARENA_MAX_ENDPOINTS-1, mtu 68 .. 65535.
/// Errors: kInvalidArgument naming the first bad field and its value.
absl::Status ValidateEndpointRecord(const v1::Endpoint& record);

struct EndpointStoreOptions {
  /// Root of the daemon's state (--state-dir). Records live in <state_dir>/endpoints/, created
  /// (mode 0700) when missing.
  std::string state_dir;
};

class EndpointStore {
 public:
  /// Opens (creating when missing) <state_dir>/endpoints, takes its lock file (flock) and loads
  /// every record. Unknown JSON fields are ignored (a record written by a newer sarenad still
  /// loads after a downgrade).
  /// Errors: kUnavailable when another process holds the lock; kDataLoss for a corrupt record —
  /// content that is not a valid Endpoint JSON, a file name that is not
  /// "<containerID>:<ifname>.json" (or the hashed form), a record whose ref does not match its
  /// file name, or a record that is not usable (ValidateEndpointRecord). The message
  /// names every such file (up to 10) and quotes its content (truncated); nothing is deleted or
  /// reset. ErrnoStatus codes for I/O failures, naming the path.
  static absl::StatusOr<std::unique_ptr<EndpointStore>> Open(EndpointStoreOptions options);

  EndpointStore(const EndpointStore&) = delete;
  EndpointStore& operator=(const EndpointStore&) = delete;

  /// Creates or replaces the record of endpoint.ref() (counters cleared), durably (see above).
  /// Errors: kInvalidArgument from ValidateEndpointKey (ref missing or invalid); ErrnoStatus for
  /// I/O failures (the previous record, if any, stays in place and in memory).
  absl::Status Put(const v1::Endpoint& endpoint);

  /// Removes the record of `key` (file unlinked, directory fsynced). Idempotent: returns false
  /// when there was none. Errors: kInvalidArgument (invalid key); ErrnoStatus on I/O failure.
  absl::StatusOr<bool> Delete(const EndpointKey& key);

  /// The record of `key`, if any.
  std::optional<v1::Endpoint> Get(const EndpointKey& key) const;

  /// Every record, ordered by (container_id, ifname).
  std::vector<v1::Endpoint> List() const;

  /// Number of records.
  size_t size() const;

  /// <state_dir>/endpoints
  const std::string& dir() const { return dir_; }

  /// "<containerID>:<ifname>.json" — the file name of `key`'s record (key must be valid); the
  /// hashed form "sha256-<hex>.json" when that would exceed NAME_MAX.
  static std::string FileName(const EndpointKey& key);

  /// dir() + "/" + FileName(key): where `key`'s record lives, for messages.
  std::string PathOf(const EndpointKey& key) const;

 private:
  EndpointStore(std::string dir, UniqueFd lock_fd);
  absl::Status Load();

  const std::string dir_;
  UniqueFd lock_fd_;  // flock on <dir>/lock: one owner per state dir
  mutable absl::Mutex mu_;
  std::map<EndpointKey, v1::Endpoint> records_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_STATE_STORE_H_
