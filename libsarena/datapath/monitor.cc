#include "libsarena/datapath/monitor.h"

#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/bpf/map.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/maps.h"

namespace sarena::datapath {
namespace {

std::string Pin(absl::string_view pin_root, absl::string_view name) {
  return absl::StrCat(pin_root, "/", name);
}

absl::StatusOr<bpf::PerCpuMap<uint32_t, EventLimit>> OpenLimits(absl::string_view pin_root) {
  return bpf::PerCpuMap<uint32_t, EventLimit>::FromPin(Pin(pin_root, SARENA_MAP_EVENT_LIMITS));
}

absl::StatusOr<EventStats> SumLimits(const bpf::PerCpuMap<uint32_t, EventLimit>& limits,
                                     EventType type) {
  SARENA_ASSIGN_OR_RETURN(std::vector<EventLimit> per_cpu,
                          limits.Lookup(static_cast<uint32_t>(type)));
  EventStats s;
  for (const EventLimit& l : per_cpu) {
    s.emitted += l.emitted;
    s.suppressed += l.suppressed;
    s.lost += l.lost;
  }
  return s;
}

// The IPv4 address in bytes [0..3] (network byte order) as dotted quad.
std::string Ipv4Text(const uint8_t (&addr)[16]) {
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, addr, buf, sizeof(buf)) != nullptr ? buf : "?";
}

std::string ProtoName(uint8_t proto) {
  switch (proto) {
    case IPPROTO_TCP:
      return "tcp";
    case IPPROTO_UDP:
      return "udp";
    case IPPROTO_ICMP:
      return "icmp";
  }
  return absl::StrCat("proto ", proto);
}

int64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

absl::StatusOr<EventType> ParseEventType(absl::string_view name) {
  if (name == "drop") return EventType::kDrop;
  if (name == "trace") return EventType::kTrace;
  return absl::InvalidArgumentError(absl::StrCat("event type '", name, "': must be drop or trace"));
}

std::string EventTypeName(uint32_t type) {
  switch (type) {
    case SARENA_EVENT_DROP:
      return "drop";
    case SARENA_EVENT_TRACE:
      return "trace";
  }
  return absl::StrCat("type_", type);
}

std::string TracePointName(uint32_t point) {
  switch (point) {
    case SARENA_TRACE_TO_ENDPOINT:
      return "to_endpoint";
    case SARENA_TRACE_FROM_ENDPOINT:
      return "from_endpoint";
  }
  return absl::StrCat("point_", point);
}

std::string EventReasonName(const Event& ev) {
  return ev.type == SARENA_EVENT_TRACE ? TracePointName(ev.reason) : DropReasonName(ev.reason);
}

std::string FormatEventText(const Event& ev, absl::Time wall_time) {
  std::string out = absl::StrCat(
      absl::FormatTime("%H:%M:%E6S", wall_time, absl::LocalTimeZone()), " ", EventTypeName(ev.type),
      " ", EventReasonName(ev), " ifindex ", ev.ifindex, " endpoint ",
      ev.endpoint_id == SARENA_EVENT_NO_ENDPOINT ? std::string("-") : absl::StrCat(ev.endpoint_id),
      " cpu ", ev.cpu, " len ", ev.len, ": ");
  if (ev.family != SARENA_FAMILY_IPV4) {
    absl::StrAppend(&out, "non-IPv4 frame");
    return out;
  }
  const std::string src = Ipv4Text(ev.src), dst = Ipv4Text(ev.dst);
  if (ev.proto == IPPROTO_TCP || ev.proto == IPPROTO_UDP) {
    absl::StrAppend(&out, ProtoName(ev.proto), " ", src, ":", ev.sport, " -> ", dst, ":", ev.dport);
  } else if (ev.proto == IPPROTO_ICMP) {
    absl::StrAppend(&out, "icmp ", src, " -> ", dst, " type ", ev.sport, " code ", ev.dport);
  } else {
    absl::StrAppend(&out, ProtoName(ev.proto), " ", src, " -> ", dst);
  }
  return out;
}

v1::MonitorEvent EventMessage(const Event& ev, absl::Time wall_time) {
  v1::MonitorEvent m;
  m.set_type(EventTypeName(ev.type));
  m.set_reason(EventReasonName(ev));
  m.set_ifindex(ev.ifindex);
  if (ev.endpoint_id != SARENA_EVENT_NO_ENDPOINT) m.set_endpoint(ev.endpoint_id);
  if (ev.family == SARENA_FAMILY_IPV4) {
    m.set_family("ipv4");
    m.set_src(Ipv4Text(ev.src));
    m.set_dst(Ipv4Text(ev.dst));
  }
  m.set_sport(ev.sport);
  m.set_dport(ev.dport);
  m.set_proto(ev.proto);
  m.set_len(ev.len);
  m.set_cpu(ev.cpu);
  const int64_t ns = absl::ToUnixNanos(wall_time);
  m.mutable_ts()->set_seconds(ns / 1000000000);
  m.mutable_ts()->set_nanos(static_cast<int32_t>(ns % 1000000000));
  return m;
}

v1::MonitorStats StatsMessage(EventType type, uint64_t events, const EventStats& since_open) {
  v1::MonitorStats m;
  m.set_type("stats");
  m.set_event_type(EventTypeName(static_cast<uint32_t>(type)));
  m.set_events(events);
  m.set_suppressed(since_open.suppressed);
  m.set_lost(since_open.lost);
  return m;
}

namespace {
// One line per message (JSON lines): proto field names, every scalar printed.
std::string JsonLine(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = false;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(m, &out, opts).ok()) return "{}";
  return out;
}
}  // namespace

