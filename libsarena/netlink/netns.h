// Network namespaces: open by name or path, run code inside one without switching the calling
// thread, and create/delete named namespaces the way `ip netns add/del` does.
//
// Source: namespaces(7), setns(2), unshare(2), ip-netns(8) (iproute2 keeps named namespaces as
// bind mounts of /proc/<tid>/ns/net on files under /var/run/netns, a shared mount point).
#ifndef LIBSARENA_NETLINK_NETNS_H_
#define LIBSARENA_NETLINK_NETNS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/base/unique_fd.h"

namespace sarena::nl {

/// Directory of named network namespaces (iproute2's NETNS_RUN_DIR).
inline constexpr absl::string_view kNetnsRunDir = "/var/run/netns";

/// An open handle (O_RDONLY|O_CLOEXEC file descriptor) on a network namespace. Holding it keeps
/// the namespace alive even when its name is removed. Move-only. Identity is the nsfs inode
/// (st_dev, st_ino) of the descriptor: two handles are equal iff they name the same namespace.
class Netns {
 public:
  /// Opens a namespace. `name_or_path` containing a '/' is used as a path as is
  /// ("/proc/1234/ns/net", "/var/run/netns/pod1", "/proc/thread-self/ns/net"); a bare name means
  /// "/var/run/netns/<name>" (what `ip netns exec <name>` uses).
  /// Never blocks on the file: it is first opened with O_PATH and must be on nsfs
  /// (fstatfs(2) f_type == NSFS_MAGIC) before it is reopened O_RDONLY|O_NONBLOCK, so a FIFO,
  /// device or FUSE file given as a namespace is refused at once instead of hanging the caller.
  /// Errors: kNotFound when the file is missing, kPermissionDenied without privileges,
  /// kInvalidArgument "open netns '<path>': not a network namespace (fifo)" (or "regular file",
  /// "directory", ...) when the file is not on nsfs, "...: not a network namespace" when it is
  /// another namespace type (ioctl NS_GET_NSTYPE), or when the name is empty / "." / "..".
  static absl::StatusOr<Netns> Open(absl::string_view name_or_path);

  /// The network namespace of the calling thread (/proc/thread-self/ns/net).
  static absl::StatusOr<Netns> Current();

  /// Creates a new, empty named namespace like `ip netns add NAME`: makes /var/run/netns a shared
  /// mount point if needed, then bind-mounts the namespace of a helper thread that called
  /// unshare(CLONE_NEWNET) onto /var/run/netns/NAME. The new namespace has only `lo` (down).
  /// Never changes the calling thread's namespace. Returns a handle on it.
  /// Errors: kAlreadyExists when NAME exists, kInvalidArgument for a name with '/' or "."/"..",
  /// kPermissionDenied without CAP_SYS_ADMIN.
  static absl::StatusOr<Netns> Create(absl::string_view name);

  /// Removes a named namespace like `ip netns del NAME`: lazily unmounts (MNT_DETACH) and unlinks
  /// /var/run/netns/NAME. The namespace itself lives on while processes or handles use it.
  /// Errors: kNotFound when NAME does not exist.
  static absl::Status Delete(absl::string_view name);

  /// "/var/run/netns/<name>" for a bare name, `name_or_path` itself when it contains a '/'.
  static std::string ResolvePath(absl::string_view name_or_path);

  Netns(Netns&&) noexcept = default;
  Netns& operator=(Netns&&) noexcept = default;
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;

  /// The open descriptor (valid while this object lives). Pass it to setns(2), or as
  /// IFLA_NET_NS_FD in netlink requests.
  int fd() const { return fd_.get(); }
  /// The path this handle was opened from (for messages).
  const std::string& path() const { return path_; }
  /// nsfs inode number: what `ls -iL /proc/PID/ns/net` and `readlink` ("net:[INODE]") show.
  ino_t inode() const { return ino_; }
  /// Device of the nsfs mount (part of the identity together with inode()).
  dev_t dev() const { return dev_; }

  /// Same namespace (same dev and inode), whatever path each handle was opened from.
  friend bool operator==(const Netns& a, const Netns& b) {
    return a.dev_ == b.dev_ && a.ino_ == b.ino_;
  }
  friend bool operator!=(const Netns& a, const Netns& b) { return !(a == b); }

  /// Another handle on the same namespace (dup(2) of the descriptor).
  absl::StatusOr<Netns> Dup() const;

 private:
  Netns(UniqueFd fd, std::string path, dev_t dev, ino_t ino)
      : fd_(std::move(fd)), path_(std::move(path)), dev_(dev), ino_(ino) {}
  static absl::StatusOr<Netns> FromFd(UniqueFd fd, std::string path);

  UniqueFd fd_;
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

/// Runs `fn` inside network namespace `ns` and returns fn's status. `fn` runs on a short-lived
/// helper std::thread that calls setns(ns.fd(), CLONE_NEWNET) first; the calling thread never
/// changes namespace (so it is safe in a multi-threaded daemon). The caller blocks until `fn`
/// returns. Anything `fn` opens there (netlink/packet/inet sockets, /proc/sys/net files) stays
/// bound to `ns` after it returns. `fn` must not rely on thread-local state of the caller.
/// Errors: fn's status; or kPermissionDenied / kInvalidArgument ("enter netns '<path>': ...")
/// when setns fails, in which case `fn` is not called.
absl::Status RunIn(const Netns& ns, absl::FunctionRef<absl::Status()> fn);

/// Like RunIn for a function returning absl::StatusOr<T>: returns fn's result, or the setns
/// error. Example: `auto v = RunInWithResult(ns, [&] { return GetSysctl(key); });`
template <typename Fn>
auto RunInWithResult(const Netns& ns, Fn&& fn) -> decltype(fn()) {
  std::optional<decltype(fn())> out;
  absl::Status st = RunIn(ns, [&]() -> absl::Status {
    out.emplace(fn());
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return *std::move(out);
}

}  // namespace sarena::nl

#endif  // LIBSARENA_NETLINK_NETNS_H_
