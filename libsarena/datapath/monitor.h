// The user-space reader of the datapath's events (`sarena monitor`, docs/monitor.md): opens the
// pinned ring buffer SARENA_MAP_EVENTS with libbpf's ring_buffer__new, decodes each record as the
// struct sarena_event of sarena/abi.h, filters it (event type, endpoint, newer than the monitor),
// and formats it as one text line or one JSON object. For `--type trace` it marks the traced
// endpoint's entry in the endpoint map (SARENA_EP_F_TRACE) and unmarks it when it closes.
//
// One reader at a time: a BPF ring buffer has a single consumer position, so two monitors on
// the same pins would each see part of the events.
#ifndef LIBSARENA_DATAPATH_MONITOR_H_
#define LIBSARENA_DATAPATH_MONITOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "sarena/abi.h"
#include "libsarena/datapath/monitor.pb.h"

namespace sarena::datapath {

using Event = ::sarena_event;
using EventLimit = ::sarena_event_limit;

/// The event types of sarena/abi.h.
enum class EventType : uint8_t {
  kDrop = SARENA_EVENT_DROP,    // every drop, with its reason
  kTrace = SARENA_EVENT_TRACE,  // packets delivered to / sent by one traced endpoint
};

/// "drop" -> kDrop, "trace" -> kTrace. kInvalidArgument naming the value otherwise.
absl::StatusOr<EventType> ParseEventType(absl::string_view name);
/// "drop", "trace", "type_N" for other values (sarena_event.type).
std::string EventTypeName(uint32_t type);
/// "to_endpoint" (SARENA_TRACE_TO_ENDPOINT), "from_endpoint", "point_N" for other values.
std::string TracePointName(uint32_t point);
/// The `reason` of an event: DropReasonName for drops, TracePointName for traces.
std::string EventReasonName(const Event& ev);

/// Counters of one event type summed over CPUs (struct sarena_event_limit).
struct EventStats {
  uint64_t emitted = 0;     // written to the ring
  uint64_t suppressed = 0;  // not written: the per-CPU token bucket was empty (rate limit)
  uint64_t lost = 0;        // not written: the ring was full
};

/// One event as a text line (no newline), e.g.
///   "12:00:01.123456 drop ttl_exceeded ifindex 7 endpoint 3 cpu 1 len 98: icmp
///    10.244.1.2 -> 10.244.1.3 type 8 code 0"
/// with `wall_time` as local time. TCP/UDP show "tcp 10.244.1.2:40000 -> 10.244.1.3:80".
std::string FormatEventText(const Event& ev, absl::Time wall_time);

/// The event as the protobuf message of `sarena monitor -o json`
/// (libsarena/datapath/proto/monitor.proto, sarena.datapath.v1.MonitorEvent): endpoint is left
/// unset when unknown (SARENA_EVENT_NO_ENDPOINT); family/src/dst are set only for IPv4 (the
/// ports/proto are then 0). For ICMP, sport/dport are the ICMP type and code. ts = wall_time.
v1::MonitorEvent EventMessage(const Event& ev, absl::Time wall_time);

/// One event as a single-line JSON object (no newline): EventMessage printed with protobuf's
/// JSON mapping (proto field names, every scalar printed, unset optional fields left out), e.g.
///   {"type":"drop","reason":"ttl_exceeded","ifindex":7,"endpoint":3,"family":"ipv4",
///    "src":"10.244.1.2","dst":"10.244.1.3","sport":40000,"dport":80,"proto":6,"len":98,
///    "cpu":1,"ts":"2026-12-02T05:30:00.123456789Z"}
/// ts is RFC 3339 UTC (protobuf Timestamp: 0, 3, 6 or 9 fractional digits).
std::string FormatEventJson(const Event& ev, absl::Time wall_time);

/// The counters since the monitor opened as sarena.datapath.v1.MonitorStats (events = those
/// this monitor printed).
v1::MonitorStats StatsMessage(EventType type, uint64_t events, const EventStats& since_open);

/// StatsMessage as one JSON line: {"type":"stats","event_type":"drop","events":"N",
/// "suppressed":"N","lost":"N"} (uint64 counts are JSON strings in protobuf's JSON mapping).
std::string FormatStatsJson(EventType type, uint64_t events, const EventStats& since_open);

struct MonitorOptions {
  /// bpffs directory of the pinned maps (sarenad --bpffs). Required.
  std::string pin_root;
  EventType type = EventType::kDrop;
  /// Only events of this endpoint id (sarena_event.endpoint_id). Required for kTrace (the
  /// endpoint that gets SARENA_EP_F_TRACE); optional filter for kDrop.
  std::optional<uint32_t> endpoint;
};

/// A live reader of SARENA_MAP_EVENTS. Not copyable or movable (libbpf holds a pointer to it).
class Monitor {
 public:
  /// Opens <pin_root>/sarena_events (checked to be a BPF_MAP_TYPE_RINGBUF) and
  /// <pin_root>/sarena_evlim; for kTrace sets SARENA_EP_F_TRACE on the endpoint-map entry whose
  /// endpoint_id is options.endpoint. Events older than this call are skipped by Poll.
  /// Errors: kInvalidArgument (empty pin_root, kTrace without endpoint); kNotFound naming the
  /// missing pin, or "no endpoint with id N" for kTrace; kFailedPrecondition when a pin has the
  /// wrong map type or layout; ErrnoStatus from libbpf.
  static absl::StatusOr<std::unique_ptr<Monitor>> Open(const MonitorOptions& options);
  /// Unmarks the traced endpoint (if its entry still is the one marked) and closes the ring.
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  /// Waits up to `timeout` for events and calls `on_event` for each one that matches the options
  /// (type, endpoint, not older than Open), in ring order; `on_event` returns false to stop (the
  /// rest stay in the ring). Returns how many matching events were delivered. Interrupted by a
  /// signal (EINTR) it returns what it delivered so far. Errors: ErrnoStatus of the poll.
  absl::StatusOr<int> Poll(absl::Duration timeout, absl::FunctionRef<bool(const Event&)> on_event);

