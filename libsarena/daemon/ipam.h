// Pod IP address management for one node: allocates IPv4 addresses from the node's pod CIDR and
// keeps every allocation durable under --state-dir so a daemon restart (or crash) keeps them.
//
// Two kinds of allocation, both durable:
//  - record-backed (Reserve, Adopt): the address lives in memory here and durably in the
//    endpoint record that carries it (EndpointStore, <state_dir>/endpoints/*.json, field "ip").
//    This is what ADD uses since issue 9 item 3: one durable write per ADD (the record) instead of
//    two (an allocation file, then the record). At start the daemon re-adopts every record's
//    address (CrossCheckState). A crash between Reserve and the record's write loses the
//    reservation, which is right: the ADD never replied, so no pod holds the address.
//  - file-backed (Allocate, Claim): one file per address, below. Written by sarenad before
//    issue 9 item 3 and still read, so a node upgraded in place keeps its allocations; Release
//    removes the file.
//
// On-disk layout of file-backed allocations (modelled on the CNI reference plugin host-local's
// disk store, plugins/ipam/host-local/backend/disk):
//   <state_dir>/ipam/<ip>     one file per allocated address, e.g. "10.244.1.2", containing
//                             "<containerID>\n<ifname>" ("\r\n" as host-local writes it is
//                             accepted)
//   <state_dir>/ipam/lock     flock(2)-held while an Ipam is open: one owner per state dir
// A file is created complete or not at all: the content goes to a temporary file that is fsynced
// and then link(2)ed to its final name (link fails with EEXIST, the same exclusivity as
// host-local's O_CREAT|O_EXCL, but a crash can never leave an empty allocation file), then the
// directory is fsynced. Leftover temporaries (".tmp-*", a crash mid-write, never a committed
// allocation) are removed on Open.
//
// Allocation order (a deliberate difference from host-local): the LOWEST free address is handed
// out, so allocation is deterministic and a released address is reused by the next Allocate.
// host-local instead round-robins from a persisted "last_reserved_ip" cursor so that a freed
// address is not reused immediately (protecting against stale conntrack entries / ARP caches
// still pointing at the old pod). We accept that risk because the datapath keys everything on
// the endpoint map, which DEL updates before the address is released, and because predictable
// addresses make the node's state easy to reason about (issue 2 item 7d: "the freed IP is reused").
//
// Never allocated: the network address and the broadcast address of the CIDR (for prefixes up to
// /30; a /31 or /32 has no such addresses, RFC 3021), and the gateway (the node IP, --node-ip,
// which sarena_host carries).
//
// Thread-safe: every method may be called from any thread.
#ifndef LIBSARENA_DAEMON_IPAM_H_
#define LIBSARENA_DAEMON_IPAM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "libsarena/base/unique_fd.h"
#include "libsarena/daemon/endpoint_key.h"
#include "libsarena/net/ip.h"

namespace sarena::daemon {

struct IpamOptions {
  /// Root of the daemon's state (--state-dir, default /var/lib/sarena). Allocations live in
  /// <state_dir>/ipam/, created (mode 0700) when missing.
  std::string state_dir;
  /// The node's pod CIDR (--pod-cidr), e.g. 10.244.1.0/24. Host bits must be zero.
  net::Ipv4Prefix pod_cidr;
  /// The pods' gateway (--node-ip); never allocated. May lie outside pod_cidr.
  net::Ipv4 gateway;
};

/// One allocation.
struct IpamAllocation {
  net::Ipv4 ip;
  EndpointKey key;
  /// true: <dir>/<ip> holds it (Allocate, Claim, or a file written by an older sarenad);
  /// false: record-backed (Reserve, Adopt) — its endpoint record is its only durable copy.
  bool in_file = true;
};

class Ipam {
 public:
  /// Opens (creating when missing) <state_dir>/ipam, takes its lock and loads every allocation.
  /// Errors:
  ///   kInvalidArgument  pod_cidr has host bits set;
  ///   kUnavailable      the lock is held: "state dir '<dir>' is in use by another process";
  ///   kDataLoss         a corrupt allocation file — unparseable content, a name that is not an
  ///                     IPv4 address, an address outside pod_cidr (e.g. --pod-cidr changed),
  ///                     the network/broadcast/gateway address, or two files for one key. The
  ///                     message names every such file (up to 10) and its content; nothing is
  ///                     deleted or reset: an operator must look at it;
  ///   errno-based codes (ErrnoStatus) for I/O failures, naming the path.
  static absl::StatusOr<std::unique_ptr<Ipam>> Open(IpamOptions options);

  ~Ipam();
  Ipam(const Ipam&) = delete;
  Ipam& operator=(const Ipam&) = delete;

