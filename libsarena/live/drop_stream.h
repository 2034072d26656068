// `sarena-diag drops`: the kernel's drops as they happen. Attaches the kfree_skb tracer
// (DropTracer, every IPv4/ARP drop of the machine) and hands each drop, named (reason from BTF,
// location from kallsyms, namespace name from /var/run/netns), to a callback until told to stop
// or until a duration has passed. Optionally only the drops of some named namespaces.
// Bounded: the kernel side is the tracer's 256 KiB ring (a full ring loses events, it never
// grows); user space holds one drain of it at a time, a namespace-name cache of at most
// kMaxNetnsNames entries and a symbol cache of at most kMaxSymbols entries.
// Source: include/trace/events/skb.h, include/net/dropreason-core.h, ip-netns(8).
#ifndef LIBSARENA_LIVE_DROP_STREAM_H_
#define LIBSARENA_LIVE_DROP_STREAM_H_

#include <csignal>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libsarena/live/drop_tracer.h"

namespace sarena::live {

inline constexpr size_t kMaxNetnsNames = 4096;
inline constexpr size_t kMaxSymbols = 1024;

/// One drop, named.
struct NamedDrop {
  RawDrop raw;
  std::string reason;    // "SKB_DROP_REASON_IP_RPFILTER" (DropReasonName)
  std::string location;  // "ip_rcv_finish_core+0x1a4" ("" unresolved, or symbols off)
  std::string netns;     // name under /var/run/netns, "" when none is known
  bool current_netns = false;  // the caller's namespace
};

struct DropStreamOptions {
  /// Names under /var/run/netns (or paths) whose drops are wanted; empty: every namespace's.
  std::vector<std::string> netns;
  /// Stop after this long, ms; 0: only when `stop` says so.
  uint64_t duration_ms = 0;
  /// Created (written "attached\n", atomically by rename) once the tracer is attached, so a
  /// script can start its probe then; "" for none. Removed again when the stream ends.
  std::string ready_file;
  /// Resolve drop locations to kernel symbols (reads /proc/kallsyms once per new address).
  bool symbols = true;
  /// How often the ring is polled for new events and `stop` checked, ms.
  int poll_ms = 100;
};

/// Streams drops to `sink` (see the file comment) until `*stop` becomes non-zero (set it from a
/// SIGINT/SIGTERM handler), `duration_ms` has passed, or `sink` returns false. The ring is
/// drained once more after the stop, so drops of the last moment are not lost.
/// Errors: kNotFound / kInvalidArgument naming a --netns that is not a network namespace;
/// the tracer's load/attach errors (kPermissionDenied without CAP_BPF); kInternal when the
/// ready file cannot be written.
absl::Status StreamDrops(const DropStreamOptions& options, const volatile std::sig_atomic_t* stop,
                         const std::function<bool(const NamedDrop&)>& sink);

/// One drop as a JSON object on one line (sarena.diag.v1.KernelDropEvent, protobuf's JSON
/// mapping with the proto's field names and every field present), ending in "\n".
std::string DropJsonLine(const NamedDrop& drop);

/// "SYN,ACK" for a TCP flags byte ("" for none).
std::string TcpFlagsText(uint8_t flags);

}  // namespace sarena::live

#endif  // LIBSARENA_LIVE_DROP_STREAM_H_