  /// The counters of the monitored event type since Open (the per-CPU sarena_evlim entries
  /// summed, minus their values at Open). Errors: the map lookup's.
  absl::StatusOr<EventStats> StatsSinceOpen() const;

  /// The wall-clock time of an event (ts_ns is CLOCK_MONOTONIC; the offset is taken at Open).
  absl::Time WallTime(const Event& ev) const;

  const MonitorOptions& options() const { return options_; }

 private:
  struct Impl;
  explicit Monitor(MonitorOptions options);
  MonitorOptions options_;
  std::unique_ptr<Impl> impl_;
};

/// How RunMonitor runs and prints.
struct MonitorRun {
  bool json = false;   // FormatEventJson / FormatStatsJson lines, else FormatEventText
  uint64_t count = 0;  // stop after this many events; 0 = no limit
  absl::Duration duration = absl::ZeroDuration();  // stop after this long; 0 = no limit
  /// Stop when this becomes non-zero (a signal handler's flag; the handler must not use
  /// SA_RESTART so the poll returns at once). nullptr = never.
  const volatile int* stop = nullptr;
};

/// The `sarena monitor` loop: polls `monitor` and hands every event, formatted as one line
/// (without newline), to `print_line` until count / duration / stop. Whenever the rate limit
/// suppressed or the full ring lost events since the last report, and once at the end, it also
/// prints the counts since Open: with json a FormatStatsJson line, else
/// "-- N events, N suppressed by the rate limit, N lost (ring full)". Errors: Poll's, the stats
/// map's.
absl::Status RunMonitor(Monitor& monitor, const MonitorRun& run,
                        absl::FunctionRef<void(absl::string_view line)> print_line);

/// The counters of event type `type` summed over CPUs, read from <pin_root>/sarena_evlim.
/// Errors: kNotFound when the pin is missing; the lookup's.
absl::StatusOr<EventStats> ReadEventStats(absl::string_view pin_root, EventType type);

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_MONITOR_H_
