#include "libsarena/bpf/bpffs.h"

#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cerrno>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libsarena/base/errno_status.h"
#include "libsarena/base/file.h"
#include "libsarena/base/status_macros.h"

namespace sarena::bpf {
namespace {

// Parent of an absolute or relative path ("/a/b" -> "/a", "/a" -> "/", "a" -> ".").
std::string Parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

absl::Status MountBpffs(const std::string& dir) {
  if (::mount("bpf", dir.c_str(), "bpf", 0, "mode=0700") < 0) {
    return ErrnoStatus(errno, absl::StrCat("mount bpffs on '", dir, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> IsBpffs(absl::string_view path) {
  std::string p(path);
  struct statfs st;
  if (::statfs(p.c_str(), &st) < 0) return ErrnoStatus(errno, absl::StrCat("statfs '", path, "'"));
  return static_cast<uint64_t>(st.f_type) == static_cast<uint64_t>(BPF_FS_MAGIC);
}

absl::StatusOr<std::string> EnsureBpffs(absl::string_view dir_in) {
  std::string dir(dir_in);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) return absl::InvalidArgumentError("ensure bpffs: empty directory");

  std::string existing = dir;
  while (!Exists(existing)) existing = Parent(existing);
  SARENA_ASSIGN_OR_RETURN(bool on_bpffs, IsBpffs(existing));
  if (on_bpffs) {
    SARENA_RETURN_IF_ERROR(MakeDirs(dir, 0700));
    return std::string();
  }
  // Not on bpffs: create `dir` on the current filesystem and mount a bpffs there.
  absl::Status made = MakeDirs(dir, 0700);
  if (made.ok()) {
    SARENA_RETURN_IF_ERROR(MountBpffs(dir));
    return dir;
  }
  // The existing ancestor does not allow directories (e.g. /sys/fs/bpf on sysfs): mount there.
  if (existing == "/" || existing == ".") return made;
  SARENA_RETURN_IF_ERROR(MountBpffs(existing));
  SARENA_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  return existing;
}

}  // namespace sarena::bpf
