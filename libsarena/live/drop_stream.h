// `sarena-diag drops`: the kernel's drops as they happen. Attaches the kfree_skb tracer
// (datapath::DropTraceProgram, every IPv4/ARP drop of the machine) and hands each drop, named
// (reason from BTF, location from kallsyms: drop_names.h; namespace name from /var/run/netns), to
// a callback until told to stop or until a duration has passed. Optionally only the drops of
// some named namespaces.
// Bounded: the kernel side is the tracer's 256 KiB ring (a full ring loses events, it never
// grows; DropStreamStats::lost counts them); user space holds one drain of at most
// datapath::kDropTraceDrainMaxEvents events at a time, a namespace-name cache of at most
// kMaxNetnsNames entries and a symbol cache of at most kMaxSymbols entries.
// Source: include/trace/events/skb.h, include/net/dropreason-core.h, ip-netns(8).
#ifndef LIBSARENA_LIVE_DROP_STREAM_H_
#define LIBSARENA_LIVE_DROP_STREAM_H_

#include <csignal>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libsarena/datapath/drop_trace.h"

namespace sarena::live {

inline constexpr size_t kMaxNetnsNames = 4096;
inline constexpr size_t kMaxSymbols = 1024;

/// One drop, named.
struct NamedDrop {
  datapath::DropTraceEvent raw;
  std::string reason;    // "SKB_DROP_REASON_IP_RPFILTER" (DropReasonName)
  std::string location;  // "ip_rcv_finish_core+0x1a4" ("" unresolved, or symbols off)
  std::string netns;     // name under /var/run/netns, "" when none is known
  bool current_netns = false;  // the caller's namespace
};

struct DropStreamOptions {
  /// Names under /var/run/netns (or paths) whose drops are wanted; empty: every namespace's.
  std::vector<std::string> netns;
  /// Stop after this long, ms; 0: only when `stop` says so. Values past the monotonic clock's
  /// range (~584 years in ns) mean the same as 0.
  uint64_t duration_ms = 0;
  /// Created (written "attached\n", atomically by rename) once the tracer is attached, so a
  /// script can start its probe then; "" for none. Removed again when the stream ends.
  std::string ready_file;
  /// Resolve drop locations to kernel symbols (reads /proc/kallsyms once per new address).
  bool symbols = true;
  /// How often the ring is polled for new events and `stop` checked, ms.
  int poll_ms = 100;
};

/// What a stream saw, filled in as it runs (valid however StreamDrops returns).
struct DropStreamStats {
  uint64_t read = 0;       ///< events read from the ring (every namespace's)
  uint64_t delivered = 0;  ///< drops handed to the sink (after the --netns filter)
  /// Events the kernel could not queue because the ring was full (user space behind, e.g. a
  /// drop storm or a slow sink); every namespace's, so some may not have passed the filter.
  uint64_t lost = 0;
  /// Events still queued when the stream stopped and the final drain's budget (a few
  /// datapath::kDropTraceDrainMaxEvents batches) ran out: true when some were left unread.
  bool left_unread = false;
};

/// The nsfs inodes of `options.netns` (empty set: no filter). Checks only the command line's
/// names, nothing of the tracer, so a caller can tell bad input from a bad environment.
/// Errors: kInvalidArgument for an empty name; the name's open error (kNotFound: no such
/// namespace; kInvalidArgument: not a network namespace; ErrnoStatus otherwise), prefixed
/// "--netns NAME: ".
absl::StatusOr<std::set<uint64_t>> ResolveDropStreamNetns(const DropStreamOptions& options);

/// Streams drops to `sink` (see the file comment) until `*stop` becomes non-zero (set it from a
/// SIGINT/SIGTERM handler), `duration_ms` has passed, or `sink` returns false. Each ring read
/// is bounded (datapath::DropTraceProgram::Drain, datapath::kDropTraceDrainMaxEvents); while a
/// read comes back full the next one follows at once. After the stop the ring is drained once
/// more (at most kFinalDrains reads), so drops of the last moment are not lost. `stats`, if
/// given, is filled in.
/// Errors: kNotFound / kInvalidArgument naming a --netns that is not a network namespace (the
/// name's open error, prefixed "--netns NAME: "); the tracer's load/attach errors as
/// ErrnoStatus — kPermissionDenied without CAP_BPF, and also kNotFound (no kernel BTF: ESRCH;
/// no skb:kfree_skb: ENOENT) or kInvalidArgument (verifier: EINVAL), so a caller that must
/// tell bad input from a bad environment resolves its --netns names first; the ready file's
/// create/write/rename errno (ErrnoStatus); ring read errors (ErrnoStatus, kInternal).
absl::Status StreamDrops(const DropStreamOptions& options, const volatile std::sig_atomic_t* stop,
                         const std::function<bool(const NamedDrop&)>& sink,
                         DropStreamStats* stats = nullptr);

/// The most ring reads StreamDrops makes after its stop (each at most
/// datapath::kDropTraceDrainMaxEvents events): the ring's content at the stop (one full ring)
/// plus a margin, not a storm forever.
inline constexpr int kFinalDrains = 4;

/// One drop as a JSON object on one line (sarena.diag.v1.KernelDropEvent, protobuf's JSON
/// mapping with the proto's field names and every field present), ending in "\n".
std::string DropJsonLine(const NamedDrop& drop);

/// "SYN,ACK" for a TCP flags byte ("" for none).
std::string TcpFlagsText(uint8_t flags);

}  // namespace sarena::live

#endif  // LIBSARENA_LIVE_DROP_STREAM_H_
