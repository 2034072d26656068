#include "libsarena/netlink/netns.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"

namespace sarena::nl {
namespace {

absl::Status CheckName(absl::string_view name, absl::string_view verb) {
  if (name.empty() || name == "." || name == ".." || absl::StrContains(name, '/') ||
      name.size() > 255) {
    return absl::InvalidArgumentError(absl::StrCat(
        verb, " netns '", name, "': invalid name (1-255 characters, no '/', not '.' or '..')"));
  }
  return absl::OkStatus();
}

// Makes kNetnsRunDir a shared mount point, as iproute2 does, so that namespaces mounted later
// propagate into mount namespaces created afterwards (e.g. by container runtimes).
absl::Status PrepareRunDir() {
  const std::string dir(kNetnsRunDir);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("create directory '", dir, "'"));
  }
  bool bound = false;
  while (mount("", dir.c_str(), "none", MS_SHARED | MS_REC, nullptr) != 0) {
    if (errno != EINVAL || bound) {
      return ErrnoStatus(errno, absl::StrCat("make mount '", dir, "' shared"));
    }
    // Not a mount point yet: bind it onto itself, then retry.
    if (mount(dir.c_str(), dir.c_str(), "none", MS_BIND | MS_REC, nullptr) != 0) {
      return ErrnoStatus(errno, absl::StrCat("bind mount '", dir, "'"));
    }
    bound = true;
  }
  return absl::OkStatus();
}

}  // namespace

std::string Netns::ResolvePath(absl::string_view name_or_path) {
  if (absl::StrContains(name_or_path, '/')) return std::string(name_or_path);
  return absl::StrCat(kNetnsRunDir, "/", name_or_path);
}

absl::StatusOr<Netns> Netns::FromFd(UniqueFd fd, std::string path) {
  const std::string what = absl::StrCat("open netns '", path, "'");
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, what);
  int type = ioctl(fd.get(), NS_GET_NSTYPE);
  if (type < 0) {
    if (errno == ENOTTY || errno == EINVAL) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": not a namespace file"));
    }
    return ErrnoStatus(errno, what);
  }
  if (type != CLONE_NEWNET) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not a network namespace"));
  }
  return Netns(std::move(fd), std::move(path), st.st_dev, st.st_ino);
}

absl::StatusOr<Netns> Netns::Open(absl::string_view name_or_path) {
  if (!absl::StrContains(name_or_path, '/')) {
    if (absl::Status st = CheckName(name_or_path, "open"); !st.ok()) return st;
  }
  std::string path = ResolvePath(name_or_path);
  const std::string what = absl::StrCat("open netns '", path, "'");
  // O_PATH never calls the file's open(): a FIFO, a device or a FUSE file cannot block us here.
  // Only once fstatfs says nsfs is the file reopened for real (setns needs a non-O_PATH fd).
  UniqueFd probe(open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!probe.valid()) return ErrnoStatus(errno, what);
  struct statfs sfs;
  if (fstatfs(probe.get(), &sfs) != 0) return ErrnoStatus(errno, what);
  if (sfs.f_type != NSFS_MAGIC) {
    struct stat st;
    const char* kind = "not on nsfs";
    if (fstat(probe.get(), &st) == 0) {
      kind = S_ISFIFO(st.st_mode)  ? "fifo"
             : S_ISDIR(st.st_mode) ? "directory"
             : S_ISCHR(st.st_mode) ? "character device"
             : S_ISBLK(st.st_mode) ? "block device"
             : S_ISSOCK(st.st_mode) ? "socket"
             : S_ISREG(st.st_mode)  ? "regular file"
                                    : "not on nsfs";
    }
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not a network namespace (", kind, ")"));
  }
  UniqueFd fd(open(absl::StrCat("/proc/self/fd/", probe.get()).c_str(),
                   O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, what);
  return FromFd(std::move(fd), std::move(path));
}

absl::StatusOr<Netns> Netns::Current() { return Open("/proc/thread-self/ns/net"); }

absl::StatusOr<Netns> Netns::Dup() const {
  UniqueFd fd(fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("duplicate netns '", path_, "'"));
  return Netns(std::move(fd), path_, dev_, ino_);
}

absl::StatusOr<Netns> Netns::Create(absl::string_view name) {
  if (absl::Status st = CheckName(name, "create"); !st.ok()) return st;
  const std::string what = absl::StrCat("create netns '", name, "'");
  if (absl::Status st = PrepareRunDir(); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat(what, ": ", st.message()));
  }
  const std::string path = ResolvePath(name);
  {
    UniqueFd mountpoint(open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0));
    if (!mountpoint.valid()) return ErrnoStatus(errno, what);
  }
  absl::Status mounted;
  std::thread helper([&] {
    if (unshare(CLONE_NEWNET) != 0) {
      mounted = ErrnoStatus(errno, what, "unshare(CLONE_NEWNET)");
      return;
    }
    if (mount("/proc/thread-self/ns/net", path.c_str(), "none", MS_BIND, nullptr) != 0) {
      mounted = ErrnoStatus(errno, what, "bind mount");
    }
  });
  helper.join();
  if (!mounted.ok()) {
    unlink(path.c_str());
    return mounted;
  }
  return Open(path);
}

absl::Status Netns::Delete(absl::string_view name) {
  if (absl::Status st = CheckName(name, "delete"); !st.ok()) return st;
  const std::string what = absl::StrCat("delete netns '", name, "'");
  const std::string path = ResolvePath(name);
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return ErrnoStatus(errno, what);
  // EINVAL: not a mount point (a stale file) — remove it anyway.
  if (umount2(path.c_str(), MNT_DETACH) != 0 && errno != EINVAL) {
    return ErrnoStatus(errno, what, "unmount");
  }
  if (unlink(path.c_str()) != 0) return ErrnoStatus(errno, what, "unlink");
  return absl::OkStatus();
}

absl::Status RunIn(const Netns& ns, absl::FunctionRef<absl::Status()> fn) {
  absl::Status result;
  std::thread helper([&] {
    if (setns(ns.fd(), CLONE_NEWNET) != 0) {
      result = ErrnoStatus(errno, absl::StrCat("enter netns '", ns.path(), "'"));
      return;
    }
    result = fn();
  });
  helper.join();
  return result;
}

}  // namespace sarena::nl
