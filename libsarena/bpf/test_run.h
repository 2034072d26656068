// Running a loaded program on a crafted packet in the kernel: BPF_PROG_TEST_RUN (libbpf
// bpf_prog_test_run_opts). The program runs on a real skb built from the bytes; helpers such as
// bpf_redirect only record their target (nothing is transmitted) and report TC_ACT_REDIRECT.
// Source: Documentation/bpf/bpf_prog_run.rst, net/bpf/test_run.c (bpf_prog_test_run_skb).
#ifndef LIBSARENA_BPF_TEST_RUN_H_
#define LIBSARENA_BPF_TEST_RUN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sarena::bpf {

struct TestRunOptions {
  /// Times the kernel runs the program (>= 1). duration_ns is the mean over the runs.
  uint32_t repeat = 1;
  /// skb->ifindex (the device the skb is on). 0 = loopback; otherwise it must exist in the
  /// caller's network namespace (the kernel returns ENODEV -> kNotFound).
  uint32_t ifindex = 0;
  /// skb->ingress_ifindex (any value; the kernel copies it into skb->skb_iif).
  uint32_t ingress_ifindex = 0;
  /// skb->mark.
  uint32_t mark = 0;
  /// Room for the output packet in bytes; 0 = input size + 256.
  uint32_t data_out_capacity = 0;
};

struct TestRunResult {
  uint32_t retval = 0;            // the program's return value (TC_ACT_*)
  std::vector<uint8_t> data_out;  // the packet after the program (possibly rewritten)
  uint32_t duration_ns = 0;       // mean run time per repetition as measured by the kernel
};

/// Runs `prog_fd` (a SCHED_CLS program) once per repetition on `packet` (an Ethernet frame;
/// the kernel rejects frames shorter than 14 bytes with EINVAL -> kInvalidArgument).
/// Errors: ErrnoStatus ("test-run BPF program fd N: ...").
absl::StatusOr<TestRunResult> TestRun(int prog_fd, absl::Span<const uint8_t> packet,
                                      const TestRunOptions& options = {});

/// Shorthand: TestRun with only `repeat` set.
absl::StatusOr<TestRunResult> TestRun(int prog_fd, absl::Span<const uint8_t> packet,
                                      uint32_t repeat);

}  // namespace sarena::bpf

#endif  // LIBSARENA_BPF_TEST_RUN_H_
