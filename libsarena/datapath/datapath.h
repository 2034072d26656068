// The loaded eBPF datapath of one node: BPF objects with their maps pinned under the bpffs
// directory (--bpffs), the node config map, and program attachments pinned as links so they
// survive a daemon restart (docs/architecture.md "The node datapath").
// Pin layout under <bpffs>:
//   <bpffs>/<SARENA_MAP_*>                 maps (pinned by name by libbpf, reused on restart)
//   <bpffs>/links/<ifname>_<ingress|egress> TCX links (tc fallback attachments need no pin)
#ifndef LIBSARENA_DATAPATH_DATAPATH_H_
#define LIBSARENA_DATAPATH_DATAPATH_H_

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/bpf/link.h"
#include "libsarena/datapath/objects.h"
#include "libsarena/datapath/host_device.h"
#include "libsarena/netlink/socket.h"

namespace sarena::datapath {

struct DatapathOptions {
  /// bpffs directory for pins (--bpffs, default /sys/fs/bpf/sarena); a bpffs is mounted there
  /// when the path is not on one (e.g. under `ip netns exec`, which hides the host's bpffs).
  std::string bpffs = "/sys/fs/bpf/sarena";
  /// TCX (Linux >= 6.6) or the clsact/tc fallback; kAuto picks TCX when the kernel has it.
  bpf::AttachMode attach_mode = bpf::AttachMode::kAuto;
  /// Deliver pod-to-pod with bpf_redirect_peer (straight into the pod's netns, skipping the
  /// backlog queue) instead of bpf_redirect. See docs/benchmarks.md for the comparison.
  bool redirect_peer = true;
};

/// A BPF program at a device's tc/TCX hook, whoever attached it (sarena or not).
struct HookProgram {
  bpf::Direction direction = bpf::Direction::kIngress;
  bpf::AttachedProgram program;  // mode (kTcx/kTc), kernel prog id, link id, name
};

/// Every program attached to `ifindex` in the calling thread's network namespace: ingress, then
/// egress, each in execution order (bpf::QueryAttached). Only reads. A direction whose query
/// fails (device gone, no permission) is left out, so the result may be partial; no errors.
/// For readers that record what a node runs (sarena-diag collect's sarena-programs.json).
std::vector<HookProgram> AttachedPrograms(int ifindex);

class Datapath {
 public:
  /// Mounts bpffs if needed, loads the programs (reusing pinned maps), writes the node config
  /// (node IP, pod CIDR, sarena_host/sarena_net ifindexes and MACs, flags) and attaches
  /// from_host to the TCX egress of sarena_host — replacing the program of an existing pinned
  /// link atomically, so a restart never leaves the hook empty.
  /// Errors: those of bpf::EnsureBpffs, datapath::Objects::Load (verifier log in the message) and
  /// Attach.
  static absl::StatusOr<std::unique_ptr<Datapath>> Open(const DatapathOptions& options,
                                                        const HostDevice& host,
                                                        const net::Ipv4& node_ip,
                                                        const net::Ipv4Prefix& pod_cidr);

  /// Attaches `program` to `ifname` (ifindex `ifindex`) in `direction`, idempotently: a pinned
  /// link for the same device is updated to the freshly loaded program (bpf_link_update); a
  /// pin left by a device that no longer exists (a defunct link, or another ifindex) is
  /// replaced. TCX links are pinned at <bpffs>/links/<ifname>_<direction>.
  absl::Status Attach(datapath::Program program, absl::string_view ifname, int ifindex,
                      bpf::Direction direction);

  /// Attaches `program` to `ifindex` in `direction` through tc (a cls_bpf filter on the clsact
  /// qdisc, bpf::Link::AttachTc) whatever attach_mode() is, replacing a filter already there.
  /// Nothing is pinned. Unlike a TCX attach (kernel/bpf/tcx.c: tcx_link_prog_attach waits in
  /// synchronize_rcu with the RTNL lock held, ~10 ms here), this waits for no RCU grace
  /// period, so a new endpoint is guarded at once and its TCX link can follow in the background
  /// (EndpointJobs). Errors: those of bpf::Link::AttachTc.
  absl::Status AttachTc(datapath::Program program, int ifindex, bpf::Direction direction);

  /// Removes the tc copy AttachTc put on `ifindex`'s ingress, if the filter there runs `program`
  /// (bpf::QueryAttached; another program at that handle is left alone): the filter
  /// (bpf::DetachTcFilter), then the clsact qdisc (bpf::DeleteClsact) when neither hook has a
  /// filter left (`sock` counts them: a chained plugin may have added its own meanwhile). OK
  /// when there is no copy or the device is gone. Errors: BPF and netlink errors otherwise.
  absl::Status RemoveTcCopy(datapath::Program program, int ifindex, nl::Socket& sock);

  /// Opens the pinned TCX link of `ifname` in `direction` and removes its pin, handing the link
  /// to the caller: the program stays attached while the returned Link lives, and closing it
  /// after the device is gone detaches nothing (the kernel did that with the device). nullopt
  /// when nothing is pinned there (tc mode, or a tc copy not yet upgraded). Errors: ErrnoStatus
  /// when the pin exists but cannot be opened or removed.
  absl::StatusOr<std::optional<bpf::Link>> TakeLinkPin(absl::string_view ifname,
                                                       bpf::Direction direction);

  /// Detaches whatever this datapath attached to `ifname` in `direction` and removes the pin.
  /// Idempotent: OK when nothing is there. `ifindex` (0 = unknown) is used for the tc fallback.
  absl::Status Detach(absl::string_view ifname, int ifindex, bpf::Direction direction);

  /// True when `program` (by name) is attached to `ifindex` in `direction`.
  absl::StatusOr<bool> IsAttached(datapath::Program program, int ifindex,
                                  bpf::Direction direction) const;

  /// The shared maps (endpoint map, config, counters, drops, host flows).
  const datapath::Maps& maps() const { return objects_.maps(); }
  const datapath::Objects& objects() const { return objects_; }
  /// The mechanism in use: kTcx or kTc (resolved from kAuto).
  bpf::AttachMode attach_mode() const { return mode_; }
  const std::string& bpffs() const { return options_.bpffs; }
  /// "<bpffs>/links/<ifname>_<ingress|egress>" (bpffs forbids '.' in names: dots become '-')
  std::string LinkPinPath(absl::string_view ifname, bpf::Direction direction) const;

  /// Removes the link pins under <bpffs>/links of devices whose name starts with
  /// `ifname_prefix` and is not in `keep` (either direction). The pin-name convention lives in
  /// LinkPinPath only; this compares against it. Returns the number removed. Errors: ErrnoStatus
  /// when a pin cannot be removed (a missing links directory is fine).
  absl::StatusOr<int> RemoveLinkPinsExcept(absl::string_view ifname_prefix,
                                           const std::set<std::string>& keep) const;

 private:
  Datapath(DatapathOptions options, datapath::Objects objects, bpf::AttachMode mode)
      : options_(std::move(options)), objects_(std::move(objects)), mode_(mode) {}

  DatapathOptions options_;
  datapath::Objects objects_;
  bpf::AttachMode mode_;
};

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_DATAPATH_H_
