// The kernel's own drop evidence: bpf/kernel/drop_trace.bpf.c attached to the skb:kfree_skb
// tracepoint (tp_btf, CO-RE) for the duration of one probe, filtered in the kernel to packets
// between a few addresses, read from its ringbuf; reasons named from the running kernel's BTF
// (enum skb_drop_reason), drop locations from /proc/kallsyms.
// Needs CAP_BPF + CAP_PERFMON (root) and a kernel with BTF (CONFIG_DEBUG_INFO_BTF).
// Source: include/trace/events/skb.h, include/net/dropreason-core.h.
#ifndef LIBSARENA_LIVE_DROP_TRACER_H_
#define LIBSARENA_LIVE_DROP_TRACER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libsarena/net/ip.h"

namespace sarena::live {

/// One dropped packet as the tracer saw it (struct sarena_drop_event, decoded).
struct RawDrop {
  uint64_t ts_ns = 0;       // CLOCK_MONOTONIC (bpf_ktime_get_ns), ns
  uint64_t location = 0;    // kernel text address that freed the skb
  uint32_t reason = 0;      // enum skb_drop_reason value
  uint64_t netns_inode = 0; // nsfs inode of skb->dev's (else the socket's) namespace; 0 unknown
  uint32_t ifindex = 0;     // skb->dev->ifindex, 0 without a device
  std::string ifname;       // skb->dev->name
  uint16_t eth_proto = 0;   // 0x0800 IPv4, 0x0806 ARP
  uint8_t proto = 0;        // IP protocol
  net::Ipv4 src, dst;       // ARP: sender / target protocol address
  uint16_t sport = 0, dport = 0;  // host order; ICMP: type << 8 | code; ARP: opcode in sport
  uint8_t tcp_flags = 0;
};

/// The most events one DropTracer::Drain returns by default: a little more than the 256 KiB
/// ring holds (72-byte records: ~3600), so one call empties a full ring but a drop storm cannot
/// keep one call (and its memory, ~100 bytes an event) growing while the kernel refills it.
inline constexpr size_t kDrainMaxEvents = 4096;

/// What one DropTracer::Drain read.
struct DrainResult {
  /// The events, oldest first; at most the call's `max_events`.
  std::vector<RawDrop> drops;
  /// `max_events` was reached: the ring may hold more (call Drain(0) again, at once).
  bool more = false;
  /// Events the kernel could not queue since Start because the ring was full (user space too
  /// slow); cumulative, machine-wide for the tracer's filter. 0 when none was lost.
  uint64_t lost = 0;
};

/// An attached kfree_skb tracer. Move-only; destroying it detaches and unloads the program.
class DropTracer {
 public:
  /// Loads and attaches the tracer, reporting only IPv4/ARP packets whose source and destination
  /// are both in `addrs` (0..8 addresses, none: every IPv4/ARP drop of the machine; more:
  /// kInvalidArgument naming "addrs").
  /// Errors: the load/attach errno as ErrnoStatus ("load BPF object 'drop_trace'", with
  /// libbpf's log), e.g. kPermissionDenied without CAP_BPF.
  static absl::StatusOr<DropTracer> Start(const std::vector<net::Ipv4>& addrs);

  DropTracer(DropTracer&&) noexcept;
  DropTracer& operator=(DropTracer&&) noexcept;
  ~DropTracer();

  /// Reads the events the kernel produced so far, at most `max_events` (0 counts as 1), waiting
  /// at most `wait_ms` milliseconds for the first one (0 or negative: only what is there).
  /// Bounded: under a drop storm the kernel refills the ring as fast as it is read, so the
  /// caller loops — while `more`, call again with wait_ms 0 — and decides when to stop;
  /// events the ring had no room for are counted in `lost`, never queued.
  /// Errors: ring buffer poll failures other than EINTR, as ErrnoStatus ("read ring buffer
  /// drop_trace_events": kInternal for most errnos).
  absl::StatusOr<DrainResult> Drain(int wait_ms, size_t max_events = kDrainMaxEvents);

 private:
  struct Impl;
  explicit DropTracer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The kernel's name of drop reason `value` ("SKB_DROP_REASON_IP_RPFILTER"), from the running
/// kernel's BTF (enum skb_drop_reason, or skb_drop_reason_core on newer kernels);
/// "SKB_DROP_REASON_<value>" when BTF is missing or lacks it.
std::string DropReasonName(uint32_t value);

/// "function+0xoff" for a kernel text address, from /proc/kallsyms (needs root: otherwise the
/// addresses read as 0); "" when unresolved.
std::string KernelSymbol(uint64_t address);

}  // namespace sarena::live

#endif  // LIBSARENA_LIVE_DROP_TRACER_H_
