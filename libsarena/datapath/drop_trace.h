// The kernel's own drop evidence, BPF side: the object bpf/kernel/drop_trace.bpf.c (skeleton
// bpf/drop_trace.skel.h) attached to the skb:kfree_skb tracepoint (tp_btf, CO-RE) for as long as
// a DropTraceProgram lives, filtered in the kernel to packets between a few addresses, its
// ringbuf read into plain records (DropTraceEvent); and the names of the kernel's drop reasons,
// read from its BTF (enum skb_drop_reason). The ABI of the records is bpf/kernel/drop_trace.h.
//
// Only the BPF objects live here: what a record means — the namespace name of its nsfs inode,
// the kernel symbol of its location, the JSON of `sarena-diag drops`, the join to the walk of
// `sarena-diag trace --live` — is libsarena/live/'s.
//
// Needs CAP_BPF + CAP_PERFMON (root) and a kernel with BTF (CONFIG_DEBUG_INFO_BTF).
// Source: include/trace/events/skb.h (tracepoint kfree_skb), include/net/dropreason-core.h
// (enum skb_drop_reason), Documentation/bpf/ringbuf.rst.
#ifndef LIBSARENA_DATAPATH_DROP_TRACE_H_
#define LIBSARENA_DATAPATH_DROP_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libsarena/net/ip.h"

namespace sarena::datapath {

/// The most addresses a DropTraceProgram filters on (SARENA_DROP_TRACE_MAX_ADDRS of
/// bpf/kernel/drop_trace.h, the size of sarena_drop_trace_cfg.addrs).
inline constexpr size_t kDropTraceMaxAddrs = 8;

/// One dropped packet as the program saw it: struct sarena_drop_event (bpf/kernel/drop_trace.h),
/// decoded. Integers are in host byte order; the addresses are net::Ipv4 values (the record
/// carries them in network order).
struct DropTraceEvent {
  uint64_t ts_ns = 0;        // CLOCK_MONOTONIC (bpf_ktime_get_ns), ns
  uint64_t location = 0;     // kernel text address that freed the skb (0 when the kernel gave none)
  uint32_t reason = 0;       // enum skb_drop_reason value (names: ReadKernelDropReasons)
  uint64_t netns_inode = 0;  // nsfs inode of skb->dev's (else the socket's) namespace; 0 unknown
  uint32_t ifindex = 0;      // skb->dev->ifindex, 0 without a device
  std::string ifname;        // skb->dev->name (at most 15 bytes), "" without a device
  uint16_t eth_proto = 0;    // 0x0800 IPv4, 0x0806 ARP
  uint8_t proto = 0;         // IP protocol (IPPROTO_*); 0 for ARP
  net::Ipv4 src, dst;        // ARP: sender / target protocol address
  uint16_t sport = 0, dport = 0;  // ICMP: type << 8 | code in sport; ARP: opcode in sport
  uint8_t tcp_flags = 0;  // TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10)
};

/// The most events one DropTraceProgram::Drain returns by default: a little more than the
/// 256 KiB ring holds (72-byte records: ~3600), so one call empties a full ring but a drop storm
/// cannot keep one call (and its memory, ~100 bytes an event) growing while the kernel refills
/// it.
inline constexpr size_t kDropTraceDrainMaxEvents = 4096;

/// What one DropTraceProgram::Drain read.
struct DropTraceBatch {
  /// The events, oldest first; at most the call's `max_events`.
  std::vector<DropTraceEvent> drops;
  /// `max_events` was reached: the ring may hold more (call Drain(0) again, at once).
  bool more = false;
  /// Events the kernel could not queue since Start because the ring was full (user space too
  /// slow); cumulative, machine-wide for the program's filter. 0 when none was lost.
  uint64_t lost = 0;
};

/// bpf/kernel/drop_trace.bpf.c, loaded and attached to skb:kfree_skb. Move-only; destroying it
/// detaches and unloads the program and frees its maps (nothing is pinned).
class DropTraceProgram {
 public:
  /// Loads the object, writes its filter (drop_trace_cfg[0]) and attaches it, reporting only
  /// IPv4/ARP packets whose source and destination are both in `addrs` (0..kDropTraceMaxAddrs
  /// addresses; none: every IPv4/ARP drop of the machine).
  /// Errors: kInvalidArgument naming "addrs" for more than kDropTraceMaxAddrs addresses
  /// (checked before anything is loaded); the open/load errno as ErrnoStatus ("open|load BPF
  /// object 'drop_trace'", with libbpf's log as detail): kPermissionDenied without CAP_BPF
  /// (EPERM), kNotFound without kernel BTF (ESRCH) or without the tracepoint (ENOENT),
  /// kInvalidArgument when the verifier refuses it (EINVAL); the filter write's errno
  /// ("write drop_trace_cfg"); the ring buffer's ("open ring buffer drop_trace_events"); the
  /// attach errno ("attach tp_btf/kfree_skb (drop_trace)", with libbpf's log).
  static absl::StatusOr<DropTraceProgram> Start(const std::vector<net::Ipv4>& addrs);

  DropTraceProgram(DropTraceProgram&&) noexcept;
  DropTraceProgram& operator=(DropTraceProgram&&) noexcept;
  ~DropTraceProgram();

  /// Reads the events the kernel produced so far, at most `max_events` (0 counts as 1), waiting
  /// at most `wait_ms` milliseconds for the first one (0 or negative: only what is there).
  /// Bounded: under a drop storm the kernel refills the ring as fast as it is read, so the
  /// caller loops — while `more`, call again with wait_ms 0 — and decides when to stop;
  /// events the ring had no room for are counted in `lost`, never queued. A signal during the
  /// wait (EINTR) is not an error: the batch holds what was read.
  /// Errors: ring buffer poll failures other than EINTR, as ErrnoStatus ("read ring buffer
  /// drop_trace_events": kInternal for most errnos).
  absl::StatusOr<DropTraceBatch> Drain(int wait_ms, size_t max_events = kDropTraceDrainMaxEvents);

 private:
  struct Impl;
  explicit DropTraceProgram(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The running kernel's drop reasons, value -> enumerator name ("SKB_DROP_REASON_IP_RPFILTER"):
/// the enumerators of enum skb_drop_reason, or of skb_drop_reason_core when the kernel has no
/// skb_drop_reason, read from the kernel's BTF (/sys/kernel/btf/vmlinux). Reads and parses the
/// whole vmlinux BTF (a few MiB) on every call: callers cache the result. libbpf's messages
/// are kept out of the log.
/// Errors: the BTF load's errno as ErrnoStatus ("load kernel BTF 'vmlinux'"), e.g. kNotFound
/// (ESRCH) on a kernel without CONFIG_DEBUG_INFO_BTF; kNotFound when the BTF has neither enum
/// (kernels before 5.17, whose kfree_skb passes no reason).
/// Source: include/net/dropreason-core.h, Documentation/bpf/btf.rst.
absl::StatusOr<std::map<uint32_t, std::string>> ReadKernelDropReasons();

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_DROP_TRACE_H_
