#include "libsarena/daemon/instance_lock.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/errno_status.h"

namespace sarena::daemon {
namespace {

// sockaddr_un for "@name": sun_path[0] = 0, then the name; the length counts exactly the name
// (abstract names are not NUL-terminated, unix(7)).
socklen_t AbstractAddress(absl::string_view name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  std::memcpy(addr->sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// The pid listening on `@name`, or 0 when the probe cannot tell (backlog full, raced exit).
pid_t HolderPid(absl::string_view name) {
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe) return 0;
  sockaddr_un addr;
  const socklen_t len = AbstractAddress(name, &addr);
  if (::connect(probe.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) return 0;
  ucred cred = {};
  socklen_t cl = sizeof(cred);
  if (::getsockopt(probe.get(), SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0) return 0;
  return cred.pid;
}

}  // namespace

absl::StatusOr<NetnsInstanceLock> NetnsInstanceLock::Acquire(absl::string_view name) {
  if (name.empty() || name.size() > sizeof(sockaddr_un::sun_path) - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid instance lock name '", name, "': 1..107 bytes"));
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoStatus(errno, "socket(AF_UNIX) for the instance lock");
  sockaddr_un addr;
  const socklen_t len = AbstractAddress(name, &addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    if (err != EADDRINUSE) return ErrnoStatus(err, absl::StrCat("bind @", name));
    const pid_t pid = HolderPid(name);
    return absl::FailedPreconditionError(absl::StrCat(
        "another sarenad", pid > 0 ? absl::StrCat(" (pid ", pid, ")") : std::string(),
        " already runs in this network namespace (it holds the abstract socket @", name,
        "): two daemons would fight over sarena_host, its address and the pod routes; stop it "
        "first, or run each node's sarenad in its own network namespace"));
  }
  // Listening lets a second instance's probe learn our pid (SO_PEERCRED); nobody accepts.
  if (::listen(fd.get(), 1) != 0) return ErrnoStatus(errno, absl::StrCat("listen @", name));
  return NetnsInstanceLock(std::move(fd), std::string(name));
}

}  // namespace sarena::daemon
