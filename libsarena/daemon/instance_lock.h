// One sarenad per network namespace. Two daemons in one netns would fight over sarena_host's
// address, the pod-CIDR route and the endpoint routes (each thinks the node is its own), so the
// second one must refuse to start before it touches anything.
#ifndef LIBSARENA_DAEMON_INSTANCE_LOCK_H_
#define LIBSARENA_DAEMON_INSTANCE_LOCK_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/base/unique_fd.h"

namespace sarena::daemon {

/// Holds the abstract AF_UNIX socket name `@<name>` (unix(7) "Abstract sockets"). Abstract
/// names belong to the network namespace of the socket, so holding one means: no other process
/// of this netns holds it. The kernel releases it when the process dies (kill -9 included), so
/// there is no stale lock file to clean up after a crash. Move-only; released on destruction.
class NetnsInstanceLock {
 public:
  /// The name sarenad holds.
  static constexpr absl::string_view kSarenadName = "sarena/sarenad";

  /// Binds and listens on `@name` in the calling thread's network namespace.
  /// Errors: kFailedPrecondition when another process holds it — the message names its pid
  /// (SO_PEERCRED of a probe connection) when the kernel tells it, and what to do; other errno
  /// failures of socket/bind/listen as ErrnoStatus codes. `name` must be 1..107 bytes
  /// (kInvalidArgument otherwise).
  static absl::StatusOr<NetnsInstanceLock> Acquire(absl::string_view name = kSarenadName);

  /// The held name, without the leading NUL ("sarena/sarenad").
  const std::string& name() const { return name_; }

 private:
  NetnsInstanceLock(UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  UniqueFd fd_;
  std::string name_;
};

}  // namespace sarena::daemon

#endif  // LIBSARENA_DAEMON_INSTANCE_LOCK_H_
