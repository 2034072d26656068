#include "libsarena/datapath/drop_trace.h"

#include <linux/types.h>
// libbpf before the skeleton.
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bpf/drop_trace.skel.h"
#include "bpf/kernel/drop_trace.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/bpf/libbpf_log.h"

namespace sarena::datapath {

static_assert(kDropTraceMaxAddrs == SARENA_DROP_TRACE_MAX_ADDRS,
              "kDropTraceMaxAddrs is bpf/kernel/drop_trace.h's SARENA_DROP_TRACE_MAX_ADDRS");

// Sample's return value when the call's budget is reached: libbpf stops consuming (the sample
// that returned it is already consumed, and kept) and hands the value back.
constexpr int kBudgetReached = -E2BIG;

struct DropTraceProgram::Impl {
  drop_trace* skel = nullptr;
  ring_buffer* ring = nullptr;
  std::vector<DropTraceEvent> pending;
  size_t budget = kDropTraceDrainMaxEvents;  // of the Drain running
  bool budget_reached = false;

  ~Impl() {
    if (ring) ring_buffer__free(ring);
    if (skel) drop_trace__destroy(skel);
  }

  static int Sample(void* ctx, void* data, size_t size) {
    if (size < sizeof(sarena_drop_event)) return 0;
    sarena_drop_event ev;
    std::memcpy(&ev, data, sizeof(ev));
    DropTraceEvent d;
    d.ts_ns = ev.ts_ns;
    d.location = ev.location;
    d.reason = ev.reason;
    d.netns_inode = ev.netns_ino;
    d.ifindex = ev.ifindex;
    d.ifname.assign(ev.ifname, strnlen(ev.ifname, sizeof(ev.ifname)));
    d.eth_proto = ev.eth_proto;
    d.proto = ev.l4proto;
    d.src = net::FromBe32(ev.saddr);
    d.dst = net::FromBe32(ev.daddr);
    d.sport = ev.sport;
    d.dport = ev.dport;
    d.tcp_flags = ev.tcp_flags;
    Impl* self = static_cast<Impl*>(ctx);
    self->pending.push_back(std::move(d));
    if (self->pending.size() >= self->budget) {
      self->budget_reached = true;
      return kBudgetReached;
    }
    return 0;
  }
};

DropTraceProgram::DropTraceProgram(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DropTraceProgram::DropTraceProgram(DropTraceProgram&&) noexcept = default;
DropTraceProgram& DropTraceProgram::operator=(DropTraceProgram&&) noexcept = default;
DropTraceProgram::~DropTraceProgram() = default;

absl::StatusOr<DropTraceProgram> DropTraceProgram::Start(const std::vector<net::Ipv4>& addrs) {
  if (addrs.size() > SARENA_DROP_TRACE_MAX_ADDRS) {
    return absl::InvalidArgumentError(absl::StrCat("drop tracer: addrs has ", addrs.size(),
                                                   " addresses, want 0..",
                                                   SARENA_DROP_TRACE_MAX_ADDRS));
  }
  bpf::internal::LibbpfLogCapture capture;
  auto impl = std::make_unique<Impl>();
  impl->skel = drop_trace__open();
  if (impl->skel == nullptr) {
    return ErrnoStatus(errno ? errno : EINVAL, "open BPF object 'drop_trace'", capture.Text());
  }
  if (int ret = drop_trace__load(impl->skel); ret < 0) {
    return ErrnoStatus(-ret, "load BPF object 'drop_trace'", capture.Text());
  }
  sarena_drop_trace_cfg cfg = {};
  cfg.n_addrs = static_cast<__u32>(addrs.size());
  for (size_t i = 0; i < addrs.size(); ++i) cfg.addrs[i] = net::ToBe32(addrs[i]);
  __u32 zero = 0;
  if (bpf_map_update_elem(bpf_map__fd(impl->skel->maps.drop_trace_cfg), &zero, &cfg, BPF_ANY) < 0) {
    return ErrnoStatus(errno, "write drop_trace_cfg");
  }
  impl->ring = ring_buffer__new(bpf_map__fd(impl->skel->maps.drop_trace_events), &Impl::Sample,
                                impl.get(), nullptr);
  if (impl->ring == nullptr) return ErrnoStatus(errno, "open ring buffer drop_trace_events");
  if (int ret = drop_trace__attach(impl->skel); ret < 0) {
    return ErrnoStatus(-ret, "attach tp_btf/kfree_skb (drop_trace)", capture.Text());
  }
  return DropTraceProgram(std::move(impl));
}

absl::StatusOr<DropTraceBatch> DropTraceProgram::Drain(int wait_ms, size_t max_events) {
  impl_->pending.clear();
  impl_->budget = max_events == 0 ? 1 : max_events;
  impl_->budget_reached = false;
  int ret = ring_buffer__poll(impl_->ring, wait_ms < 0 ? 0 : wait_ms);
  if (ret >= 0 && !impl_->budget_reached) ret = ring_buffer__consume(impl_->ring);
  if (impl_->budget_reached && ret == kBudgetReached) ret = 0;
  if (ret < 0 && ret != -EINTR) {
    impl_->pending.clear();
    return ErrnoStatus(-ret, "read ring buffer drop_trace_events");
  }
  DropTraceBatch out;
  out.drops.swap(impl_->pending);
  out.more = impl_->budget_reached;
  // Written by the program on every CPU with an atomic add; an aligned 8-byte load is whole.
  out.lost = __atomic_load_n(&impl_->skel->bss->drop_trace_lost, __ATOMIC_RELAXED);
  return out;
}

absl::StatusOr<std::map<uint32_t, std::string>> ReadKernelDropReasons() {
  bpf::internal::LibbpfLogCapture capture;  // keep libbpf quiet
  btf* b = btf__load_vmlinux_btf();
  if (b == nullptr) return ErrnoStatus(errno ? errno : ENOENT, "load kernel BTF 'vmlinux'");
  std::map<uint32_t, std::string> names;
  bool found = false;
  for (const char* enum_name : {"skb_drop_reason", "skb_drop_reason_core"}) {
    int id = btf__find_by_name_kind(b, enum_name, BTF_KIND_ENUM);
    if (id <= 0) continue;
    const btf_type* t = btf__type_by_id(b, id);
    const struct btf_enum* e = btf_enum(t);
    for (int i = 0; i < btf_vlen(t); ++i) {
      names.emplace(static_cast<uint32_t>(e[i].val), btf__name_by_offset(b, e[i].name_off));
    }
    found = true;
    break;
  }
  btf__free(b);
  if (!found) {
    return absl::NotFoundError(
        "kernel BTF 'vmlinux' has no enum skb_drop_reason or skb_drop_reason_core");
  }
  return names;
}

}  // namespace sarena::datapath
