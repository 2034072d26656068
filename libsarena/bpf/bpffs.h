// The BPF filesystem (bpffs), where maps and links are pinned so they outlive the process.
// Note that `ip netns exec` mounts a fresh /sys, hiding the host's /sys/fs/bpf: a daemon running
// inside such a namespace must mount its own bpffs (EnsureBpffs).
#ifndef LIBSARENA_BPF_BPFFS_H_
#define LIBSARENA_BPF_BPFFS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sarena::bpf {

/// True when `path` (which must exist) lives on a bpffs (statfs f_type == BPF_FS_MAGIC).
/// Errors: ErrnoStatus of statfs (kNotFound when `path` does not exist).
absl::StatusOr<bool> IsBpffs(absl::string_view path);

/// Makes `dir` a usable pin directory. If its deepest existing ancestor (or `dir` itself) is on
/// a bpffs, creates the missing directories (mkdir -p, mode 0700). Otherwise creates `dir` and
/// mounts a new bpffs instance on it (mount -t bpf bpf <dir>, mode=0700); when `dir` cannot be
/// created because its parent is a pseudo filesystem (e.g. /sys/fs/bpf on sysfs), the bpffs is
/// mounted on that deepest existing ancestor and the rest is created inside it.
/// Returns the directory where a bpffs was mounted, or "" when none was needed (so a caller
/// that wants to clean up knows what to unmount). Errors: ErrnoStatus of mkdir/mount
/// (kPermissionDenied without CAP_SYS_ADMIN).
absl::StatusOr<std::string> EnsureBpffs(absl::string_view dir);

}  // namespace sarena::bpf

#endif  // LIBSARENA_BPF_BPFFS_H_