std::string FormatEventJson(const Event& ev, absl::Time wall_time) {
  return JsonLine(EventMessage(ev, wall_time));
}

std::string FormatStatsJson(EventType type, uint64_t events, const EventStats& since_open) {
  return JsonLine(StatsMessage(type, events, since_open));
}

absl::StatusOr<EventStats> ReadEventStats(absl::string_view pin_root, EventType type) {
  SARENA_ASSIGN_OR_RETURN(auto limits, OpenLimits(pin_root));
  return SumLimits(limits, type);
}

// ---- Monitor ----

struct Monitor::Impl {
  bpf::RawMap ring_map;
  bpf::PerCpuMap<uint32_t, EventLimit> limits;
  struct ring_buffer* ring = nullptr;
  EventStats at_open;
  int64_t open_mono_ns = 0;
  absl::Time mono_epoch;  // wall time at CLOCK_MONOTONIC 0
  // Trace mode: the endpoint-map entry marked with SARENA_EP_F_TRACE.
  std::optional<EndpointMap> endpoints;
  EndpointKey traced_key = {};
  uint32_t traced_ifindex = 0;
  // The Poll in progress.
  const MonitorOptions* options = nullptr;
  absl::FunctionRef<bool(const Event&)>* on_event = nullptr;
  int delivered = 0;

  Impl(bpf::RawMap ring_map, bpf::PerCpuMap<uint32_t, EventLimit> limits)
      : ring_map(std::move(ring_map)), limits(std::move(limits)) {}
  ~Impl() {
    if (ring != nullptr) ring_buffer__free(ring);
  }

  // ring_buffer_sample_fn: one record. A negative return stops ring_buffer__poll after this
  // record (libbpf has already consumed it).
  static int Sample(void* ctx, void* data, size_t size) {
    Impl* self = static_cast<Impl*>(ctx);
    if (size < sizeof(Event) || self->on_event == nullptr) return 0;
    Event ev;
    std::memcpy(&ev, data, sizeof(ev));
    const MonitorOptions& o = *self->options;
    if (ev.type != static_cast<uint8_t>(o.type)) return 0;
    if (static_cast<int64_t>(ev.ts_ns) < self->open_mono_ns) return 0;  // from before Open
    if (o.endpoint && ev.endpoint_id != *o.endpoint) return 0;
    ++self->delivered;
    return (*self->on_event)(ev) ? 0 : -ECANCELED;
  }
};

