// Attaching tc programs to network devices: TCX links (Linux >= 6.6) with a classic clsact +
// cls_bpf (direct-action) fallback, pinning and atomic program replacement, and a query of what
// is attached to a device.
//
// TCX (kernel commit "bpf: Add fd-based tcx multi-prog infra with link support", 6.6): a program
// is attached through bpf_link_create(prog_fd, ifindex, BPF_TCX_INGRESS|BPF_TCX_EGRESS); the
// attachment lives as long as the link fd or a bpffs pin of it; bpf_link_update swaps the program
// atomically (daemon restart/upgrade without a gap); bpf_link_detach removes it.
// tc fallback: a clsact qdisc plus a cls_bpf filter in direct-action mode at (handle, priority)
// via libbpf's bpf_tc_hook_create / bpf_tc_attach; the filter outlives the process by itself
// (it is not an fd), is replaced atomically by attaching again (BPF_TC_F_REPLACE) and removed
// with Detach().
#ifndef LIBSARENA_BPF_LINK_H_
#define LIBSARENA_BPF_LINK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/base/unique_fd.h"

namespace sarena::bpf {

/// Hook direction on a device: ingress = frames the device receives, egress = frames it sends.
enum class Direction { kIngress, kEgress };
/// "ingress" / "egress".
absl::string_view ToString(Direction direction);

/// How to attach. kAuto tries TCX and falls back to tc when the kernel has no TCX (link_create
/// fails with EINVAL, ENOTSUPP, EOPNOTSUPP or ENOSYS). kTcx / kTc force one mechanism.
enum class AttachMode { kAuto, kTcx, kTc };
/// "auto" / "tcx" / "tc".
absl::string_view ToString(AttachMode mode);

/// uapi attach types of TCX (include/uapi/linux/bpf.h, enum bpf_attach_type); Debian 12's 6.1
/// headers predate them.
inline constexpr uint32_t kBpfTcxIngress = 46;
inline constexpr uint32_t kBpfTcxEgress = 47;

/// Where the tc fallback puts its cls_bpf filter on the clsact hook. The defaults are what
/// QueryAttached looks at.
struct TcOptions {
  uint32_t handle = 1;
  uint32_t priority = 1;
};

struct AttachOptions {
  AttachMode mode = AttachMode::kAuto;
  TcOptions tc;
};

/// One attachment of a program to a device hook. Move-only.
/// For a TCX link, destroying the Link closes the link fd: the program stays attached only if
/// the link was pinned. For tc, destroying the Link does nothing (the filter stays until Detach).
class Link {
 public:
  /// Attaches `prog_fd` (a SCHED_CLS program) to `ifindex` in `direction`.
  /// TCX: appended after programs already attached by others. tc: creates the clsact qdisc if
  /// needed (an existing one is kept) and adds or replaces the filter at options.tc.
  /// Errors: ErrnoStatus ("attach tcx program to ifindex N ingress: ..."), kNotFound (ENODEV)
  /// for a missing device; with kAuto the tc error is returned when both fail (the TCX error in
  /// the detail).
  static absl::StatusOr<Link> Attach(int prog_fd, int ifindex, Direction direction,
                                     const AttachOptions& options = {});
  /// Attach with mode kTcx.
  static absl::StatusOr<Link> AttachTcx(int prog_fd, int ifindex, Direction direction);
  /// Attach with mode kTc.
  static absl::StatusOr<Link> AttachTc(int prog_fd, int ifindex, Direction direction,
                                       const TcOptions& tc = {});
  /// Opens a TCX link pinned at `path` (bpf_obj_get), e.g. after a daemon restart.
  /// Errors: kNotFound when nothing is pinned there; kInvalidArgument when the pin is not a TCX
  /// link.
  static absl::StatusOr<Link> FromPin(absl::string_view path);

  Link(Link&&) = default;
  Link& operator=(Link&&) = default;

  /// kTcx or kTc (never kAuto).
  AttachMode mode() const { return mode_; }
  int ifindex() const { return ifindex_; }
  Direction direction() const { return direction_; }
  /// The link fd (TCX), -1 for tc.
  int fd() const { return fd_.get(); }
  /// Kernel id of the attached program (as of the last Attach/Update). 0 when unknown.
  uint32_t prog_id() const { return prog_id_; }
  /// Kernel id of the link (TCX), 0 for tc.
  uint32_t link_id() const { return link_id_; }

