#include "libsarena/bpf/test_run.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"

namespace sarena::bpf {

absl::StatusOr<TestRunResult> TestRun(int prog_fd, absl::Span<const uint8_t> packet,
                                      const TestRunOptions& options) {
  TestRunResult result;
  uint32_t capacity = options.data_out_capacity != 0
                          ? options.data_out_capacity
                          : static_cast<uint32_t>(packet.size()) + 256;
  result.data_out.resize(capacity);

  // Only mark, priority, ingress_ifindex, ifindex, cb, tstamp, wire_len, gso_* may be non-zero
  // in the input context (net/bpf/test_run.c, convert___skb_to_skb).
  struct __sk_buff ctx;
  std::memset(&ctx, 0, sizeof(ctx));
  ctx.ifindex = options.ifindex;
  ctx.ingress_ifindex = options.ingress_ifindex;
  ctx.mark = options.mark;
  bool use_ctx = options.ifindex != 0 || options.ingress_ifindex != 0 || options.mark != 0;

  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = packet.data(),
              .data_out = result.data_out.data(),
              .data_size_in = static_cast<uint32_t>(packet.size()), .data_size_out = capacity,
              .ctx_in = use_ctx ? &ctx : nullptr, .ctx_size_in = use_ctx ? static_cast<uint32_t>(sizeof(ctx)) : 0u,
              .repeat = static_cast<int>(options.repeat == 0 ? 1 : options.repeat));
  int ret = bpf_prog_test_run_opts(prog_fd, &opts);
  if (ret < 0) {
    return ErrnoStatus(-ret, absl::StrCat("test-run BPF program fd ", prog_fd, " on ",
                                          packet.size(), "-byte packet"));
  }
  result.retval = opts.retval;
  result.data_out.resize(opts.data_size_out);
  result.duration_ns = opts.duration;
  return result;
}

absl::StatusOr<TestRunResult> TestRun(int prog_fd, absl::Span<const uint8_t> packet,
                                      uint32_t repeat) {
  return TestRun(prog_fd, packet, TestRunOptions{.repeat = repeat});
}

}  // namespace sarena::bpf