Monitor::Monitor(MonitorOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Monitor>> Monitor::Open(const MonitorOptions& options) {
  if (options.pin_root.empty()) {
    return absl::InvalidArgumentError("monitor: pin_root (the bpffs directory) is required");
  }
  if (options.type == EventType::kTrace && !options.endpoint) {
    return absl::InvalidArgumentError("monitor --type trace: an endpoint id is required");
  }
  const std::string ring_path = Pin(options.pin_root, SARENA_MAP_EVENTS);
  SARENA_ASSIGN_OR_RETURN(bpf::RawMap ring_map, bpf::RawMap::FromPin(ring_path));
  if (ring_map.info().type != BPF_MAP_TYPE_RINGBUF) {
    return absl::FailedPreconditionError(
        absl::StrCat("monitor: ", ring_path, " is a ", bpf::MapTypeName(ring_map.info().type),
                     " map, not a ringbuf (a datapath older than `sarena monitor`?)"));
  }
  SARENA_ASSIGN_OR_RETURN(auto limits, OpenLimits(options.pin_root));

  std::unique_ptr<Monitor> m(new Monitor(options));
  m->impl_ = std::make_unique<Impl>(std::move(ring_map), std::move(limits));
  Impl& impl = *m->impl_;
  impl.options = &m->options_;
  SARENA_ASSIGN_OR_RETURN(impl.at_open, SumLimits(impl.limits, options.type));
  impl.open_mono_ns = MonotonicNs();
  impl.mono_epoch = absl::Now() - absl::Nanoseconds(impl.open_mono_ns);
  impl.ring = ring_buffer__new(impl.ring_map.fd(), &Impl::Sample, &impl, nullptr);
  if (impl.ring == nullptr) {
    return ErrnoStatus(errno, absl::StrCat("monitor: open ring buffer ", ring_path));
  }

  if (options.type == EventType::kTrace) {
    const std::string lxc_path = Pin(options.pin_root, SARENA_MAP_ENDPOINTS);
    SARENA_ASSIGN_OR_RETURN(auto raw, (bpf::Map<EndpointKey, Endpoint>::FromPin(lxc_path)));
    // The slots copy the flags too (sarena/abi.h); a datapath older than them has none.
    std::optional<EndpointMap::SlotMap> slots;
    auto slot_pin = EndpointMap::SlotMap::FromPin(Pin(options.pin_root, SARENA_MAP_ENDPOINT_SLOTS));
    if (slot_pin.ok()) {
      slots.emplace(std::move(*slot_pin));
    } else if (!absl::IsNotFound(slot_pin.status())) {
      return slot_pin.status();
    }
    EndpointMap endpoints(std::move(raw), std::move(slots));
    std::optional<std::pair<EndpointKey, Endpoint>> found;
    SARENA_RETURN_IF_ERROR(endpoints.ForEach([&](const EndpointKey& k, const Endpoint& v) {
      if (v.endpoint_id != *options.endpoint) return true;
      found.emplace(k, v);
      return false;
    }));
    if (!found) {
      return absl::NotFoundError(absl::StrCat("monitor --type trace: no endpoint with id ",
                                              *options.endpoint, " in ", lxc_path,
                                              " (sarena endpoint list shows the ids)"));
    }
    Endpoint marked = found->second;
    marked.flags |= SARENA_EP_F_TRACE;
    SARENA_RETURN_IF_ERROR(endpoints.Replace(found->first, marked));
    impl.traced_key = found->first;
    impl.traced_ifindex = marked.ifindex;
    impl.endpoints.emplace(std::move(endpoints));
  }
  return m;
}

Monitor::~Monitor() {
  if (impl_ == nullptr || !impl_->endpoints) return;
  // Unmark only the entry this monitor marked: the same key still owned by the same veth.
  absl::StatusOr<Endpoint> ep = impl_->endpoints->Lookup(impl_->traced_key);
  if (!ep.ok() || ep->ifindex != impl_->traced_ifindex || !options_.endpoint ||
      ep->endpoint_id != *options_.endpoint) {
    return;
  }
  ep->flags &= ~SARENA_EP_F_TRACE;
  (void)impl_->endpoints->Replace(impl_->traced_key, *ep);
}

absl::StatusOr<int> Monitor::Poll(absl::Duration timeout,
                                  absl::FunctionRef<bool(const Event&)> on_event) {
  Impl& impl = *impl_;
  impl.on_event = &on_event;
  impl.delivered = 0;
  int ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  int ret = ring_buffer__poll(impl.ring, ms < 0 ? 0 : ms);
  // Records whose submit sent no wakeup (the kernel's adaptive notification) are read too.
  if (ret >= 0) ret = ring_buffer__consume(impl.ring);
  impl.on_event = nullptr;
  if (ret < 0 && ret != -ECANCELED && ret != -EINTR) {
    return ErrnoStatus(-ret, absl::StrCat("monitor: poll ring buffer ", options_.pin_root, "/",
                                          SARENA_MAP_EVENTS));
  }
  return impl.delivered;
}

absl::StatusOr<EventStats> Monitor::StatsSinceOpen() const {
  SARENA_ASSIGN_OR_RETURN(EventStats now, SumLimits(impl_->limits, options_.type));
  return EventStats{.emitted = now.emitted - impl_->at_open.emitted,
                    .suppressed = now.suppressed - impl_->at_open.suppressed,
                    .lost = now.lost - impl_->at_open.lost};
}

absl::Time Monitor::WallTime(const Event& ev) const {
  return impl_->mono_epoch + absl::Nanoseconds(static_cast<int64_t>(ev.ts_ns));
}

absl::Status RunMonitor(Monitor& monitor, const MonitorRun& run,
                        absl::FunctionRef<void(absl::string_view line)> print_line) {
  const EventType type = monitor.options().type;
  const absl::Time deadline =
      run.duration > absl::ZeroDuration() ? absl::Now() + run.duration : absl::InfiniteFuture();
  uint64_t printed = 0;
  EventStats reported;
  auto report = [&](bool always) -> absl::Status {
    SARENA_ASSIGN_OR_RETURN(EventStats s, monitor.StatsSinceOpen());
    if (!always && s.suppressed == reported.suppressed && s.lost == reported.lost) {
      return absl::OkStatus();
    }
    reported = s;
    print_line(run.json
                   ? FormatStatsJson(type, printed, s)
                   : absl::StrCat("-- ", printed, " events, ", s.suppressed,
                                  " suppressed by the rate limit, ", s.lost, " lost (ring full)"));
    return absl::OkStatus();
  };
  auto done = [&] {
    return (run.stop != nullptr && *run.stop != 0) || (run.count != 0 && printed >= run.count) ||
           absl::Now() >= deadline;
  };
  while (!done()) {
    absl::Duration wait = std::min(absl::Milliseconds(250), deadline - absl::Now());
    SARENA_ASSIGN_OR_RETURN(int n, monitor.Poll(wait, [&](const Event& ev) {
      absl::Time t = monitor.WallTime(ev);
      print_line(run.json ? FormatEventJson(ev, t) : FormatEventText(ev, t));
      ++printed;
      return run.count == 0 || printed < run.count;
    }));
    (void)n;
    SARENA_RETURN_IF_ERROR(report(/*always=*/false));
  }
  return report(/*always=*/true);
}

}  // namespace sarena::datapath