  /// Pins a TCX link at `path` on a bpffs (bpf_obj_pin), so the attachment outlives the process.
  /// Errors: kFailedPrecondition for tc attachments (nothing to pin: the filter already outlives
  /// the process); kAlreadyExists when `path` exists; ErrnoStatus otherwise.
  absl::Status Pin(absl::string_view path) const;
  /// Atomically replaces the attached program with `new_prog_fd`: bpf_link_update (TCX) or
  /// bpf_tc_attach with BPF_TC_F_REPLACE (tc). No packet sees an empty hook.
  absl::Status Update(int new_prog_fd);
  /// Removes the attachment: bpf_link_detach (TCX; the link fd and pins become defunct) or
  /// bpf_tc_detach (tc; the clsact qdisc stays). Idempotent: detaching what is already gone
  /// (detached before, device deleted, filter removed by someone else) is OK.
  absl::Status Detach();

 private:
  Link(AttachMode mode, UniqueFd fd, int ifindex, Direction direction, TcOptions tc,
       uint32_t prog_id, uint32_t link_id);
  AttachMode mode_ = AttachMode::kTcx;
  UniqueFd fd_;
  int ifindex_ = 0;
  Direction direction_ = Direction::kIngress;
  TcOptions tc_;
  uint32_t prog_id_ = 0;
  uint32_t link_id_ = 0;
};

/// Removes the tc fallback's cls_bpf filter at `tc` (handle, priority) from `ifindex`'s clsact
/// hook in `direction` (`tc filter del dev X ingress|egress handle H prio P bpf`); other filters
/// and the qdisc stay. OK when there is no such filter (ENOENT), no clsact qdisc (EINVAL) or no
/// device (ENODEV). Errors: ErrnoStatus otherwise. Source: libbpf bpf_tc_detach.
absl::Status DetachTcFilter(int ifindex, Direction direction, const TcOptions& tc = {});

/// Deletes the clsact qdisc of `ifindex` (`tc qdisc del dev X clsact`), and with it every tc
/// filter on both of its hooks, the tc fallback's included. Only for devices sarena created and
/// owns (a pod's host veth): another program's filters there would go too. OK when the device
/// has no clsact qdisc (EINVAL, ENOENT) or is gone (ENODEV). Errors: ErrnoStatus otherwise.
/// Source: libbpf bpf_tc_hook_destroy with BPF_TC_INGRESS | BPF_TC_EGRESS.
absl::Status DeleteClsact(int ifindex);

/// True when the running kernel supports TCX links (probed once by attaching nothing: a
/// BPF_PROG_QUERY with BPF_TCX_INGRESS on the loopback device).
bool KernelHasTcx();

/// A program attached to a device hook.
struct AttachedProgram {
  AttachMode mode = AttachMode::kTcx;  // kTcx or kTc
  uint32_t prog_id = 0;
  uint32_t link_id = 0;  // TCX link id, 0 for tc or for a TCX attachment without a link
  std::string name;      // program name as the kernel knows it (at most 15 characters)
};

/// Lists the programs attached to `ifindex` in `direction`, in execution order: every TCX
/// program (BPF_PROG_QUERY with BPF_TCX_INGRESS/EGRESS, issued as a raw bpf(2) syscall because
/// libbpf 1.1.2 lacks link-id output), then the tc cls_bpf filter at `tc` (bpf_tc_query) if any.
/// An empty list means nothing is attached. Errors: kNotFound (ENODEV) for a missing device,
/// ErrnoStatus otherwise. Source: include/uapi/linux/bpf.h, struct bpf_attr.query.
absl::StatusOr<std::vector<AttachedProgram>> QueryAttached(int ifindex, Direction direction,
                                                           const TcOptions& tc = {});

/// Name and id of a program fd (bpf_obj_get_info_by_fd).
struct ProgramInfo {
  uint32_t id = 0;
  uint32_t type = 0;  // enum bpf_prog_type
  std::string name;
};
absl::StatusOr<ProgramInfo> GetProgramInfo(int prog_fd);

}  // namespace sarena::bpf

#endif  // LIBSARENA_BPF_LINK_H_