  /// Returns the address allocated to `key`, allocating the lowest free one when `key` has none
  /// (idempotent, like host-local for a repeated ADD of the same containerID+ifname). The
  /// allocation is on disk (file + directory fsynced) before this returns.
  /// Errors: kInvalidArgument from ValidateEndpointKey; kResourceExhausted
  /// "pod CIDR 10.244.1.0/24 exhausted (253 addresses in use)"; ErrnoStatus on I/O failure.
  absl::StatusOr<net::Ipv4> Allocate(const EndpointKey& key);

  /// Returns the address held by `key`, or reserves the lowest free one in memory only: the
  /// caller makes it durable by writing the endpoint record that carries it (EndpointStore::Put)
  /// before anyone relies on it, or returns it with Release. Same order and idempotence as
  /// Allocate; a record-backed and a file-backed allocation never share an address.
  /// Errors: kInvalidArgument from ValidateEndpointKey; kResourceExhausted as Allocate.
  absl::StatusOr<net::Ipv4> Reserve(const EndpointKey& key);

  /// Records in memory that `key` holds `ip` because its endpoint record says so (at start,
  /// CrossCheckState). Idempotent when `key` already holds `ip` (file- or record-backed).
  /// Errors: as Claim (kInvalidArgument outside the allocatable range; kAlreadyExists when `key`
  /// holds another address or `ip` is held by another key, naming both).
  absl::Status Adopt(const EndpointKey& key, const net::Ipv4& ip);

  /// Records that `key` holds exactly `ip` (used at start to repair an endpoint record whose
  /// allocation file is missing, so the live pod's address is never handed out again). Durable
  /// like Allocate. Idempotent when `key` already holds `ip`.
  /// Errors: kInvalidArgument when `ip` is outside the allocatable range (network, broadcast,
  /// gateway or outside pod_cidr); kAlreadyExists when `key` holds another address or `ip` is
  /// held by another key (the message names both and the allocation file); ErrnoStatus on I/O.
  absl::Status Claim(const EndpointKey& key, const net::Ipv4& ip);

  /// Releases the address of `key`. Idempotent: returns the released address, or std::nullopt
  /// when `key` held none (CNI DEL must succeed when things are already gone). A file-backed
  /// allocation's file removal is fsynced before this returns; a record-backed one is released
  /// in memory (its durable copy is the endpoint record, which the caller deletes first). Errors: kInvalidArgument (invalid key); ErrnoStatus on I/O.
  absl::StatusOr<std::optional<net::Ipv4>> Release(const EndpointKey& key);

  /// The address allocated to `key`, if any.
  std::optional<net::Ipv4> Lookup(const EndpointKey& key) const;

  /// Every allocation, ordered by address.
  std::vector<IpamAllocation> List() const;

  /// Whether `ip` is in the allocatable range: inside pod_cidr, not its network or broadcast
  /// address, not the gateway.
  bool IsAllocatable(const net::Ipv4& ip) const { return Allocatable(ip.to_uint()); }

  /// Addresses still allocatable (capacity() minus allocations).
  uint32_t FreeCount() const;
  /// Allocatable addresses in total: the CIDR's size minus network, broadcast and gateway.
  uint32_t capacity() const { return capacity_; }
  /// Number of allocations.
  uint32_t InUse() const;

  const net::Ipv4Prefix& pod_cidr() const { return options_.pod_cidr; }
  const net::Ipv4& gateway() const { return options_.gateway; }
  /// <state_dir>/ipam
  const std::string& dir() const { return dir_; }

 private:
  Ipam(IpamOptions options, std::string dir, UniqueFd lock_fd);
  absl::Status Load();
  bool Allocatable(uint32_t ip_host_order) const;
  // Lowest free allocatable address at or after `from` (host byte order), if any.
  std::optional<uint32_t> LowestFree(uint64_t from) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // kInvalidArgument / kAlreadyExists as Claim; OK with *held = true when key already holds ip.
  absl::Status CheckClaim(absl::string_view verb, const EndpointKey& key, uint32_t ip,
                          bool* held) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const IpamOptions options_;
  const std::string dir_;
  UniqueFd lock_fd_;
  uint32_t first_ = 0;  // first allocatable address, host byte order
  uint32_t last_ = 0;   // last allocatable address, host byte order
  uint32_t capacity_ = 0;

  mutable absl::Mutex mu_;
  std::map<EndpointKey, uint32_t> by_key_ ABSL_GUARDED_BY(mu_);  // ip in host byte order
  std::map<uint32_t, EndpointKey> by_ip_ ABSL_GUARDED_BY(mu_);   // ordered: lowest-free scan
  std::set<EndpointKey> record_backed_ ABSL_GUARDED_BY(mu_);     // no file: Reserve / Adopt
};

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_IPAM_H_
